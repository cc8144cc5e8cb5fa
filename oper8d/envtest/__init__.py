"""A real Kubernetes control plane for integration tests, like controller-runtime's envtest.

``Environment`` starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
kwok (which fakes Nodes and drives Pods to Running/Ready) on loopback ports, from the
binaries that ``testenv/build.sh`` builds from Go modules, and a volume provisioner for its
default StorageClass (``provisioner``), so StatefulSets' claims bind::

    from oper8d.envtest import Environment

    with Environment() as env:
        with env.api_client() as api:
            ...

``python -m oper8d.envtest`` starts one for manual testing.
"""

from ._process import StartError
from .build import BuildError, build
from .environment import Environment

__all__ = ["BuildError", "Environment", "StartError", "build"]
