"""A CR author cannot make the operator apply more than the bundle declares.

Values printed into text templates land as scalars (``template.slots``), and every rendered
object is checked against the resource's declared kinds and namespace before anything of
its component is applied (``engine.declared``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from bundles import demo_cr, write_bundle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oper8d.bundle import load_bundle
from oper8d.errors import BundleError, ConfigError
from oper8d.testing import load_cr, run_offline

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "operators"
STATEFUL = EXAMPLES / "stateful"
STATEFUL_CR = STATEFUL / "samples" / "notes.yaml"

#: what an attacker with only "create CR" rights wrote into the stateful example's storage
INJECTION = (
    "1Gi\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n"
    "metadata: {name: pwned}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole,"
    " name: cluster-admin}\nsubjects: [{kind: ServiceAccount, name: default, namespace: default}]"
    "\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: stolen, namespace: kube-system}\n"
)


def identity(obj: dict[str, Any]) -> tuple[str, str, str | None, str]:
    meta = obj["metadata"]
    return obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"]


def shape(value: Any) -> Any:
    """The key structure of a value: mappings' keys and lists' lengths, scalars as one."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return "scalar"


def from_text_templates(run: Any) -> dict[tuple[str, str, str | None, str], dict[str, Any]]:
    """The applied objects the stateful example renders from its text template."""
    return {
        identity(obj): obj
        for name, obj in run.applied.items()
        if name.startswith("database.manifests")
    }


def stateful_cr(**spec: Any) -> dict[str, Any]:
    cr = load_cr(STATEFUL_CR)
    cr = copy.deepcopy(cr)
    database = dict(cr["spec"].get("database") or {})
    for key in ("storage", "image"):
        if key in spec:
            database[key] = spec.pop(key)
    cr["spec"] = {**cr["spec"], **spec, "database": database}
    return cr


def test_injected_documents_in_a_cr_value_are_one_scalar_and_apply_nothing_else() -> None:
    run = run_offline(STATEFUL, stateful_cr(storage=INJECTION))
    applied = {identity(o) for o in run.applied.values()}
    assert not any(kind == "ClusterRoleBinding" for _a, kind, _n, _m in applied)
    assert not any(ns == "kube-system" for _a, _k, ns, _m in applied)
    # the whole value is the storage quantity, which Kubernetes' schema refuses: nothing
    # of the database component is applied, and the CR says why
    assert from_text_templates(run) == {}
    assert run.fatal_error is not None
    message = run.fatal_error.message
    assert "resource 'database.manifests-statefulset' renders StatefulSet notes-db" in message
    assert "spec.volumeClaimTemplates[0].spec.resources.requests[storage]" in message


@settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    storage=st.text(max_size=60),
    image=st.text(max_size=60),
    version=st.text(max_size=30),
)
def test_any_string_in_any_cr_field_keeps_the_text_templates_structure(
    storage: str, image: str, version: str
) -> None:
    benign_run = run_offline(STATEFUL, stateful_cr())
    expected = from_text_templates(benign_run)
    run = run_offline(STATEFUL, stateful_cr(storage=storage, image=image, version=version))
    objects = from_text_templates(run)
    # a value the engine refuses (the schema, an invalid name) may stop the rollout; what
    # it applied is still only what the bundle declares, shaped as the template is
    assert set(objects) <= set(expected)
    for key, obj in objects.items():
        assert shape(obj) == shape(expected[key])


def test_a_document_of_a_kind_the_resource_does_not_declare_is_refused(tmp_path: Path) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        "components:\n"
        "  - name: extras\n"
        "    resources:\n"
        "      - name: docs\n"
        "        template: templates/extras.yaml\n",
        files={
            "templates/extras.yaml": (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n"
                "{% if spec.more is defined %}apiVersion: v1\nkind: {{ spec.more }}\n"
                "metadata: {name: b}{% endif %}\n"
            )
        },
    )
    run = run_offline(bundle, demo_cr(more="Secret"))
    assert run.fatal_error is not None
    assert "rendered v1 Secret 'b', a kind it does not declare" in run.fatal_error.message
    assert not [o for o in run.applied.values() if o["kind"] in ("ConfigMap", "Secret")]
    assert run.condition("Ready")["status"] == "False"


def test_a_computed_kind_must_be_declared_and_then_is_allowed(tmp_path: Path) -> None:
    controller = (
        "components:\n"
        "  - name: extras\n"
        "    resources:\n"
        "      - name: thing\n"
        "{declare}"
        "        object:\n"
        "          apiVersion: v1\n"
        '          kind: "{{ spec.kind }}"\n'
        "          metadata: {name: x}\n"
    )
    with pytest.raises(BundleError, match="declare the kinds it may render"):
        load_bundle(write_bundle(tmp_path / "a", controller.replace("{declare}", "")))
    declared = write_bundle(
        tmp_path / "b",
        controller.replace("{declare}", "        kinds: [{apiVersion: v1, kind: ConfigMap}]\n"),
    )
    ok = run_offline(declared, demo_cr(kind="ConfigMap"))
    assert ok.fatal_error is None
    refused = run_offline(declared, demo_cr(kind="ServiceAccount"))
    assert refused.fatal_error is not None
    assert "a kind it does not declare (declared: v1 ConfigMap)" in refused.fatal_error.message


def test_a_cr_value_cannot_move_an_object_to_another_namespace(tmp_path: Path) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        "components:\n"
        "  - name: a\n"
        "    resources:\n"
        "      - name: cm\n"
        "        object:\n"
        "          apiVersion: v1\n"
        "          kind: ConfigMap\n"
        '          metadata: {name: x, namespace: "{{ spec.ns }}"}\n',
    )
    run = run_offline(bundle, demo_cr(ns="kube-system"))
    assert run.fatal_error is not None
    assert "in namespace 'kube-system'" in run.fatal_error.message
    assert not run.cluster.list("v1", "ConfigMap", namespace="kube-system")
    same = run_offline(bundle, demo_cr(ns="default"))
    assert same.fatal_error is None


def test_a_declared_namespace_is_where_the_objects_go(tmp_path: Path) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        "components:\n"
        "  - name: a\n"
        "    resources:\n"
        "      - name: cm\n"
        "        namespace: monitoring\n"
        "        object:\n"
        "          apiVersion: v1\n"
        "          kind: ConfigMap\n"
        "          metadata: {name: x}\n",
    )
    run = run_offline(bundle, demo_cr())
    assert run.fatal_error is None
    assert [identity(o) for o in run.applied.values() if o["kind"] == "ConfigMap"] == [
        ("v1", "ConfigMap", "monitoring", "x")
    ]


MONITORING = (
    "config:\n"
    "  monitoringNamespace: monitoring\n"
    "components:\n"
    "  - name: a\n"
    "    resources:\n"
    "      - name: cm\n"
    '        namespace: "{{ config.monitoringNamespace }}"\n'
    "        object:\n"
    "          apiVersion: v1\n"
    "          kind: ConfigMap\n"
    "          metadata: {name: x}\n"
)


def test_a_cr_config_override_cannot_choose_a_declared_namespace(tmp_path: Path) -> None:
    # the namespace comes from config, which the operator sets, but a CR's
    # configOverrides would move the object to kube-system (found by an outside tester)
    # (declared overridable: without a configSchema a CR overrides nothing at all)
    overridable = {"type": "object", "properties": {"monitoringNamespace": {"type": "string"}}}
    bundle = write_bundle(tmp_path / "b", MONITORING, config_schema=overridable)
    tenant = {**demo_cr(), "configOverrides": {"monitoringNamespace": "kube-system"}}

    run = run_offline(bundle, tenant)

    assert run.fatal_error is not None
    assert "from namespace 'monitoring' to 'kube-system'" in run.fatal_error.message
    assert not run.cluster.list("v1", "ConfigMap", namespace="kube-system")
    assert run_offline(bundle, demo_cr()).fatal_error is None  # the bundle's own config


def test_a_declared_namespace_from_config_only_a_cr_sets_is_refused_clearly(
    tmp_path: Path,
) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        MONITORING.replace("config.monitoringNamespace", "config.elsewhere"),
        config_schema={"type": "object", "properties": {"elsewhere": {"type": "string"}}},
    )
    tenant = {**demo_cr(), "configOverrides": {"elsewhere": "kube-system"}}

    run = run_offline(bundle, tenant)

    assert run.fatal_error is not None
    assert "the bundle's own config does not set it) to 'kube-system'" in str(run.fatal_error)
    assert "operator.yaml:" in str(run.fatal_error)


@pytest.mark.parametrize(
    ("namespace", "read"),
    [
        ("{{ spec.target }}", "spec"),
        ("{{ name }}-mon", "name"),
        ("{{ lookup('v1', 'ConfigMap', 'where').data.ns }}", "lookup"),
    ],
)
def test_a_declared_namespace_reading_what_a_cr_author_chooses_is_a_bundle_error(
    tmp_path: Path, namespace: str, read: str
) -> None:
    bundle = write_bundle(
        tmp_path / "b", MONITORING.replace("{{ config.monitoringNamespace }}", namespace)
    )

    with pytest.raises(BundleError) as info:
        load_bundle(bundle)

    assert f"reads {read}: a CR author would choose the namespace" in str(info.value)
    assert "operator.yaml:" in str(info.value)


@pytest.mark.parametrize("item", ["namespace", "config", "operator"])
def test_a_foreach_item_named_like_an_allowed_name_cannot_choose_the_namespace(
    tmp_path: Path, item: str
) -> None:
    # forEach as: namespace made `namespace: "{{ namespace }}"` read the tenant's item
    # (found by the third outside tester)
    controller = (
        "components:\n"
        "  - name: a\n"
        f"    forEach: {{items: '{{{{ spec.targets }}}}', as: {item}}}\n"
        "    resources:\n"
        "      - name: cm\n"
        f'        namespace: "{{{{ {item} }}}}"\n'
        "        object:\n"
        "          apiVersion: v1\n"
        "          kind: ConfigMap\n"
        "          metadata: {name: x}\n"
    )
    with pytest.raises(BundleError) as info:
        load_bundle(write_bundle(tmp_path / "b", controller))
    assert f"reads the forEach item {item}: a CR author would choose" in str(info.value)


def test_a_declared_namespace_may_derive_from_the_crs_own_namespace(tmp_path: Path) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        MONITORING.replace("{{ config.monitoringNamespace }}", "{{ namespace }}-mon"),
    )
    run = run_offline(bundle, demo_cr())
    assert run.fatal_error is None
    assert [
        o["metadata"]["namespace"] for o in run.applied.values() if o["kind"] == "ConfigMap"
    ] == ["default-mon"]


@pytest.mark.parametrize(
    ("line", "value", "message"),
    [
        ("metadata: {name: '{{ spec.v }}'}", ["a", "b"], "metadata.name is a list, not a string"),
        ("metadata: {name: '{{ spec.v }}'}", {"a": "b"}, "metadata.name is a dict, not a string"),
        ("metadata: {name: x, namespace: '{{ spec.v }}'}", 7, "metadata.namespace is a int"),
    ],
)
def test_an_object_whose_identity_is_not_a_string_is_a_clean_error(
    tmp_path: Path, line: str, value: Any, message: str
) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        "components:\n  - name: a\n    resources:\n      - name: cm\n"
        f"        object: {{apiVersion: v1, kind: ConfigMap, {line}}}\n",
    )
    run = run_offline(bundle, demo_cr(v=value))
    assert run.fatal_error is not None
    assert message in run.fatal_error.message
    assert not [o for o in run.applied.values() if o["kind"] == "ConfigMap"]


@pytest.mark.parametrize("html_filter", ["e", "escape", "forceescape", "urlize"])
def test_html_filters_print_a_value_as_one_scalar_too(html_filter: str) -> None:
    from oper8d.template import TemplateEngine

    template = TemplateEngine().text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n"
        f"  k: {{{{ v | {html_filter} }}}}\n",
        "t.yaml",
    )
    hostile = "x\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: pwn"
    (only,) = template.render({"v": hostile})  # one object: the value stayed a scalar
    assert only["kind"] == "ConfigMap"
    assert isinstance(only["data"]["k"], str) and "pwn" in only["data"]["k"]


@pytest.mark.parametrize("value", ["<<", "="])
def test_a_value_naming_a_yaml_tag_is_a_plain_string(value: str) -> None:
    from oper8d.template import TemplateEngine

    template = TemplateEngine().text("k: {{ v }}\n", "t.yaml")
    assert template.render({"v": value}) == [{"k": value}]


#: a CR value that would add a document, a key and an item if its text were structure
HOSTILE = "x', hostNetwork: 'y\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: p}\n- z"

MACROS = (
    "{% macro m() %}a{% endmacro %}{% macro f() %}a %s{% endmacro %}"
    "{% macro g() %}a {}{% endmacro %}{% macro h() %}a {x}{% endmacro %}"
    "{% macro k() %}a %(x)s{% endmacro %}"
)


@pytest.mark.parametrize(
    "expression",
    [
        "m() ~ v",
        "m() + v",
        "m().replace('a', v)",
        "{'a': 1} | to_json ~ v",
        "[m(), v] | join",
        "[v] | join(m())",
        "[v] | map('string') | join(m())",
        "f() | format(v)",
        "m() | replace('a', v)",
        "'a' | to_yaml | replace('a', v)",
        "m().join([v])",
        "g().format(v)",
        "h().format(x=v)",
        "k() % {'x': v}",
        "f() % (v,)",
        "v | tojson",
        "[v, v] | join(',')",
        "[v, 'b'] | join('-') | upper",
        "v | e",
        "v | safe",
        "v | string | indent(2)",
    ],
)
def test_whatever_an_expression_makes_of_a_value_is_one_scalar(expression: str) -> None:
    # template text joined with a value is the value: no run-time check decides it
    from oper8d.template import TemplateEngine

    template = TemplateEngine().text(
        MACROS + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
        "data:\n  k: {{ " + expression + " }}\n  j: '{{ " + expression + " }}'\n",
        "t.yaml",
    )
    (only,) = template.render({"v": HOSTILE})
    assert only["kind"] == "ConfigMap" and list(only["data"]) == ["k", "j"]
    assert "kind: secret" in str(only["data"]["k"]).lower()
    assert "kind: secret" in only["data"]["j"].lower()


def test_a_type_error_from_a_cr_value_names_no_internal_class() -> None:
    from oper8d.errors import ConfigError
    from oper8d.template import TemplateEngine

    template = TemplateEngine().text("x: {{ dict(app=1, **v) }}\n", "t.yaml")
    with pytest.raises(ConfigError) as caught:
        template.render({"v": {"app": 2}})
    assert "type error: got multiple values for keyword argument 'app'" in str(caught.value)
    assert "oper8d." not in str(caught.value) and "Sandbox" not in str(caught.value)


@pytest.mark.parametrize(
    ("value", "lands_as"),
    [
        ("12:30:00", "12:30:00"),
        ("190:20:30.15", "190:20:30.15"),
        ("0x1F", "0x1F"),
        ("3", 3),
        ("true", True),
    ],
)
def test_a_value_is_typed_only_when_it_is_the_text_of_a_number(
    value: str, lands_as: object
) -> None:
    """A string that is a number's or boolean's own text is that number (Helm parity);
    any other string stays itself: YAML 1.1's hex and base-60 forms are not read."""
    from oper8d.template import TemplateEngine

    template = TemplateEngine().text("k: {{ v }}\nliteral: 12:30\n", "t.yaml")
    assert template.render({"v": value}) == [{"k": lands_as, "literal": "12:30"}]


@pytest.mark.parametrize(
    "line",
    [
        "          value: {{ v | to_yaml }}",  # data as a whole scalar: that string
        "          value: {% set b %}{{ v | to_yaml }}{% endset %}{{ b | trim }}",
        "          value: {{ m() }}",  # a macro printing the value
        "          value: {{ m() | nindent(12) }}",
    ],
)
def test_printed_data_lands_where_it_is_printed(line: str) -> None:
    from oper8d.template import TemplateEngine

    template = TemplateEngine().text(
        "{% macro m() %}{{ v | to_yaml }}{% endmacro %}"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "    - name: w\n      env:\n        - name: NOTE\n" + line + "\n",
        "t.yaml",
    )
    hostile = "hostNetwork: true\nhostPID: true\nserviceAccountName: admin"
    (pod,) = template.render({"v": hostile})
    assert list(pod["spec"]) == ["containers"]
    assert pod["spec"]["containers"][0]["env"][0]["value"] == hostile


@pytest.mark.parametrize(
    "source",
    [
        "spec:\n  note: {{ v | to_yaml | nindent(4) }}\n",
        "spec:\n  note:\n{{ v | to_yaml | indent(4) }}\n",
        "spec:\n  list:\n{{ items | to_yaml | indent(4) }}\n",
        "{% macro body() %}a: 1\nb: 2{% endmacro %}spec:\n{{ body() | indent(2) }}\n",
    ],
)
def test_structure_printed_with_nindent_or_indent_lands_where_it_is_printed(source: str) -> None:
    from oper8d.template import TemplateEngine

    hostile = "hostNetwork: true\nhostPID: true"
    (obj,) = TemplateEngine().text(source, "t.yaml").render({"v": hostile, "items": [hostile]})
    assert list(obj) == ["spec"]
    assert "hostNetwork" not in obj["spec"]


@pytest.mark.parametrize(
    "made",
    [
        '{% set c %}{"name": "app", "memory": "{{ v }}"}{% endset %}',
        '{% macro m() %}{"name": "app", "memory": "{{ v }}"}{% endmacro %}{% set c = m() %}',
    ],
)
def test_json_a_template_made_and_parses_keeps_a_value_inside_its_string(made: str) -> None:
    # Helm's fromJson (include ...) idiom: the value closing its JSON string must not add
    # keys (found by an outside tester: securityContext.privileged from spec.memory)
    from oper8d.template import TemplateEngine

    template = TemplateEngine().text(
        made + "\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
        "data: {{ c | from_json | to_json }}\n",
        "t.yaml",
    )
    hostile = '1"}, "privileged": "true'
    (only,) = template.render({"v": hostile})
    assert only["data"] == {"name": "app", "memory": hostile}


def _text(source: str, **context: Any) -> list[dict[str, Any]]:
    from oper8d.template import TemplateEngine

    return TemplateEngine().text(source, "t.yaml").render(context)


@pytest.mark.parametrize(
    "inside",
    [
        '{"a": "{{ v | to_yaml }}"}',
        '["{{ v | quote }}"]',
        '{"a": "{{ v | squote }}"}',
        '["{{ v | to_json }}"]',
        '["{{ v | tojson }}"]',
        '{% macro m() %}{{ v | to_yaml }}{% endmacro %}{"a": "{{ m() }}"}',
        '{"a": "{{ (v | squote) ~ \'\' }}"}',
        '{"a": "{{ [v | squote] | join }}"}',
    ],
)
def test_json_a_template_wrote_keeps_printed_data_inside_its_string(inside: str) -> None:
    # a CR value ending a JSON string (`0,"privileged":true`) once added keys
    source = "{% set j %}" + inside + "{% endset %}\nk: {{ j | from_json | to_json }}\n"
    (obj,) = _text(source, v='0,"privileged":true,"x":"')
    data = obj["k"]
    strings = list(data.values()) if isinstance(data, dict) else data
    assert len(strings) == 1 and "privileged" in strings[0]
    assert "privileged" not in (data if isinstance(data, dict) else {})


def test_data_printed_bare_into_json_a_template_wrote_is_that_data() -> None:
    source = '{% set j %}{"a": {{ v | to_yaml }}}{% endset %}\nk: {{ j | from_json }}\n'
    assert _text(source, v='0,"privileged":true') == [{"k": {"a": '0,"privileged":true'}}]


@pytest.mark.parametrize(
    "source",
    [
        "sc: {runAsUser: {{ v | to_yaml }}}\n",
        "sc: {runAsUser: {{ v | to_yaml }}, b: 1}\n",
        "args: [{{ v | to_yaml }}]\n",
    ],
)
def test_to_yaml_of_a_string_in_a_flow_collection_stays_one_value(source: str) -> None:
    # its commas used to split it into keys or items (found by an outside tester)
    (obj,) = _text(source, v="0, privileged: true, capabilities: {add: [SYS_ADMIN]}")
    inner = next(iter(obj.values()))
    assert "privileged" not in inner
    assert "0, privileged: true, capabilities: {add: [SYS_ADMIN]}" in (
        inner.values() if isinstance(inner, dict) else inner
    )


@pytest.mark.parametrize(
    "line",
    [
        "note: {{ note | lower }}",
        "labels: {{ spec.labels | to_yaml }}",
        "labels: {{ spec.labels | to_json }}",
        "labels:\n  {{ spec.labels | to_yaml | nindent(2) }}",
        "note: {{ m() ~ spec.labels.a }}",
        "note: {{ [m(), spec.labels.a] | join }}",
        "note: {{ spec.labels | to_json | from_json }}",
        "note: '{{ m() }} {{ spec.labels.a }}'",
        "note: |\n  {{ spec.labels.a }}",
    ],
)
def test_a_value_spelling_a_token_is_only_its_own_text(line: str) -> None:
    # a CR author who learned the engine's nonce cannot make another value printed
    from oper8d.template import TemplateEngine

    engine = TemplateEngine()
    spelled = f"{engine._nonce}0z"
    source = "{% macro m() %}x{% endmacro %}password: {{ pw }}\n" + line + "\n"
    template = engine.text(source, "t.yaml")
    (obj,) = template.render({"pw": "S3CRET", "note": spelled, "spec": {"labels": {"a": spelled}}})
    assert obj.pop("password") == "S3CRET"
    assert "S3CRET" not in str(obj)
    assert spelled in str(obj) or spelled.lower() in str(obj)


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("args: [{{ v | to_yaml }}]\n", "?privileged"),
        ("args: [{{ v | to_yaml }}, b]\n", "a:"),
        ("sc: {a: {{ v | to_yaml }}}\n", ":x"),
        ("args: [{{ {'a': v} | to_yaml }}, z]\n", "x, y"),
        ("args: [{{ {v: 1} | to_yaml }}, z]\n", "k,b"),
    ],
)
def test_to_yaml_of_a_string_is_that_one_string_in_a_flow_collection(
    source: str, value: str
) -> None:
    # `[?privileged]` read as a mapping {privileged: null} (outside tester)
    (obj,) = _text(source, v=value)
    inner = next(iter(obj.values()))
    if isinstance(inner, dict):
        assert inner["a"] == value
    elif isinstance(inner[0], dict):  # a mapping's key or value (a second tester's fuzz)
        assert len(inner) == 2
        assert value in (*inner[0], *inner[0].values())
    else:
        assert inner[0] == value


def test_a_value_joined_to_template_text_cannot_start_a_complex_key() -> None:
    source = "{% macro m() %}a: 1\n{% endmacro %}k: {{ m() ~ v }}\n"
    assert _text(source, v="? evil") == [{"k": "a: 1\n? evil"}]


def test_a_value_cannot_make_a_key_of_json_the_template_wrote_twice() -> None:
    source = (
        '{% set j %}{"name": "app", "{{ k }}": "evil"}{% endset %}\n'
        "k: {{ j | from_json | to_json }}\n"
    )
    with pytest.raises(ConfigError, match="appears twice"):
        _text(source, k="name")
