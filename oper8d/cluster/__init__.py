"""Clusters the engine deploys to: the ``Cluster`` protocol and its implementations."""

from oper8d.cluster.base import Cluster, Method, Propagation
from oper8d.objects import Obj

__all__ = ["Cluster", "Method", "Obj", "Propagation"]
