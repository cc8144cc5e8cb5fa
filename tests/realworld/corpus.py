"""The real-world corpus: public manifests of kube-prometheus, ingress-nginx and Argo CD,
read as test data from ``../shared/corpus`` beside the project's root (its README.md says
where each comes from; the files are never copied into the project).

Read as ``kubectl apply`` reads them (``oper8d.kubeyaml``); a ``List`` gives its items. The
same object published in several files (Argo CD's install variants, ingress-nginx's
providers) is one object of the corpus, named after the first file that holds it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from oper8d.kubeyaml import KubernetesLoader

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"
PROJECTS = ("kube-prometheus", "ingress-nginx", "argo-cd")


class CorpusMissing(Exception):
    """The corpus folder is not where the tests read it."""


@dataclass(frozen=True)
class Corpus:
    #: every document of every file, as published (duplicates included)
    published: int
    #: the distinct objects: (where, object), where is "project/file#index"
    objects: list[tuple[str, dict[str, Any]]]


def load_corpus(folder: Path = CORPUS) -> Corpus:
    """The corpus; CorpusMissing, saying where it is looked for, when it is absent."""
    missing = [p for p in PROJECTS if not (folder / p).is_dir()]
    if missing:
        raise CorpusMissing(
            f"the real-world corpus is missing: {folder} has no {', '.join(missing)} "
            "(it lives beside the project's root as ../shared/corpus; see its README.md)"
        )
    published = 0
    seen: set[str] = set()
    objects = []
    for project in PROJECTS:
        for path in sorted((folder / project).rglob("*.yaml")):
            docs = yaml.load_all(path.read_text(encoding="utf-8"), Loader=KubernetesLoader)
            for index, doc in enumerate(d for d in docs if d):
                items = doc["items"] if str(doc.get("kind", "")).endswith("List") else [doc]
                for item in items:
                    published += 1
                    key = json.dumps(item, sort_keys=True)
                    if key not in seen:
                        seen.add(key)
                        objects.append((f"{path.relative_to(folder)}#{index}", item))
    return Corpus(published, objects)
