"""Clusters the engine deploys to: the ``Cluster`` protocol and its implementations."""

from oper8d.cluster.base import Cluster, Method, Obj, Propagation

__all__ = ["Cluster", "Method", "Obj", "Propagation"]
