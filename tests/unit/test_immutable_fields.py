"""The immutable fields of built-in kinds: the in-memory cluster refuses what the API
server refuses (``immutable_corpus``, held to a real server by
``tests/integration/test_immutable_differential.py``) and nothing else."""

from __future__ import annotations

import pytest
from immutable_corpus import VERBS, Case, cases, memory_verdict

from oper8d.kubeschema.immutable import immutable_changes, is_immutable_message


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("case", cases(), ids=lambda c: c.name)
def test_the_in_memory_cluster_gives_the_api_servers_verdict(case: Case, verb: str) -> None:
    refused, fields, message = memory_verdict(case, verb)
    assert refused == case.refused, message
    if refused:
        assert fields == case.fields or not case.fields, message
        assert is_immutable_message(message), message


def test_a_refusal_names_the_field_the_update_changed() -> None:
    old = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {"serviceName": "db", "replicas": 1, "volumeClaimTemplates": [{"a": 1}]},
    }
    new = {**old, "spec": {**old["spec"], "replicas": 3, "volumeClaimTemplates": [{"a": 2}]}}
    changes = immutable_changes(old, new)
    assert [(c.field, c.reported) for c in changes] == [("spec.volumeClaimTemplates", "spec")]


def test_kinds_without_rules_and_a_kind_change_have_no_immutable_fields() -> None:
    cm = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"a": 1}}
    assert immutable_changes(cm, {**cm, "spec": {"a": 2}}) == []
