"""Differential test on real-world objects: the offline check says what the apiserver says.

Every object of the real-world corpus (``tests/realworld/corpus.py``: kube-prometheus,
ingress-nginx and Argo CD as published) and every generated mutation of them
(``tests/realworld/mutations.py``, seeded) goes through the check ``oper8d render`` and the
live operator make of each rendered object (``KubeSchemas.checked``: coercion, then the
schema and the semantic rules) and through the test apiserver's dry-run server-side apply
of what that check hands on (what oper8d sends). The corpus CRDs are installed on the
apiserver first and given to the offline side as ``--crds DIR`` gives them
(``load_crd_dir``); the namespaces the objects name are created.

The verdicts must agree: no false alarm (offline refuses what the apiserver takes), and the
misses (offline takes what the apiserver refuses) are exactly ``KNOWN_MISSES``, each with
its reason; docs/kubernetes-schemas.md lists them too. A new miss or a fixed one fails the
test, so the list stays true.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from apiserver import SUMMARY, ApiServer
from harness import wait_for

from oper8d.kubeschema import KubeSchemas, load_crd_dir
from tests.realworld.corpus import CORPUS, PROJECTS, Corpus, CorpusMissing, load_corpus
from tests.realworld.mutations import generate

pytestmark = pytest.mark.integration

SEED = 18
#: the namespace of the objects that name none (Argo CD's are applied with ``-n``)
NAMESPACE = "default"

#: each class of miss: why the offline check says less than the apiserver there
MISS_CLASSES: dict[str, str] = {
    "time zone": (
        "a CronJob's timeZone needs the IANA time zone database as the apiserver embeds it; "
        "the host's may differ (a false alarm where it lacks a zone)"
    ),
    "field paths": (
        "an env var's fieldRef.fieldPath must be one of a list the apiserver keeps in code, "
        "per version and per kind"
    ),
    "addresses": (
        "IP addresses and CIDRs are parsed by Go's net package, whose legacy forms Python's "
        "ipaddress reads otherwise: left to the apiserver"
    ),
    "selector operators": (
        "a label selector requirement's operator (In, NotIn, Exists, DoesNotExist) and its "
        "values are checked by the apiserver's Go code, not the OpenAPI"
    ),
    "admission": (
        "an admission plugin (PodSecurity) checks its own labels on a Namespace; admission is "
        "beyond the offline check"
    ),
    "statefulset name": (
        "the 1.36 test apiserver wants a StatefulSet name to be a DNS label (no dots, at most "
        "63 characters); the shipped 1.34 rules take a subdomain, and a rule that 1.34 lacks "
        "would false-alarm there"
    ),
    "crd": (
        "a CustomResourceDefinition's own rules (structural schema, names, list types) are "
        "the apiextensions apiserver's: the offline check knows a CRD's schema, not its "
        "validation; the corpus CRDs are installed, so their mutations are updates"
    ),
}

#: every miss, by the label of its mutation ("Kind: edit"), or a label's start (ending in
#: ": "), and its class; each must still occur
KNOWN_MISSES: dict[str, str] = {
    "CronJob: timeZone Mars/Olympus": "time zone",
    **{
        f"{kind}: env fieldPath unknown": "field paths"
        for kind in ("CronJob", "DaemonSet", "Deployment", "Job", "StatefulSet")
    },
    "NetworkPolicy: ipBlock cidr /33": "addresses",
    "NetworkPolicy: ipBlock except outside cidr": "addresses",
    "Service: clusterIP not an address": "addresses",
    "Service: swap spec.clusterIP": "addresses",
    "NetworkPolicy: matchExpressions operator lower case": "selector operators",
    "Namespace: swap metadata.labels.*": "admission",
    "StatefulSet: name of 64 characters": "statefulset name",
    "StatefulSet: name with a dot": "statefulset name",
    "CustomResourceDefinition: ": "crd",
}


def miss_class(label: str) -> str | None:
    """The class of a miss of this label, None when it is not listed."""
    if label in KNOWN_MISSES:
        return KNOWN_MISSES[label]
    prefixes = (p for p in KNOWN_MISSES if p.endswith(": ") and label.startswith(p))
    return next((KNOWN_MISSES[p] for p in prefixes), None)


#: mutations judged by a real apply (deleted again), one at a time: a dry run allocates no
#: node port, so it takes one outside the range the live apply is refused
REAL_APPLY = frozenset(
    {"Service: NodePort with nodePort 80", "Service: NodePort with nodePort 30080 (valid)"}
)


@dataclass(frozen=True)
class Verdict:
    label: str
    where: str
    offline: str | None  #: the offline check's first finding, None when it passes
    apiserver: str | None  #: the apiserver's refusal, None when it takes the object


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    try:
        return load_corpus()
    except CorpusMissing as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="module")
def offline() -> KubeSchemas:
    """The built-in schemas plus the corpus CRDs, read as ``--crds DIR`` reads them."""
    crds = [crd for project in PROJECTS for crd in load_crd_dir(CORPUS / project)]
    return KubeSchemas.builtin().with_crds(crds)


@pytest.fixture(scope="module")
def installed(apiserver: ApiServer, corpus: Corpus) -> None:
    """The corpus CRDs served and its namespaces made on the test apiserver."""
    crds = [o for _, o in corpus.objects if o["kind"] == "CustomResourceDefinition"]
    for crd in crds:
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        status, text = apiserver.send("POST", path, crd)
        assert status in (201, 409), text
    namespaces = {o["metadata"].get("namespace") for _, o in corpus.objects} - {None}
    for ns in sorted(namespaces):
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        status, text = apiserver.send("POST", "/api/v1/namespaces", namespace)
        assert status in (201, 409), text
    for crd in crds:
        group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
        version = crd["spec"]["versions"][0]["name"]
        path = f"/apis/{group}/{version}/{plural}"
        wait_for(
            f"{plural}.{group} to be served",
            lambda p=path: apiserver.send("GET", p, None)[0] == 200,
            timeout=60,
        )


def _verdict(
    apiserver: ApiServer, schemas: KubeSchemas, case: tuple[str, str, dict[str, Any]]
) -> Verdict:
    label, where, obj = case
    coerced, found = schemas.checked(obj)
    offline = None
    if not found.ok:
        first = found.errors[0]
        offline = f"{first.path}: {first.message}" if first.path else first.message
    real = label in REAL_APPLY
    rejected, answer = apiserver.apply_rejects(schemas, coerced, namespace=NAMESPACE, real=real)
    return Verdict(label, where, offline, answer if rejected else None)


def test_offline_check_agrees_with_the_apiserver_on_the_real_world_corpus(
    apiserver: ApiServer,
    corpus: Corpus,
    offline: KubeSchemas,
    installed: None,
    request: pytest.FixtureRequest,
) -> None:
    started = time.monotonic()
    originals = [("as published", where, obj) for where, obj in corpus.objects]
    mutations = generate(corpus.objects, SEED)
    cases = [c for c in originals + mutations if c[0] not in REAL_APPLY]
    verdicts = apiserver.verdicts(cases, lambda case: _verdict(apiserver, offline, case))
    verdicts += [_verdict(apiserver, offline, c) for c in mutations if c[0] in REAL_APPLY]
    elapsed = time.monotonic() - started

    false_alarms = [v for v in verdicts if v.offline and not v.apiserver]
    misses = [v for v in verdicts if v.apiserver and not v.offline]
    agreed = len(verdicts) - len(false_alarms) - len(misses)
    refused = sum(1 for v in verdicts[: len(originals)] if v.apiserver)
    by_class = Counter(miss_class(v.label) or "unlisted" for v in misses)
    summary = (
        f"real-world corpus: {len(originals)} objects ({corpus.published} published; "
        f"{refused} refused as published) + "
        f"{len(mutations)} mutations, agreement {agreed}/{len(verdicts)} "
        f"({100 * agreed / len(verdicts):.2f}%), {len(false_alarms)} false alarms, "
        f"{len(misses)} misses ({', '.join(f'{c} {n}' for c, n in sorted(by_class.items()))}), "
        f"{elapsed:.0f} s"
    )
    request.config.stash.setdefault(SUMMARY, []).append(summary)

    assert len(mutations) >= 2000
    assert set(KNOWN_MISSES.values()) <= MISS_CLASSES.keys()
    shown = "\n".join(f"{v.label} [{v.where}]: {v.offline}" for v in false_alarms[:40])
    assert not false_alarms, f"{len(false_alarms)} false alarms:\n{shown}"
    unlisted = sorted({v.label for v in misses if miss_class(v.label) is None})
    examples = {v.label: v for v in misses}
    shown = "\n".join(f"{m} [{examples[m].where}]: {examples[m].apiserver}" for m in unlisted)
    assert not unlisted, f"{len(unlisted)} unlisted misses:\n{shown}"
    missed = {v.label for v in misses}
    gone = sorted(
        key
        for key in KNOWN_MISSES
        if key not in missed and not (key.endswith(": ") and any(m.startswith(key) for m in missed))
    )
    assert not gone, f"listed misses the offline check now catches (remove them): {gone}"


def test_a_missing_corpus_fails_loudly(tmp_path: Any) -> None:
    with pytest.raises(CorpusMissing, match=r"real-world corpus is missing: .* argo-cd"):
        load_corpus(tmp_path)
