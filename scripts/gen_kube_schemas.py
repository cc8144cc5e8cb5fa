#!/usr/bin/env python3
"""Regenerate oper8d/kubeschema/data/k8s-<version>.json.gz from a real kube-apiserver.

    python scripts/gen_kube_schemas.py                 # start the test environment's apiserver
    python scripts/gen_kube_schemas.py --server URL --token T [--ca FILE]   # any apiserver
    python scripts/gen_kube_schemas.py --out other.json.gz                 # elsewhere

It reads discovery (/api/v1, /apis/<group>/<version>: which kinds are served, their plural
and scope; the groups of CRDs are left out) and /openapi/v3 (one document per served
group-version), keeps only what validation needs (oper8d.kubeschema.compact) and writes
gzip-compressed JSON (deterministic: the same server gives the same bytes). The version
comes from /version. Only etcd and kube-apiserver are started (built by testenv/build.sh).
"""

from __future__ import annotations

import argparse
import gzip
import json
import ssl
import sys
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oper8d.kubeschema.compact import ServedResource, compact  # noqa: E402

DATA = ROOT / "oper8d" / "kubeschema" / "data"
#: built-in groups an apiserver of this version no longer (or not by default) serves
UNSERVED_BUILTIN_GROUPS = (
    "extensions",
    "internal.apiserver.k8s.io",
    "storagemigration.k8s.io",
)


class Server:
    """GET JSON from an apiserver with a bearer token."""

    def __init__(self, url: str, token: str | None, ca: str | None) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.context = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
        if not ca:
            self.context.check_hostname = False
            self.context.verify_mode = ssl.CERT_NONE

    def get(self, path: str) -> Any:
        request = urllib.request.Request(self.url + path)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(request, context=self.context, timeout=60) as response:
            return json.loads(response.read())


def served_resources(server: Server) -> list[ServedResource]:
    """The built-in kinds the server serves (kinds of CustomResourceDefinitions left out)."""
    crds = server.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
    custom = {crd["spec"]["group"] for crd in crds}
    versions = ["v1"]
    for group in server.get("/apis")["groups"]:
        if group["name"] not in custom:
            versions += [v["groupVersion"] for v in group["versions"]]
    out = []
    for gv in versions:
        listing = server.get("/api/v1" if gv == "v1" else f"/apis/{gv}")
        for res in listing["resources"]:
            if "/" not in res["name"]:
                out.append(ServedResource(gv, res["kind"], res["name"], res["namespaced"]))
    return out


def openapi_documents(server: Server, api_versions: set[str]) -> dict[str, Any]:
    paths = server.get("/openapi/v3")["paths"]
    docs = {}
    for gv in sorted(api_versions):
        key = "api/v1" if gv == "v1" else f"apis/{gv}"
        docs[gv] = server.get(paths[key]["serverRelativeURL"])
    return docs


def generate(server: Server, out: Path | None) -> Path:
    version = server.get("/version")["gitVersion"].split("+")[0]
    resources = served_resources(server)
    docs = openapi_documents(server, {r.api_version for r in resources})
    data = compact(version, docs, resources, UNSERVED_BUILTIN_GROUPS)
    target = out or DATA / f"k8s-{version}.json.gz"
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    target.write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
    print(f"{target}: {len(data['kinds'])} kinds, {len(data['defs'])} definitions, "
          f"{len(text)} bytes JSON, {target.stat().st_size} bytes gzip")
    return target


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--server", help="apiserver URL (default: start the test environment)")
    parser.add_argument("--token", help="bearer token for --server")
    parser.add_argument("--ca", help="CA file for --server (default: do not verify)")
    parser.add_argument("--out", type=Path, help="output file (default: the package data)")
    args = parser.parse_args()
    if args.server:
        generate(Server(args.server, args.token, args.ca), args.out)
        return 0
    from oper8d.envtest import Environment

    with Environment(controller_manager=False, scheduler=False, kwok=False) as env:
        assert env.server_url is not None
        generate(Server(env.server_url, env.admin_token, str(env.ca_file)), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
