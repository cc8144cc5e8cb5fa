"""CRD ``x-kubernetes-validations`` (CEL) checked offline: the rules as the apiserver runs
them (create, update with ``oldSelf``, ratcheting), the messages it gives, the Kubernetes
library functions, and rules that cannot be evaluated reported as unchecked, never
passed or failed in silence. The verdicts are held to the real apiserver's by
tests/integration/test_cel_differential.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from bundles import write_bundle
from click.testing import CliRunner

from oper8d.cli.main import main
from oper8d.cluster.memory import MemoryCluster
from oper8d.errors import ClusterError
from oper8d.kubeschema import KubeSchemas
from oper8d.kubeschema.cel import CelValidator, uses_old_self


def rules(*items: str | dict[str, Any], **node: Any) -> dict[str, Any]:
    listed = [{"rule": r} if isinstance(r, str) else r for r in items]
    return {**node, "x-kubernetes-validations": listed}


def spec_schema(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def check(schema: dict[str, Any], value: Any, old: Any = None) -> tuple[list[str], list[str]]:
    cel = CelValidator()
    report = cel.check(schema, value) if old is None else cel.check(schema, value, old)
    errors = [f"{'.'.join(map(str, p))}: {m}" for p, m in report.errors]
    return errors, list(report.unchecked)


INT = {"type": "integer"}
STR = {"type": "string"}


def test_a_broken_rule_names_the_field_and_gives_its_message() -> None:
    schema = rules(
        {"rule": "self.min <= self.max", "message": "min must not exceed max"},
        type="object",
        properties={"min": INT, "max": INT},
    )
    assert check(schema, {"min": 1, "max": 2}) == ([], [])
    errors, _ = check(schema, {"min": 3, "max": 2})
    assert errors == [': Invalid value: "object": min must not exceed max']


def test_message_expression_reason_and_field_path_shape_the_error() -> None:
    schema = spec_schema(
        spec=rules(
            {
                "rule": "self.replicas <= 5",
                "messageExpression": "'at most 5 replicas, got ' + string(self.replicas)",
                "fieldPath": ".replicas",
                "reason": "FieldValueForbidden",
            },
            {"rule": "self.replicas > 0"},  # no message: the apiserver's "failed rule"
            type="object",
            properties={"replicas": INT},
        )
    )
    errors, _ = check(schema, {"spec": {"replicas": 9}})
    assert errors == ["spec.replicas: Forbidden: at most 5 replicas, got 9"]
    errors, _ = check(schema, {"spec": {"replicas": 0}})
    assert errors == ['spec: Invalid value: "object": failed rule: self.replicas > 0']


def test_a_message_expression_that_fails_falls_back_to_the_message() -> None:
    schema = rules(
        {"rule": "false", "message": "plain", "messageExpression": "self.nothere"},
        type="object",
    )
    assert check(schema, {})[0] == [': Invalid value: "object": plain']


def test_a_runtime_error_fails_the_rule_as_on_the_apiserver() -> None:
    """``self.name`` of an object without it: "no such key", a refusal live too."""
    schema = spec_schema(
        spec=rules("self.name.size() > 0", type="object", properties={"name": STR})
    )
    errors, unchecked = check(schema, {"spec": {}})
    assert len(errors) == 1 and "failed rule: self.name.size() > 0" in errors[0]
    assert unchecked == []


def test_transition_rules_run_on_update_only() -> None:
    schema = spec_schema(
        spec=rules(
            {"rule": "self.size >= oldSelf.size", "message": "size may only grow"},
            type="object",
            properties={"size": INT},
        )
    )
    assert check(schema, {"spec": {"size": 1}}) == ([], [])  # a create: no oldSelf
    assert check(schema, {"spec": {"size": 3}}, {"spec": {"size": 2}}) == ([], [])
    errors, _ = check(schema, {"spec": {"size": 1}}, {"spec": {"size": 2}})
    assert errors == ['spec: Invalid value: "object": size may only grow']


def test_an_unchanged_value_keeps_passing_on_update() -> None:
    """Ratcheting: a value stored before the rule existed does not block other updates."""
    schema = spec_schema(
        a=rules("self.startsWith('x')", **STR),
        b=INT,
    )
    assert check(schema, {"a": "bad", "b": 2}, {"a": "bad", "b": 1}) == ([], [])
    assert check(schema, {"a": "worse", "b": 1}, {"a": "bad", "b": 1})[0] != []


def test_map_list_items_correlate_by_key_and_other_lists_do_not() -> None:
    item = rules(
        {"rule": "self.port == oldSelf.port", "message": "immutable"},
        type="object",
        properties={"name": STR, "port": INT},
    )
    keyed = {
        "type": "array",
        "items": item,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
    }
    schema = spec_schema(ports=keyed, plain={"type": "array", "items": item})
    old = {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}
    moved = {"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 1}]}
    assert check(schema, moved, old) == ([], [])
    errors, _ = check(schema, {"ports": [{"name": "a", "port": 5}]}, old)
    assert errors == ['ports.0: Invalid value: "object": immutable']
    plain_old = {"plain": [{"name": "a", "port": 1}]}
    assert check(schema, {"plain": [{"name": "a", "port": 5}]}, plain_old) == ([], [])


def test_defaults_are_seen_by_the_rules() -> None:
    schema = spec_schema(
        spec=rules(
            "self.replicas >= 1", type="object", properties={"replicas": {**INT, "default": 1}}
        )
    )
    assert check(schema, {"spec": {}}) == ([], [])


@pytest.mark.parametrize(
    ("rule", "value", "ok"),
    [
        ("self.name.lowerAscii() == 'abc'", {"name": "ABC"}, True),
        ("self.name.split('-').size() == 2", {"name": "a-b"}, True),
        ("self.?nick.orValue('none') == 'none'", {"name": "a"}, True),
        ("self.tags.all(t, t.matches('^[a-z]+$'))", {"tags": ["ok", "Bad"]}, False),
        ("self.tags.isSorted()", {"tags": ["a", "b"]}, True),
        ("self.sizes.sum() <= 10 && self.sizes.max() == 7", {"sizes": [3, 7]}, True),
        ("self.name.find('[0-9]+') == '42'", {"name": "ab42c"}, True),
        ("self.name.findAll('[a-z]').size() == 2", {"name": "a1b2"}, True),
        ("quantity(self.memory).compareTo(quantity('1Gi')) <= 0", {"memory": "1024Mi"}, True),
        ("quantity(self.memory).isLessThan(quantity('1Gi'))", {"memory": "2G"}, False),
        ("quantity(self.memory) == quantity('1000M')", {"memory": "1G"}, True),
        ("isQuantity(self.memory)", {"memory": "1.5Gi"}, True),
        ("isQuantity(self.memory)", {"memory": "1.5 Gi"}, False),
        ("quantity(self.memory).add(1).asInteger() == 1001", {"memory": "1k"}, True),
        (
            "isURL(self.endpoint) && url(self.endpoint).getHost() == 'a.io:8080'",
            {"endpoint": "https://a.io:8080/x?y=1"},
            True,
        ),
        ("url(self.endpoint).getScheme() == 'https'", {"endpoint": "http://a.io"}, False),
    ],
)
def test_the_kubernetes_library_functions(rule: str, value: dict[str, Any], ok: bool) -> None:
    props = {
        "name": STR,
        "nick": STR,
        "memory": STR,
        "endpoint": STR,
        "tags": {"type": "array", "items": STR},
        "sizes": {"type": "array", "items": INT},
    }
    errors, unchecked = check(rules(rule, type="object", properties=props), value)
    assert unchecked == []
    assert (errors == []) is ok, errors


@pytest.mark.parametrize(
    ("rule", "why"),
    [
        ("ip(self.addr).family() == 4", "does not compile here"),
        ("cidr('10.0.0.0/8').containsIP(self.addr)", "does not compile here"),
        ("self.when > timestamp('2020-01-01T00:00:00Z')", "date or duration field (when)"),
        ("self.items.all(a, self.items.all(b, a + b >= 0))", "Iteration budget"),
        ("self.items.indexOf(2) >= 0", "indexOf"),
    ],
)
def test_a_rule_that_cannot_be_evaluated_is_unchecked_not_passed(rule: str, why: str) -> None:
    props = {
        "addr": STR,
        "when": {"type": "string", "format": "date-time"},
        "items": {"type": "array", "items": INT},
    }
    value = {"addr": "10.0.0.1", "when": "2024-01-01T00:00:00Z", "items": list(range(200))}
    errors, unchecked = check(rules(rule, type="object", properties=props), value)
    assert errors == []
    assert len(unchecked) == 1 and rule in unchecked[0] and why in unchecked[0], unchecked


def test_old_self_is_found_outside_string_literals_only() -> None:
    assert uses_old_self("self.a == oldSelf.a")
    assert not uses_old_self("self.a == 'oldSelf'")


# -- where the rules run ------------------------------------------------------------------
def widget_crd() -> dict[str, Any]:
    spec = rules(
        {"rule": "self.size <= 10", "message": "size at most 10", "fieldPath": ".size"},
        {"rule": "self.size >= oldSelf.size", "message": "size may only grow"},
        type="object",
        properties={"size": INT},
    )
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.test.io"},
        "spec": {
            "group": "test.io",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [version],
        },
    }


def widget(size: int) -> dict[str, Any]:
    meta = {"name": "w", "namespace": "default"}
    return {"apiVersion": "test.io/v1", "kind": "Widget", "metadata": meta, "spec": {"size": size}}


def test_kube_schemas_check_rules_on_create_and_transition_rules_on_update() -> None:
    schemas = KubeSchemas.builtin().with_crds([widget_crd()])
    assert schemas.validate(widget(3)).ok
    assert [str(f) for f in schemas.validate(widget(11)).errors] == [
        'spec.size: Invalid value: "object": size at most 10'
    ]
    shrunk = schemas.validate(widget(2), old=widget(3))
    assert [str(f) for f in shrunk.errors] == ['spec: Invalid value: "object": size may only grow']


def test_the_in_memory_cluster_refuses_what_the_rules_refuse() -> None:
    cluster = MemoryCluster(schemas=KubeSchemas.builtin().with_crds([widget_crd()]))
    cluster.register_kind("test.io/v1", "Widget", namespaced=True)
    with pytest.raises(ClusterError, match="size at most 10"):
        cluster.create(widget(11))
    cluster.create(widget(3))
    with pytest.raises(ClusterError, match="size may only grow"):
        cluster.update(widget(2))
    assert cluster.update(widget(4))["spec"] == {"size": 4}


def test_validate_cr_reports_a_broken_rule_of_the_bundle_schema_at_its_line(
    tmp_path: Path,
) -> None:
    schema = rules(
        {"rule": "self.min <= self.max", "message": "min must not exceed max", "fieldPath": ".min"},
        "self.name.matches('^[a-z]+$') && ip('10.0.0.1').family() == 4",
        type="object",
        properties={"min": INT, "max": INT, "name": STR},
    )
    bundle = write_bundle(tmp_path / "b", "components: []", schema=schema)
    cr = tmp_path / "cr.yaml"
    body = {"apiVersion": "demo.oper8d.io/v1alpha1", "kind": "Demo", "metadata": {"name": "d"}}
    cr.write_text(yaml.safe_dump({**body, "spec": {"min": 3, "max": 2, "name": "x"}}))
    result = CliRunner().invoke(main, ["validate", str(bundle), "--cr", str(cr)])
    assert result.exit_code == 1, result.output
    assert f"{cr}:7:8: spec.min: the API server would refuse the CR: " in result.stderr
    assert "min must not exceed max" in result.stderr
    assert "warning:" in result.stderr and "not checked: does not compile here" in result.stderr
    cr.write_text(yaml.safe_dump({**body, "spec": {"min": 1, "max": 2, "name": "x"}}))
    result = CliRunner().invoke(main, ["validate", str(bundle), "--cr", str(cr)])
    assert result.exit_code == 0, result.output
    assert 'rule "self.name.matches' in result.stderr  # unchecked, said


def test_only_a_comparison_that_may_reach_a_set_or_map_list_goes_unchecked() -> None:
    ports = {"type": "array", "items": STR, "x-kubernetes-list-type": "set"}
    schema = rules(
        {"rule": "self.mode != 'legacy'", "message": "no legacy"},
        "self.ports == ['a', 'b']",
        type="object",
        properties={"mode": STR, "ports": ports},
    )
    errors, unchecked = check(schema, {"mode": "legacy", "ports": ["b", "a"]})
    assert errors == [': Invalid value: "object": no legacy']
    assert len(unchecked) == 1 and "set or map list (ports)" in unchecked[0]


def test_optional_old_self_runs_on_create_with_no_old_value() -> None:
    rule = {
        "rule": "!oldSelf.hasValue() || self >= oldSelf.value()",
        "optionalOldSelf": True,
        "messageExpression": "'not below ' + string(oldSelf.orValue(0))",
    }
    create_only = {"rule": "oldSelf.hasValue() || self < 100", "optionalOldSelf": True}
    schema = spec_schema(size=rules(rule, create_only, **INT))
    assert check(schema, {"size": 5}) == ([], [])
    assert check(schema, {"size": 200})[0] == [
        'size: Invalid value: "integer": failed rule: oldSelf.hasValue() || self < 100'
    ]
    assert check(schema, {"size": 200}, {"size": 5}) == ([], [])
    assert check(schema, {"size": 4}, {"size": 5})[0] == [
        'size: Invalid value: "integer": not below 5'
    ]
