#!/usr/bin/env python3
"""Generate docs/reference.md from the JSON Schemas in schemas/ (the single source).

    python scripts/gen_reference.py            # rewrite docs/reference.md
    python scripts/gen_reference.py --check    # exit 1 when it is out of date (used by tests)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = {
    "operator.schema.json": json.loads((ROOT / "schemas/operator.schema.json").read_text()),
    "component.schema.json": json.loads((ROOT / "schemas/component.schema.json").read_text()),
}
#: what commands print (``-o json|yaml``), documented after the bundle's files
OUTPUT_SCHEMAS = {
    "trace.schema.json": json.loads((ROOT / "schemas/trace.schema.json").read_text()),
}
SCHEMAS.update(OUTPUT_SCHEMAS)
OUT = ROOT / "docs/reference.md"


def resolve(ref: str, current: str) -> tuple[str, str, dict[str, Any]]:
    file, _, pointer = ref.partition("#")
    file = file or current
    node: Any = SCHEMAS[file]
    for part in pointer.strip("/").split("/"):
        if part:
            node = node[part]
    return file, pointer.rsplit("/", 1)[-1], node


def type_of(node: dict[str, Any], current: str) -> str:
    if "$ref" in node:
        _f, name, _n = resolve(node["$ref"], current)
        return f"[{name}](#{name.lower()})"
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return " \\| ".join(f"`{v}`" for v in node["enum"])
    for key in ("oneOf", "anyOf"):
        if key in node:
            return " or ".join(type_of(n, current) for n in node[key])
    t = node.get("type", "any")
    if isinstance(t, list):
        t = " or ".join(t)
    if t == "array" and isinstance(node.get("items"), dict):
        return f"list of {type_of(node['items'], current)}"
    return str(t)


def section(name: str, node: dict[str, Any], current: str) -> list[str]:
    lines = [f"## {name}", ""]
    if node.get("title"):
        lines += [f"**{node['title']}**", ""]
    if node.get("description"):
        lines += [node["description"], ""]
    props = node.get("properties") or {}
    if props:
        required = set(node.get("required") or [])
        lines += ["| field | type | description |", "|---|---|---|"]
        for key, sub in props.items():
            desc = (sub.get("description") or "").replace("\n", " ").replace("|", "\\|")
            if "default" in sub:
                desc += f" Default: `{json.dumps(sub['default'])}`."
            req = " (required)" if key in required else ""
            lines.append(f"| `{key}`{req} | {type_of(sub, current)} | {desc} |")
        lines.append("")
    elif any(k in node for k in ("oneOf", "anyOf", "type", "enum")):
        lines += [f"Type: {type_of(node, current)}", ""]
    return lines


def generate() -> str:
    out = [
        "# Bundle reference",
        "",
        "Generated from `schemas/*.schema.json` by `scripts/gen_reference.py`; do not edit.",
        "",
    ]
    top = SCHEMAS["operator.schema.json"]
    out += section("Operator", top, "operator.schema.json")
    for file in SCHEMAS:
        if file not in OUTPUT_SCHEMAS:
            for name, node in SCHEMAS[file].get("$defs", {}).items():
                out += section(name, node, file)
    out += [
        "# Command output",
        "",
        "The structures commands print with `-o json` and `-o yaml`; generated from",
        "`schemas/<name>.schema.json` like the above.",
        "",
    ]
    for file, schema in OUTPUT_SCHEMAS.items():
        out += section(schema["title"], schema, file)
        for name, node in schema.get("$defs", {}).items():
            out += section(name, node, file)
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    text = generate()
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_text() != text:
            print("docs/reference.md is out of date: run python scripts/gen_reference.py")
            sys.exit(1)
        sys.exit(0)
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
