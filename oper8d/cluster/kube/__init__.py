"""The real client: the ``Cluster`` protocol against a Kubernetes API server.

``cluster.py`` (``KubeCluster``), ``discovery.py`` (kind -> REST resource) and
``transport.py`` (JSON requests and watch streams over the ``kubernetes`` client's
connection pool). The only package of oper8d.cluster that imports ``kubernetes``.
"""

from oper8d.cluster.kube.cluster import MUTATING_VERBS, KubeCluster

__all__ = ["MUTATING_VERBS", "KubeCluster"]
