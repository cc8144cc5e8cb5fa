"""bundle.loader: plain data with file:line:col for every node; clear errors, never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from oper8d.bundle.loader import (
    BundleFiles,
    Document,
    load_yaml_file,
    load_yaml_text,
    read_bundle_text,
    resolve_path,
)
from oper8d.errors import BundleError, SourcePos
from oper8d.kubeyaml import KubernetesLoader

OPERATOR = """\
apiVersion: oper8d.io/v1alpha1
kind: Operator
metadata:
  name: webapp
controllers:
  - name: webapp
    components:
      - name: app
        resources:
          - name: deployment
            object:
              kind: Deployment
              spec: {replicas: 2}
"""


def error_of(call, *args, **kwargs) -> str:
    with pytest.raises(BundleError) as caught:
        call(*args, **kwargs)
    assert len(caught.value.problems) == 1
    return str(caught.value)


def test_positions_of_nested_values_are_one_based_line_and_column():
    doc = load_yaml_text(OPERATOR, "operator.yaml")
    assert doc.pos(("metadata", "name")) == SourcePos("operator.yaml", 4, 9)
    assert doc.pos(("controllers", 0)) == SourcePos("operator.yaml", 6, 5)
    resource = ("controllers", 0, "components", 0, "resources", 0)
    assert doc.pos((*resource, "name")) == SourcePos("operator.yaml", 10, 19)
    assert doc.pos((*resource, "object", "kind")) == SourcePos("operator.yaml", 12, 21)
    # inside a flow mapping too
    assert doc.pos((*resource, "object", "spec", "replicas")) == SourcePos("operator.yaml", 13, 32)


def test_key_positions_point_at_the_key_and_value_positions_at_the_value():
    doc = load_yaml_text("metadata:\n  name:   webapp\n", "operator.yaml")
    assert doc.key_pos(("metadata", "name")) == SourcePos("operator.yaml", 2, 3)
    assert doc.pos(("metadata", "name")) == SourcePos("operator.yaml", 2, 11)


def test_pos_of_an_unknown_path_falls_back_to_the_nearest_known_parent():
    doc = load_yaml_text(OPERATOR, "operator.yaml")
    assert doc.pos(("metadata", "name", "missing", 3)) == doc.pos(("metadata", "name"))
    assert doc.key_pos(("metadata", "nope")) == doc.pos(("metadata",))
    assert Document(data={}, file="x.yaml").pos(("a",)) == SourcePos("x.yaml")


def test_positions_inside_an_included_file_name_that_file(tmp_path: Path):
    (tmp_path / "components").mkdir()
    (tmp_path / "components" / "db.yaml").write_text(
        "# the database\nname: database\nresources:\n  - name: statefulset\n"
        "    template: templates/db.yaml\n"
    )
    doc = load_yaml_file(tmp_path, "components/db.yaml")
    assert doc.file == "components/db.yaml"
    assert doc.data["resources"][0]["template"] == "templates/db.yaml"
    assert str(doc.pos(("resources", 0, "template"))) == "components/db.yaml:5:15"


def test_loaded_data_is_plain_python_without_ruamel_types():
    text = (
        "a: &flag true\nb: *flag\nc: 0x1f\nd: 2024-01-01\ne: |\n  text\nf: on\n"
        "g: !custom tagged\n1: one\nh: [1.5, null]\n"
    )
    data = load_yaml_text(text, "x.yaml").data
    assert data == {
        "a": True,
        "b": True,
        "c": 31,
        "d": "2024-01-01",  # timestamps stay text, as in Kubernetes' JSON view
        "e": "text\n",
        "f": "on",  # YAML 1.2: only true/false are booleans
        "g": "tagged",
        "1": "one",  # scalar keys become strings
        "h": [1.5, None],
    }

    def exact_types(value):
        if isinstance(value, dict):
            return type(value) is dict and all(
                type(k) is str and exact_types(v) for k, v in value.items()
            )
        if isinstance(value, list):
            return type(value) is list and all(exact_types(v) for v in value)
        return value is None or type(value) in (str, int, float, bool)

    assert exact_types(data)


# characters YAML allows unescaped (json.dumps escapes the C0 controls itself)
yaml_text = st.text(
    st.characters(
        blacklist_categories=("Cs", "Co", "Cn", "Zl", "Zp"),
        blacklist_characters="".join(map(chr, range(0x7F, 0xA0))) + "\ufeff",
    )
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | yaml_text,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(yaml_text, children, max_size=4)
    ),
    max_leaves=20,
)


def paths_of(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths_of(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths_of(item, (*path, index))


@settings(max_examples=150, deadline=None)
@given(json_values.filter(lambda v: v is not None))
def test_json_text_loads_to_the_same_data_with_a_position_for_every_node(value):
    # JSON is YAML 1.2, so any JSON document must load unchanged
    doc = load_yaml_text(json.dumps(value, indent=1, ensure_ascii=False), "x.json")
    assert doc.data == value
    for path in paths_of(value):
        assert path in doc.positions


def test_malformed_yaml_reports_the_line_and_column_of_the_problem():
    message = error_of(load_yaml_text, "metadata:\n  name: a: b\n", "operator.yaml")
    assert message == "operator.yaml:2:10: invalid YAML: mapping values are not allowed here"


def test_unclosed_flow_sequence_is_reported_in_one_line():
    message = error_of(load_yaml_text, "shortNames: [wa\nkind: X\n", "operator.yaml")
    assert message.startswith("operator.yaml:2:")
    assert "invalid YAML" in message and "\n" not in message


def test_duplicate_key_is_an_error_at_the_second_occurrence():
    message = error_of(load_yaml_text, "metadata:\n  name: a\n  name: b\n", "operator.yaml")
    assert message.startswith("operator.yaml:3:3: duplicate key 'name'")


def test_a_second_document_is_an_error():
    message = error_of(load_yaml_text, "a: 1\n---\nb: 2\n", "operator.yaml")
    assert message.startswith("operator.yaml:2:1: a second YAML document")


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n"])
def test_an_empty_file_is_an_error(text: str):
    assert "empty file" in error_of(load_yaml_text, text, "operator.yaml")


def test_a_missing_file_names_the_path_and_where_it_was_included(tmp_path: Path):
    message = error_of(load_yaml_file, tmp_path, "components/db.yaml")
    assert "'components/db.yaml' not found" in message
    site = SourcePos("operator.yaml", 12, 18)
    message = error_of(load_yaml_file, tmp_path, "components/db.yaml", pos=site)
    assert message.startswith("operator.yaml:12:18: file 'components/db.yaml' not found")


def test_a_file_that_is_not_utf8_points_at_the_bad_byte(tmp_path: Path):
    (tmp_path / "operator.yaml").write_bytes(b"a: 1\nb: caf\xe9\n")
    assert error_of(load_yaml_file, tmp_path, "operator.yaml").startswith(
        "operator.yaml:2:7: not UTF-8"
    )


@pytest.mark.parametrize(
    ("relpath", "why"),
    [
        ("../outside.yaml", "'..'"),
        ("templates/../../outside.yaml", "'..'"),
        ("/etc/passwd", "absolute"),
        ("", "empty path"),
    ],
)
def test_paths_that_leave_the_bundle_are_rejected_at_the_referencing_position(
    tmp_path: Path, relpath: str, why: str
):
    site = SourcePos("operator.yaml", 7, 23)
    message = error_of(resolve_path, tmp_path, relpath, pos=site)
    assert message.startswith("operator.yaml:7:23: ")
    assert why in message


def test_a_symlink_leading_out_of_the_bundle_is_rejected(tmp_path: Path):
    bundle, outside = tmp_path / "bundle", tmp_path / "secret.yaml"
    bundle.mkdir()
    outside.write_text("a: 1\n")
    os.symlink(outside, bundle / "link.yaml")
    message = error_of(resolve_path, bundle, "link.yaml", pos=SourcePos("operator.yaml", 3, 5))
    assert "outside the bundle through a symlink" in message
    assert "outside the bundle" in error_of(load_yaml_file, bundle, "link.yaml")


def test_a_symlink_inside_the_bundle_is_followed(tmp_path: Path):
    (tmp_path / "real.yaml").write_text("name: app\n")
    os.symlink(tmp_path / "real.yaml", tmp_path / "alias.yaml")
    resolved = resolve_path(tmp_path, "alias.yaml", pos=SourcePos("operator.yaml"))
    assert resolved == (tmp_path / "real.yaml").resolve()
    assert load_yaml_file(tmp_path, "./alias.yaml").data == {"name": "app"}


def _resolved(resolve, root: Path, relpath: str) -> str:
    try:
        return str(resolve(root, relpath))
    except BundleError as err:
        return f"error: {err}"


def test_a_loads_file_resolver_finds_what_resolve_path_finds(tmp_path: Path):
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.yaml").write_text("a: 1\n")
    real = tmp_path / "real-bundle"
    (real / "templates" / "deep").mkdir(parents=True)
    for name in ("operator.yaml", "templates/a.yaml", "templates/deep/b.yaml"):
        (real / name).write_text("a: 1\n")
    os.symlink(real, tmp_path / "bundle")  # the bundle is given by a symlink
    os.symlink(real / "templates", real / "linked")  # a folder symlink inside
    os.symlink(outside, real / "escape")  # a folder symlink out
    os.symlink(real / "templates/a.yaml", real / "templates/alias.yaml")
    os.symlink(outside / "secret.yaml", real / "templates/out.yaml")
    os.symlink(real / "templates/nothing.yaml", real / "templates/dangling.yaml")
    os.symlink("loop.yaml", real / "loop.yaml")
    os.symlink("deep/b.yaml", real / "templates/relative.yaml")
    relpaths = [
        "operator.yaml",
        "./operator.yaml",
        ".",
        "templates",
        "templates/a.yaml",
        "templates//a.yaml",
        "templates/./deep/b.yaml",
        "templates/deep/b.yaml",
        "templates/missing.yaml",
        "missing/folder/x.yaml",
        "operator.yaml/x.yaml",
        "linked/a.yaml",
        "linked/deep/b.yaml",
        "escape/secret.yaml",
        "escape/sub",
        "escape",
        "templates/alias.yaml",
        "templates/out.yaml",
        "templates/dangling.yaml",
        "templates/relative.yaml",
        "loop.yaml",
        "../operator.yaml",
        "/etc/passwd",
        "",
    ]
    root = tmp_path / "bundle"
    files = BundleFiles(root)  # one resolver for them all, as in a load
    site = SourcePos("operator.yaml", 2, 3)
    for relpath in relpaths + relpaths:
        expected = _resolved(lambda r, p: resolve_path(r, p, pos=site), root, relpath)
        assert _resolved(lambda _r, p: files.resolve(p, pos=site), root, relpath) == expected
    assert "outside the bundle" in _resolved(
        lambda _r, p: files.resolve(p, pos=site), root, "templates/out.yaml"
    )


@pytest.mark.parametrize(
    ("relpath", "links", "says"),
    [
        ("components", {}, "'components' is a folder, not a YAML file"),
        (".", {}, "'.' is a folder, not a YAML file"),
        ("components/loop.yaml", {"components/loop.yaml": "loop.yaml"}, "cannot be followed"),
        ("lf/c.yaml", {"lf": "lf"}, "cannot be followed"),
        ("components/c\0.yaml", {}, "holds a NUL character"),
    ],
)
def test_a_path_that_names_no_file_is_an_error_where_it_is_written(
    tmp_path: Path, relpath: str, links: dict[str, str], says: str
):
    (tmp_path / "components").mkdir()
    for link, target in links.items():
        os.symlink(target, tmp_path / link)
    site = SourcePos("operator.yaml", 8, 16)
    for load in (load_yaml_file, read_bundle_text):
        message = error_of(load, tmp_path, relpath, pos=site)
        assert message.startswith("operator.yaml:8:16: ")
        assert says in message


def test_an_anchor_defined_twice_is_no_warning_and_the_later_one_counts():
    doc = load_yaml_text("&a x: 1\n&a y: 2\nz: *a\n", "f.yaml")
    assert doc.data == {"x": 1, "y": 2, "z": "y"}


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("!!binary aGVsbG8=", "a !!binary value is bytes"),
        ("!!set {a, b}", "a !!set is not JSON"),
        (".nan", "nan is not a JSON number"),
        ("-.inf", "-inf is not a JSON number"),
        ("&n .NaN", "nan is not a JSON number"),
    ],
)
def test_a_value_json_cannot_hold_is_an_error_where_it_is_written(value: str, says: str):
    """It used to become its Python text (``b'hello'``, ``set(...)``) in the object."""
    text = f"metadata:\n  name: x\ndata:\n  a: {value}\n"
    message = error_of(load_yaml_text, text, "operator.yaml")
    assert message.startswith("operator.yaml:4:6: ")
    assert says in message


def test_a_timestamp_keeps_its_text():
    assert load_yaml_text("a: 2001-12-14\n", "f.yaml").data == {"a": "2001-12-14"}


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("null", "the key is null"),
        ("~", "the key is null"),
        ("1.5", "the key 1.5 is a float"),
        ("[a, b]", "the key is a list or a mapping"),
    ],
)
def test_a_key_kubectl_would_not_read_as_text_is_an_error_where_it_is_written(key: str, says: str):
    """It used to become "null" or "1.5" in the object, where a text template refuses it."""
    message = error_of(load_yaml_text, f"data:\n  ? {key}\n  : v\n", "operator.yaml")
    assert message.startswith("operator.yaml:2:5: ")
    assert says in message
    assert "quote the key" in message


@pytest.mark.parametrize("key", ["1", "-3", "0x1F", "true", "false", "x", "'1.5'", '"null"'])
def test_operator_yaml_and_a_text_template_turn_a_key_into_the_same_text(key: str):
    """One rule for both (``objects.json_key_text``), as kubectl reads them."""
    text = f"data:\n  {key}: v\n"
    inline = load_yaml_text(text, "operator.yaml").data["data"]
    assert inline == yaml.load(text, Loader=KubernetesLoader)["data"]
    assert list(inline) == [str(key).strip("'\"").replace("0x1F", "31")]


@pytest.mark.parametrize(
    ("text", "data"),
    [
        # a mapping of merged keys only: ruamel keeps no positions for it
        ("x:\n  <<: [{a: 1}, {b: 2}]\n", {"x": {"a": 1, "b": 2}}),
        ("<<: [{a: 1}, {b: 2}]\n", {"a": 1, "b": 2}),
        ("base: &b {k: 1}\nx:\n  <<: [*b, {c: 2}]\n", {"base": {"k": 1}, "x": {"k": 1, "c": 2}}),
        # a tag on a sequence (an unknown tag keeps the data, as on a scalar or a mapping)
        ("items: [!foo [x]]\n", {"items": [["x"]]}),
        ("items: !foo [x]\n", {"items": ["x"]}),
        ("items: [!foo x]\n", {"items": ["x"]}),
    ],
)
def test_merged_lists_of_mappings_and_tagged_sequences_load(text: str, data: object) -> None:
    """Each used to end in an AttributeError traceback (found by an outside audit)."""
    assert load_yaml_text(text, "cr.yaml").data == data


@pytest.mark.parametrize(
    ("text", "at", "says"),
    [
        ("a:\n  b: !!int x\n", "f.yaml:2:6: ", "cannot be built"),
        ("a: [1, !!float x]\n", "f.yaml:1:8: ", "cannot be built"),
        ("a:\n  b: !!pairs [{x: 1}]\n", "f.yaml:2:6: ", "not JSON"),
    ],
)
def test_a_tag_that_cannot_build_its_node_is_an_error_at_its_line(
    text: str, at: str, says: str
) -> None:
    message = error_of(load_yaml_text, text, "f.yaml")
    assert message.startswith(at)
    assert says in message
