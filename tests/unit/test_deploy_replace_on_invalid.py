"""A server-side apply the API server refuses as invalid can fall back to a PUT, when asked."""

from __future__ import annotations

import pytest

from oper8d.cluster.memory import MemoryCluster
from oper8d.engine.deploy import DeployManager
from oper8d.errors import ClusterError

CR = {
    "apiVersion": "demo.oper8d.io/v1",
    "kind": "Thing",
    "metadata": {"name": "t", "namespace": "ns", "uid": "u-1"},
}


class RefusesApply(MemoryCluster):
    """A cluster whose server-side apply answers 422, as for a field SSA cannot merge."""

    def apply(self, obj, *, field_manager, method="apply", force=True):  # type: ignore[override]
        if method == "apply":
            raise ClusterError("the object is invalid", status=422)
        return super().apply(obj, field_manager=field_manager, method=method, force=force)


def configmap() -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}


def test_a_refused_apply_is_an_error_by_default() -> None:
    deployer = DeployManager(RefusesApply(), CR, field_manager="op")
    with pytest.raises(ClusterError) as info:
        deployer.apply(deployer.prepare(configmap(), "c.cm", "c"))
    assert info.value.status == 422


def test_a_refused_apply_is_replaced_when_the_fallback_is_on() -> None:
    cluster = RefusesApply()
    deployer = DeployManager(cluster, CR, field_manager="op", replace_on_invalid=True)
    live, written = deployer.apply(deployer.prepare(configmap(), "c.cm", "c"))
    assert written and live["data"] == {"a": "1"}
    assert cluster.get("v1", "ConfigMap", "c", "ns")["data"] == {"a": "1"}
