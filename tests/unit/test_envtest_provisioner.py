"""The test environment's volume provisioner decides from the claim alone: which claims it
makes a volume for, and what that volume says (its integration test is in
tests/integration/test_envtest.py)."""

from __future__ import annotations

from typing import Any

from oper8d.envtest.provisioner import (
    PROVISIONED_BY,
    PROVISIONER,
    SELECTED_NODE,
    STORAGE_PROVISIONER,
    storage_class,
    to_delete,
    volume_for,
)


def claim(**annotations: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "data-db-0",
            "namespace": "shop",
            "uid": "1234",
            "annotations": {STORAGE_PROVISIONER: PROVISIONER, SELECTED_NODE: "kwok-node-1"}
            | annotations,
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "3Gi"}},
            "storageClassName": "standard",
        },
    }


def test_the_default_class_waits_for_the_first_consumer() -> None:
    sc = storage_class()
    assert sc["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}
    assert sc["provisioner"] == PROVISIONER
    assert sc["volumeBindingMode"] == "WaitForFirstConsumer"


def test_a_claim_handed_to_us_gets_a_volume_of_its_size_on_the_chosen_node() -> None:
    volume = volume_for(claim())
    assert volume is not None
    assert volume["metadata"] == {"name": "pvc-1234", "annotations": {PROVISIONED_BY: PROVISIONER}}
    spec = volume["spec"]
    assert spec["capacity"] == {"storage": "3Gi"}
    assert spec["claimRef"] == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": "shop",
        "name": "data-db-0",
        "uid": "1234",
    }
    assert spec["persistentVolumeReclaimPolicy"] == "Delete"
    assert spec["storageClassName"] == "standard"
    (term,) = spec["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["kwok-node-1"]}
    ]


def test_a_claim_gets_no_volume_before_the_scheduler_chose_a_node() -> None:
    pending = claim()
    del pending["metadata"]["annotations"][SELECTED_NODE]
    assert volume_for(pending) is None


def test_a_claim_of_another_provisioner_bound_or_deleted_gets_no_volume() -> None:
    assert volume_for(claim(**{STORAGE_PROVISIONER: "ebs.csi.aws.com"})) is None
    bound = claim()
    bound["spec"]["volumeName"] = "pvc-1234"
    assert volume_for(bound) is None
    deleting = claim()
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert volume_for(deleting) is None


def test_only_our_released_volumes_are_deleted() -> None:
    volume = volume_for(claim())
    assert volume is not None
    assert not to_delete(volume | {"status": {"phase": "Bound"}})
    assert to_delete(volume | {"status": {"phase": "Released"}})
    theirs = volume | {"status": {"phase": "Released"}, "metadata": {"name": "pv-1"}}
    assert not to_delete(theirs)
    retained = {**volume, "status": {"phase": "Released"}}
    retained["spec"] = volume["spec"] | {"persistentVolumeReclaimPolicy": "Retain"}
    assert not to_delete(retained)
