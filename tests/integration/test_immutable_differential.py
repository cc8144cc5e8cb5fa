"""Differential test: the in-memory cluster refuses the updates of immutable fields that
a real kube-apiserver refuses, and accepts the others (no false alarm).

Every case of ``tests/unit/immutable_corpus.py`` (each kind of ``kubeschema.immutable``'s
table, refused and allowed changes) is created on the apiserver by server-side apply
(its status written through the status subresource when the case has one), then updated
with ``dryRun=All`` twice: by server-side apply of the client's changed object and by a
PUT of the changed stored object. Each verdict (accepted or refused) must equal the
in-memory cluster's and the corpus's, and a refusal must name the same fields (the
Status causes).
"""

from __future__ import annotations

import copy
import json
import ssl
import urllib.error
import urllib.request
from typing import Any

import pytest
from apiserver import collection

from oper8d.envtest import Environment
from oper8d.envtest.provisioner import STORAGE_CLASS
from oper8d.kubeschema import KubeSchemas
from oper8d.kubeschema.immutable import is_immutable_message
from tests.unit.immutable_corpus import (
    VERBS,
    Case,
    cases,
    causes_fields,
    memory_verdict,
    update_body,
)

pytestmark = pytest.mark.integration

_SCHEMAS = KubeSchemas.builtin()
#: the test environment's default StorageClass (``oper8d.envtest``'s volume provisioner)
DEFAULT_CLASS = STORAGE_CLASS

_EXPANDABLE = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "expandable"},
    "provisioner": "example.com/none",
    "allowVolumeExpansion": True,
}


def _request(
    env: Environment,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{env.server_url}{path}", data=data, method=method)
    request.add_header("Authorization", f"Bearer {env.admin_token}")
    request.add_header("Content-Type", content_type)
    context = ssl.create_default_context(cafile=str(env.ca_file))
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as e:
        text = e.read().decode()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, {"message": text}


def _path(obj: dict[str, Any]) -> str:
    return f"{collection(obj, _SCHEMAS)}/{obj['metadata']['name']}"


def _apply(env: Environment, obj: dict[str, Any], query: str = "") -> tuple[int, Any]:
    return _request(
        env,
        "PATCH",
        f"{_path(obj)}?fieldManager=test&force=true{query}",
        obj,
        "application/apply-patch+yaml",
    )


def _real_verdict(env: Environment, case: Case, verb: str) -> tuple[bool, tuple[str, ...], str]:
    status, stored = _apply(env, copy.deepcopy(case.old))
    assert status < 300, stored
    if case.status is not None:
        # (no resourceVersion: the volume controller may have written the status since)
        meta = {k: v for k, v in stored["metadata"].items() if k != "resourceVersion"}
        body = {**stored, "metadata": meta, "status": copy.deepcopy(case.status)}
        status, stored = _request(env, "PUT", f"{_path(case.old)}/status", body)
        assert status < 300, stored
    body = update_body(case, stored, verb)
    if verb == "apply":
        status, answer = _apply(env, body, "&dryRun=All")
    else:
        status, answer = _request(env, "PUT", f"{_path(body)}?dryRun=All", body)
    if status < 300:
        return False, (), ""
    details = answer.get("details") or {}
    causes = tuple((c.get("field", ""), c.get("message", "")) for c in details.get("causes") or [])
    return True, causes_fields(causes), str(answer.get("message"))


@pytest.fixture(scope="module")
def created(envtest: Environment) -> dict[str, dict[str, tuple[bool, tuple[str, ...], str]]]:
    """The apiserver's verdict on each case and verb (objects created once per case)."""
    status, answer = _apply(envtest, copy.deepcopy(_EXPANDABLE))
    assert status < 300, answer
    # the test environment's default StorageClass (its volume provisioner's) would fill a
    # claim's storageClassName at create, and a claim whose class is set once from none
    # (a case here) could not be made: it stops being the default while the claims are made
    _set_default_class(envtest, "false")
    try:
        verdicts: dict[str, dict[str, tuple[bool, tuple[str, ...], str]]] = {}
        for case in cases():
            verdicts[case.name] = {verb: _real_verdict(envtest, case, verb) for verb in VERBS}
    finally:
        _set_default_class(envtest, "true")
    return verdicts


def _set_default_class(env: Environment, value: str) -> None:
    body = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": DEFAULT_CLASS,
            "annotations": {"storageclass.kubernetes.io/is-default-class": value},
        },
    }
    status, answer = _request(
        env,
        "PATCH",
        f"/apis/storage.k8s.io/v1/storageclasses/{DEFAULT_CLASS}",
        body,
        "application/merge-patch+json",
    )
    assert status < 300, answer


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("case", cases(), ids=lambda c: c.name)
def test_the_in_memory_cluster_agrees_with_the_apiserver(
    created: dict[str, dict[str, tuple[bool, tuple[str, ...], str]]], case: Case, verb: str
) -> None:
    real_refused, real_fields, real_message = created[case.name][verb]
    refused, fields, message = memory_verdict(case, verb)
    assert real_refused == case.refused, f"the corpus is wrong: {real_message}"
    assert refused == real_refused, f"apiserver: {real_message!r}; in-memory: {message!r}"
    if refused:
        assert fields == real_fields, (real_message, message)
        assert is_immutable_message(real_message), real_message
