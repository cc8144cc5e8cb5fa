"""The test environment's volume provisioner, so that StatefulSets with volumeClaimTemplates
bind and become Ready.

It installs a default StorageClass (``standard``, volumeBindingMode WaitForFirstConsumer)
whose provisioner is this program, and follows the protocol of Kubernetes' external
provisioners: the scheduler picks a node for the first pod that uses a claim and writes it
on the claim (``volume.kubernetes.io/selected-node``), kube-controller-manager's
PersistentVolume controller hands the claim to the class's provisioner
(``volume.kubernetes.io/storage-provisioner``), we create a hostPath PersistentVolume of the
requested size pinned to that node and pre-bound to the claim (``claimRef`` with its uid),
the PV controller binds the two and the scheduler binds the pod. A volume released by a
deleted claim (reclaimPolicy Delete) is deleted. There is no kubelet, so nothing is ever
mounted and the path is never created.

``python -m oper8d.envtest.provisioner --kubeconfig PATH --ready-file PATH`` runs it;
``Environment`` starts it after kube-controller-manager and stops it with the rest.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

PROVISIONER = "envtest.oper8d.io/hostpath"
STORAGE_CLASS = "standard"
#: set by the scheduler (WaitForFirstConsumer): the node of the claim's first pod
SELECTED_NODE = "volume.kubernetes.io/selected-node"
#: set by the PV controller on a claim it leaves to an external provisioner
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
#: on a PV: who provisioned it; the PV controller then leaves its deletion to us
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
HOST_PATH_ROOT = "/var/lib/oper8d-envtest/volumes"

Obj = dict[str, Any]
log = logging.getLogger("oper8d.envtest.provisioner")


def storage_class() -> Obj:
    """The default StorageClass: WaitForFirstConsumer, so a volume is made for the node
    the scheduler chose for the claim's pod (as node-local provisioners do), and no
    volume is made for a claim no pod uses."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": STORAGE_CLASS,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def volume_for(claim: Obj) -> Obj | None:
    """The PersistentVolume to create for ``claim``, or None while it is not ours to
    provision (not handed to us, already bound, or no node chosen yet)."""
    meta = claim.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    spec = claim.get("spec") or {}
    node = annotations.get(SELECTED_NODE)
    if annotations.get(STORAGE_PROVISIONER) != PROVISIONER or spec.get("volumeName") or not node:
        return None
    if meta.get("deletionTimestamp"):
        return None
    name = f"pvc-{meta['uid']}"  # the external provisioners' convention: one PV per claim
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {PROVISIONED_BY: PROVISIONER}},
        "spec": {
            "capacity": {"storage": spec["resources"]["requests"]["storage"]},
            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "storageClassName": spec.get("storageClassName") or STORAGE_CLASS,
            "persistentVolumeReclaimPolicy": "Delete",
            "hostPath": {"path": f"{HOST_PATH_ROOT}/{name}", "type": "DirectoryOrCreate"},
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
            },
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/hostname",
                                    "operator": "In",
                                    "values": [node],
                                }
                            ]
                        }
                    ]
                }
            },
        },
    }


def to_delete(volume: Obj) -> bool:
    """True for a volume we provisioned whose claim is gone (phase Released)."""
    annotations = (volume.get("metadata") or {}).get("annotations") or {}
    spec = volume.get("spec") or {}
    return (
        annotations.get(PROVISIONED_BY) == PROVISIONER
        and spec.get("persistentVolumeReclaimPolicy") == "Delete"
        and (volume.get("status") or {}).get("phase") == "Released"
    )


class Provisioner:
    """Follows claims and volumes (list, then watch from that list's resourceVersion;
    after any error, list again) and acts on each object it sees."""

    def __init__(self, api_client: ApiClient, retry_delay: float = 1.0) -> None:
        from kubernetes import client

        self.core = client.CoreV1Api(api_client)
        self.storage = client.StorageV1Api(api_client)
        self.retry_delay = retry_delay
        self.stop = threading.Event()

    def install(self) -> None:
        """Create the default StorageClass unless it exists."""
        from kubernetes.client.exceptions import ApiException

        try:
            self.storage.create_storage_class(storage_class())  # type: ignore[arg-type]  # a dict serialises too
        except ApiException as e:
            if e.status != 409:
                raise

    def provision(self, claim: Obj) -> None:
        volume = volume_for(claim)
        if volume is None:
            return
        from kubernetes.client.exceptions import ApiException

        try:
            self.core.create_persistent_volume(volume)  # type: ignore[arg-type]  # a dict serialises too
        except ApiException as e:
            if e.status != 409:  # made on an earlier event
                raise
            return
        meta = claim["metadata"]
        log.info(
            "created %s for %s/%s on %s",
            volume["metadata"]["name"],
            meta["namespace"],
            meta["name"],
            meta["annotations"][SELECTED_NODE],
        )

    def reclaim(self, volume: Obj) -> None:
        if not to_delete(volume):
            return
        from kubernetes.client.exceptions import ApiException

        try:
            self.core.delete_persistent_volume(volume["metadata"]["name"])
        except ApiException as e:
            if e.status != 404:
                raise
            return
        log.info("deleted released %s", volume["metadata"]["name"])

    def follow(
        self, list_fn: Callable[..., Any], handle: Callable[[Obj], None], listed: threading.Event
    ) -> None:
        """Hand every object ``list_fn`` lists, then every added or modified one, to
        ``handle`` until ``stop`` is set; ``listed`` is set after the first list."""
        from kubernetes import watch

        version = None
        while not self.stop.is_set():
            try:
                if version is None:
                    listing = json.loads(list_fn(_preload_content=False).data)
                    for item in listing["items"]:
                        handle(item)
                    version = listing["metadata"]["resourceVersion"]
                    listed.set()
                for event in watch.Watch().stream(
                    list_fn, resource_version=version, timeout_seconds=60
                ):
                    obj = event["raw_object"]
                    version = obj["metadata"]["resourceVersion"]
                    if event["type"] in ("ADDED", "MODIFIED"):
                        handle(obj)
            except Exception as e:  # the apiserver restarting, or an expired watch
                log.warning("%s: %s; listing again", list_fn.__name__, e)
                version = None
                self.stop.wait(self.retry_delay)

    def run(self, ready_file: Path | None = None) -> None:
        """Install the class, then follow claims and volumes until ``stop`` is set;
        ``ready_file`` is written once both have been listed."""
        self.install()
        follows = (
            (self.core.list_persistent_volume_claim_for_all_namespaces, self.provision),
            (self.core.list_persistent_volume, self.reclaim),
        )
        listed = [threading.Event() for _ in follows]
        threads = [
            threading.Thread(target=self.follow, args=(*args, done), daemon=True)
            for args, done in zip(follows, listed, strict=True)
        ]
        for thread in threads:
            thread.start()
        for done in listed:
            done.wait()
        if ready_file is not None:
            ready_file.write_text("ready\n")
        for thread in threads:
            thread.join()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m oper8d.envtest.provisioner")
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--ready-file", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    from kubernetes import config

    api_client = config.new_client_from_config(config_file=str(args.kubeconfig))
    Provisioner(api_client).run(args.ready_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
