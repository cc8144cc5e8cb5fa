"""Differential test: CRD ``x-kubernetes-validations`` (CEL), offline against the apiserver.

One CRD holds rules of every kind oper8d evaluates (on objects, lists, maps, strings,
integers, int-or-string; transition rules, ``optionalOldSelf`` too; ``messageExpression``,
``reason`` and ``fieldPath``; optional fields with ``has()`` and ``.?``; the quantity,
regex, url and lists libraries; defaults) and some it cannot (``ip()``, a ``date-time``
field, the iteration budget). Values are generated (seeded) for each part of the spec, valid and
invalid, and sent to the real apiserver as a create (``dryRun=All``) and, for transition
rules, as an update (``dryRun=All``) of a stored object; ``KubeSchemas.validate`` checks
the same object offline (with the stored object as ``old`` on update), and the in-memory
cluster takes or refuses the same create or update.

Each case's verdict (accepted, or refused and at which fields) must be the same. A case
where a rule went unchecked offline is counted apart, not as agreement; the numbers are
printed (``-s``) and kept in ``CEL_DIFFERENTIAL`` for the docs.
"""

from __future__ import annotations

import copy
import json
import random
import string
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from apiserver import ApiServer
from harness import wait_for

from oper8d.cluster.memory import MemoryCluster
from oper8d.errors import ClusterError
from oper8d.kubeschema import KubeSchemas

pytestmark = pytest.mark.integration

Obj = dict[str, Any]
GROUP = "cel.oper8d.test"
NS = "default"
COLLECTION = f"/apis/{GROUP}/v1/namespaces/{NS}/celchecks"
CEL_DIFFERENTIAL: Counter[str] = Counter()


def _rules(*items: str | Obj, **node: Any) -> Obj:
    return {
        **node,
        "x-kubernetes-validations": [{"rule": r} if isinstance(r, str) else r for r in items],
    }


# bounded, as the apiserver's cost estimate wants every string, list and map to be
STR: Obj = {"type": "string", "maxLength": 64}
INT: Obj = {"type": "integer"}
SPEC: Obj = _rules(
    {
        "rule": "!has(self.mode) || self.mode != 'legacy' || has(self.legacyConfig)",
        "message": "legacy mode needs legacyConfig",
        "fieldPath": ".mode",
        "reason": "FieldValueRequired",
    },
    type="object",
    properties={
        "mode": STR,
        "legacyConfig": STR,
        "bounds": _rules(
            {"rule": "self.min <= self.max", "message": "min must not exceed max"},
            type="object",
            properties={"min": INT, "max": INT},
            required=["min", "max"],
        ),
        "name": _rules(
            "self.matches('^[a-z][a-z0-9-]*$')",
            {"rule": "size(self) <= 12", "messageExpression": "'too long: ' + self"},
            "!self.startsWith('kube-')",
            **STR,
        ),
        "tags": _rules(
            "self.all(t, t == t.lowerAscii())",
            "size(self) <= 4",
            "self.isSorted()",
            "self.filter(t, t.contains('_')).size() == 0",
            type="array",
            items=STR,
            maxItems=8,
        ),
        "sizes": _rules(
            "self.sum() <= 100",
            "size(self) == 0 || self.max() < 50",
            "self.exists_one(x, x == 0) || !self.exists(x, x == 0)",
            type="array",
            items=INT,
            maxItems=8,
        ),
        "replicas": _rules(
            {
                "rule": "self >= oldSelf",
                "messageExpression": "'may not shrink' + (oldSelf > 5 ? ' from over 5' : '')",
            },
            "self <= 10",
            **INT,
        ),
        "immutable": _rules({"rule": "self == oldSelf", "message": "is immutable"}, **STR),
        "level": _rules(
            {"rule": "!oldSelf.hasValue() || self >= oldSelf.value()", "optionalOldSelf": True},
            {"rule": "oldSelf.hasValue() || self < 100", "optionalOldSelf": True},
            **INT,
        ),
        "resources": _rules(
            "!has(self.memory) || quantity(self.memory).compareTo(quantity('4Gi')) <= 0",
            "!has(self.cpu) || isQuantity(self.cpu) && "
            "quantity(self.cpu).isLessThan(quantity('8'))",
            type="object",
            properties={"memory": STR, "cpu": STR},
        ),
        "endpoint": _rules("isURL(self) && url(self).getScheme() in ['http', 'https']", **STR),
        "opt": _rules(
            {"rule": "has(self.a) == has(self.b)", "message": "a and b go together"},
            "self.?a.orValue('') != 'forbidden'",
            type="object",
            properties={"a": STR, "b": INT},
        ),
        "ports": {
            "type": "array",
            "maxItems": 8,
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": _rules(
                "self.port > 0 && self.port < 65536",
                {"rule": "self.port == oldSelf.port", "message": "a port's number is fixed"},
                type="object",
                required=["name", "port"],
                properties={"name": STR, "port": INT},
            ),
        },
        "labels": _rules(
            {
                "rule": "self.all(k, k.size() <= 8 && self[k] != '')",
                "messageExpression": (
                    "self.exists(k, k.size() > 8) ? 'a key is too long' : 'a value is empty'"
                ),
            },
            type="object",
            additionalProperties=STR,
            maxProperties=8,
        ),
        "target": _rules(
            "type(self) == int ? self > 0 : self.matches('^[a-z]+$')",
            **{"x-kubernetes-int-or-string": True, "maxLength": 64},
        ),
        "scaling": _rules(
            "self.count <= 5",
            type="object",
            properties={"count": {**INT, "default": 3}, "step": INT},
        ),
        "split": _rules("self.split('/').size() == 2 && self.find('[0-9]+') != ''", **STR),
        # rules oper8d cannot evaluate: reported unchecked
        "net": _rules("ip(self).family() == 4", **STR),
        "when": _rules(
            "self > timestamp('2020-01-01T00:00:00Z')", type="string", format="date-time"
        ),
        "grid": _rules(
            "self.all(a, self.all(b, a + b >= 0))", type="array", items=INT, maxItems=200
        ),
    },
)


def celcheck_crd() -> Obj:
    schema = {"type": "object", "properties": {"spec": SPEC}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"celchecks.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": "CelCheck", "plural": "celchecks"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def _obj(name: str, spec: Obj) -> Obj:
    meta = {"name": name, "namespace": NS}
    return {"apiVersion": f"{GROUP}/v1", "kind": "CelCheck", "metadata": meta, "spec": spec}


# -- generated values --------------------------------------------------------------------
def _word(rnd: random.Random, alphabet: str, most: int) -> str:
    return "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, most)))


def _creates(rnd: random.Random) -> Iterator[tuple[str, Obj]]:
    """(part, spec) pairs: each sets one part of the spec (the others' rules do not run)."""
    for _ in range(15):
        yield "bounds", {"bounds": {"min": rnd.randint(-5, 5), "max": rnd.randint(-5, 5)}}
        name = _word(rnd, "abz09-_K", 14)
        yield "name", {"name": rnd.choice([name, "kube-" + name, name.lower()])}
        yield "tags", {"tags": [_word(rnd, "abAB_", 3) for _ in range(rnd.randint(0, 5))]}
        yield (
            "sizes",
            {"sizes": [rnd.choice([0, 1, 5, 20, 49, 50, 60]) for _ in range(rnd.randint(0, 4))]},
        )
        yield "replicas", {"replicas": rnd.randint(0, 12)}
        yield "level", {"level": rnd.choice([0, 50, 99, 100, 150])}
        units = ["", "m", "k", "Mi", "Gi", "G", "Ti", "e3", "x", " Gi"]
        memory = f"{rnd.choice(['1', '4', '4096', '0.5', '5', '.5', 'x'])}{rnd.choice(units)}"
        cpu = f"{rnd.choice(['1', '8', '7.999', '500', '9'])}{rnd.choice(['', 'm', 'k', 'z'])}"
        yield "resources", {"resources": rnd.choice([{"memory": memory}, {"cpu": cpu}, {}])}
        endpoint = rnd.choice(
            [
                "https://example.com/a?b=c",
                "http://10.0.0.1:8080/",
                "ftp://example.com",
                "/relative/path",
                "no-scheme.example.com",
                "https://a.io:port/",
                "https://user@a.io/",
                "",
                "https://exa mple.com",
                "http://a.io/%20",
            ]
        )
        yield "endpoint", {"endpoint": endpoint}
        opt = {
            k: v for k, v in (("a", rnd.choice(["x", "forbidden"])), ("b", 1)) if rnd.random() < 0.6
        }
        yield "opt", {"opt": opt}
        ports = [
            {"name": f"p{i}", "port": rnd.choice([0, 80, 443, 70000])}
            for i in range(rnd.randint(0, 3))
        ]
        yield "ports", {"ports": ports}
        labels = {
            _word(rnd, "abcdefghijk", 11) or "k": rnd.choice(["", "v"])
            for _ in range(rnd.randint(0, 3))
        }
        yield "labels", {"labels": labels}
        yield "target", {"target": rnd.choice([0, 1, 8080, -2, "http", "HTTP", "h2c", ""])}
        scaling = rnd.choice([{}, {"count": rnd.randint(0, 8)}, {"step": 2}])
        yield "scaling", {"scaling": scaling}
        yield "split", {"split": rnd.choice(["a/1", "a/b", "a/b/1", "1", "x/22"])}
        yield (
            "mode",
            rnd.choice(
                [{"mode": "legacy"}, {"mode": "legacy", "legacyConfig": "c"}, {"mode": "new"}]
            ),
        )
        yield "net", {"net": rnd.choice(["10.0.0.1", "::1"])}
        yield "when", {"when": rnd.choice(["2019-06-01T00:00:00Z", "2024-06-01T00:00:00Z"])}
        yield "grid", {"grid": list(range(rnd.choice([3, 150])))}


def _updates(rnd: random.Random) -> Iterator[tuple[str, Obj, Obj]]:
    """(part, stored spec, new spec): updates that run the transition rules."""
    for _ in range(10):
        yield "replicas", {"replicas": rnd.randint(0, 10)}, {"replicas": rnd.randint(0, 10)}
        level = {"level": rnd.choice([0, 50, 99])}
        yield "level", level, {"level": rnd.choice([0, 50, 99, 150])}
        old = rnd.choice(["a", "b"])
        yield "immutable", {"immutable": old}, {"immutable": rnd.choice(["a", "b"])}
        stored = [{"name": "web", "port": 80}, {"name": "tls", "port": 443}]
        new = copy.deepcopy(stored)
        rnd.shuffle(new)
        if rnd.random() < 0.5:
            new[0]["port"] = rnd.choice([80, 443, 8080])
        if rnd.random() < 0.3:
            new.append({"name": "extra", "port": 9090})
        yield "ports", {"ports": stored}, {"ports": new}
        # a change elsewhere: transition rules of unchanged parts still run, and pass
        yield (
            "unchanged",
            {"replicas": 3, "immutable": "a"},
            {"replicas": 3, "immutable": "a", "mode": "new"},
        )


# -- verdicts ------------------------------------------------------------------------------
def _real_verdict(status: int, text: str) -> tuple[bool, frozenset[str]]:
    if status in (200, 201):
        return True, frozenset()
    assert status == 422, f"{status}: {text}"
    causes = json.loads(text).get("details", {}).get("causes", [])
    return False, frozenset(c.get("field", "") for c in causes)


def _memory_verdict(cluster: MemoryCluster, obj: Obj, old: Obj | None) -> bool:
    """Whether the in-memory cluster takes the create (or, after creating ``old``, the
    update) of ``obj``."""
    if old is not None:
        cluster.create(copy.deepcopy(old))
    try:
        (cluster.update if old is not None else cluster.create)(copy.deepcopy(obj))
    except ClusterError as e:
        assert e.status == 422, e
        return False
    return True


def _offline_verdict(
    schemas: KubeSchemas, obj: Obj, old: Obj | None
) -> tuple[bool, frozenset[str], bool]:
    found = schemas.validate(obj, old)
    return found.ok, frozenset(f.path for f in found.errors), bool(found.unchecked)


@pytest.fixture(scope="module")
def installed(apiserver: ApiServer) -> KubeSchemas:
    crd = celcheck_crd()
    status, text = apiserver.send(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
    )
    assert status in (201, 409), text

    def served() -> bool:
        return apiserver.send("POST", COLLECTION, _obj("probe", {}), "?dryRun=All")[0] == 201

    wait_for("the CelCheck CRD to be served", served, timeout=30)
    return KubeSchemas.builtin().with_crds([crd])


def _tally(
    part: str,
    real: tuple[bool, frozenset[str]],
    offline: tuple[bool, frozenset[str], bool],
    memory: bool,
    disagreements: list[str],
    describe: str,
) -> None:
    CEL_DIFFERENTIAL["cases"] += 1
    if memory != offline[0]:  # one check, two callers: they must never part
        disagreements.append(f"{part}: in-memory cluster {memory}, offline {offline}: {describe}")
    if offline[2]:
        CEL_DIFFERENTIAL["unchecked"] += 1
        CEL_DIFFERENTIAL[f"unchecked: {part}"] += 1
        # an unchecked rule never refuses on its own
        if not offline[0] and real[0]:
            disagreements.append(f"{part}: false alarm beside an unchecked rule: {describe}")
        return
    if real[0] == offline[0] and real[1] == offline[1]:
        CEL_DIFFERENTIAL["agree"] += 1
        CEL_DIFFERENTIAL["agree refused" if not real[0] else "agree accepted"] += 1
    else:
        CEL_DIFFERENTIAL["disagree"] += 1
        disagreements.append(f"{part}: apiserver {real}, offline {offline[:2]}: {describe}")


def test_cel_verdicts_match_the_apiserver(apiserver: ApiServer, installed: KubeSchemas) -> None:
    rnd = random.Random(20)
    disagreements: list[str] = []
    memory = MemoryCluster(schemas=installed)
    memory.register_kind(f"{GROUP}/v1", "CelCheck", namespaced=True)
    for i, (part, spec) in enumerate(_creates(rnd)):
        obj = _obj("c", spec)
        real = _real_verdict(*apiserver.send("POST", COLLECTION, obj, "?dryRun=All"))
        offline = _offline_verdict(installed, obj, None)
        in_memory = _memory_verdict(memory, _obj(f"c{i}", spec), None)
        _tally(part, real, offline, in_memory, disagreements, json.dumps(spec))
    for i, (part, before, after) in enumerate(_updates(rnd)):
        name = f"u{i}-{''.join(rnd.choice(string.ascii_lowercase) for _ in range(5))}"
        status, text = apiserver.send("POST", COLLECTION, _obj(name, before))
        assert status == 201, text
        stored = json.loads(text)
        new = _obj(name, after)
        new["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
        real = _real_verdict(*apiserver.send("PUT", f"{COLLECTION}/{name}", new, "?dryRun=All"))
        offline = _offline_verdict(installed, new, stored)
        in_memory = _memory_verdict(memory, _obj(name, after), _obj(name, before))
        _tally(
            f"update {part}", real, offline, in_memory, disagreements, json.dumps([before, after])
        )
        apiserver.send("DELETE", f"{COLLECTION}/{name}", {})
    print(f"\nCEL differential: {dict(CEL_DIFFERENTIAL)}")
    assert disagreements == []
    assert CEL_DIFFERENTIAL["agree refused"] >= 50 and CEL_DIFFERENTIAL["agree accepted"] >= 50
    assert CEL_DIFFERENTIAL["unchecked"] < CEL_DIFFERENTIAL["cases"] / 4
