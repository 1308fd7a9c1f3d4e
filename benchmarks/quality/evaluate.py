"""Precision, recall, F1 and adjusted Rand index of predicted duplicates against the labels."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from math import comb
from pathlib import Path
from typing import Any

import dedup

Pair = frozenset[str]


@dataclass
class Labels:
    files: dict[str, dict[str, Any]]
    positives: dict[Pair, str]  # pair -> kind
    excluded: set[Pair]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Labels:
        """The labelled pairs, closed over copies: two copies of one chapter (say its s2t and
        its ads variants) are a positive pair of kind ``copies`` even though only each one's pair
        with the original is listed; a merged or plagiarising file is positive with every copy
        of the chapter it holds."""
        positives = {frozenset((a, b)): kind for a, b, kind in data["positives"]}
        groups = _groups(data["files"], [(a, b) for a, b, k in data["positives"]
                                         if k not in ("merged", "plagiarism", "edition", "annotated")])  # fmt: skip
        for members in groups:
            for a, b in itertools.combinations(sorted(members), 2):
                positives.setdefault(frozenset((a, b)), "copies")
        group_of = {f: members for members in groups for f in members}
        for a, b, kind in data["positives"]:
            if kind in ("merged", "plagiarism") and data["files"][a]["kind"] not in (
                "merged",
                "pages",
            ):
                holder, source = (b, a) if data["files"][b]["kind"] == kind else (a, b)
                for copy in group_of.get(source, {source}):
                    # A page holds only part of the chapter: it may not hold the copied scene.
                    if kind == "plagiarism" and data["files"][copy]["kind"] == "pages":
                        continue
                    positives.setdefault(frozenset((holder, copy)), kind)
        return cls(
            files=data["files"],
            positives=positives,
            excluded={frozenset(pair) for pair in data["excluded"]},
        )

    def kind_of(self, path: str) -> str:
        return str(self.files[path]["kind"])


@dataclass
class Scores:
    precision: float
    recall: float
    f1: float
    recall_by_kind: dict[str, float] = field(default_factory=dict)
    false_positives: list[tuple[str, str]] = field(default_factory=list)


def _groups(files: dict[str, Any], links: list[tuple[str, str]]) -> list[set[str]]:
    parent = {f: f for f in files}

    def find(item: str) -> str:
        while parent[item] != item:
            item = parent[item]
        return item

    for a, b in links:
        parent[find(a)] = find(b)
    grouped: dict[str, set[str]] = defaultdict(set)
    for f in files:
        grouped[find(f)].add(f)
    return [members for members in grouped.values() if len(members) > 1]


def _f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def chapter_scores(predicted: set[Pair], labels: Labels, kinds: set[str] | None = None) -> Scores:
    """Pair precision and recall at chapter (file) level. With ``kinds``, only positives of
    those kinds count, and only predictions between files of those kinds (plus originals)."""

    def relevant(pair: Pair) -> bool:
        return kinds is None or all(labels.kind_of(p) in kinds | {"original"} for p in pair)

    positives = {p for p, kind in labels.positives.items() if kinds is None or kind in kinds}
    judged = {p for p in predicted if p not in labels.excluded and relevant(p)}
    true = judged & positives
    other = {p for p in judged - positives if p not in labels.positives}
    precision = len(true) / (len(true) + len(other)) if true or other else 1.0
    recall = len(true) / len(positives) if positives else 1.0
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for pair, kind in labels.positives.items():
        by_kind[kind].append(pair in predicted)
    return Scores(
        precision,
        recall,
        _f1(precision, recall),
        {kind: sum(hits) / len(hits) for kind, hits in sorted(by_kind.items())},
        sorted(tuple(sorted(pair)) for pair in other)[:10],  # type: ignore[misc]
    )


def adjusted_rand_index(truth: dict[str, str], predicted: dict[str, str]) -> float:
    items = sorted(truth)
    table = Counter((truth[i], predicted[i]) for i in items)
    rows = Counter(truth[i] for i in items)
    columns = Counter(predicted[i] for i in items)
    index = sum(comb(n, 2) for n in table.values())
    row_sum = sum(comb(n, 2) for n in rows.values())
    column_sum = sum(comb(n, 2) for n in columns.values())
    expected = row_sum * column_sum / comb(len(items), 2)
    maximum = (row_sum + column_sum) / 2
    return (index - expected) / (maximum - expected) if maximum != expected else 1.0


def chapter_ari(predicted: set[Pair], labels: Labels) -> float:
    """Clusters of whole chapters (connected files) against the true chapter groups. Files that
    belong to two chapters (merged) or share only a scene (plagiarism) are left out."""
    files = [f for f, info in labels.files.items() if info["kind"] not in ("merged", "plagiarism")]
    truth = {f: f"{labels.files[f]['work']}-{labels.files[f]['chapter']}" for f in files}
    for f in files:
        if labels.files[f]["chapter"] is None:
            truth[f] = f  # seeds: each its own
    parent = {f: f for f in files}

    def find(item: str) -> str:
        while parent[item] != item:
            item = parent[item]
        return item

    for pair in predicted:
        a, b = sorted(pair)
        if a in parent and b in parent:
            parent[find(a)] = find(b)
    return adjusted_rand_index(truth, {f: find(f) for f in files})


def report_pairs(report: dedup.Report, root: Path) -> set[Pair]:
    """Files linked by dedup: two files share a cluster."""
    predicted = set()
    for cluster in report.clusters:
        files = {Path(m.path).relative_to(root).as_posix() for m in cluster.members}
        predicted |= {frozenset(pair) for pair in itertools.combinations(sorted(files), 2)}
    return predicted


def match_pairs(report: dedup.Report, root: Path) -> set[Pair]:
    """Files linked by dedup's document matches: a group of copies links every two of its
    documents, and a match every document of one side's group with every document of the
    other's (a scan matches each copy with the one its group keeps, and two groups once)."""
    path_of = {
        document.id: Path(document.path).relative_to(root).as_posix()
        for document in report.documents
    }
    group_files = {id_: {path} for id_, path in path_of.items()}
    for group in report.document_groups:
        files = {path_of[document] for document in group.documents}
        group_files.update((document, files) for document in group.documents)
    linked = {
        frozenset((one, two))
        for m in report.matches
        for one in group_files[m.a.id]
        for two in group_files[m.b.id]
    }
    for group in report.document_groups:
        files = sorted({path_of[document] for document in group.documents})
        linked |= {frozenset(pair) for pair in itertools.combinations(files, 2)}
    return {pair for pair in linked if len(pair) == 2}


def passage_scores(
    report: dedup.Report, root: Path, labels: Labels
) -> tuple[float, dict[str, float]]:
    """Passage level: precision = share of verified passage pairs (across files) whose files are a
    positive pair; recall (per kind) = mean, over positive file pairs, of the share of the
    shorter file's passages that are in a cluster with a passage of the other file."""
    relative = {}
    passages = {Path(e.path).relative_to(root).as_posix(): e.passages for e in report.inputs}
    linked: dict[tuple[str, str], set[str]] = defaultdict(set)
    good = bad = 0
    for cluster in report.clusters:
        by_id = {m.id: m for m in cluster.members}
        for m in cluster.members:
            relative[m.id] = Path(m.path).relative_to(root).as_posix()
        for a, b in itertools.combinations(cluster.members, 2):
            fa, fb = relative[a.id], relative[b.id]
            if fa != fb:
                linked[(fa, fb)].add(a.id)
                linked[(fb, fa)].add(b.id)
        for pair in cluster.pairs:
            fa, fb = relative[by_id[pair.a].id], relative[by_id[pair.b].id]
            if fa == fb or frozenset((fa, fb)) in labels.excluded:
                continue
            if frozenset((fa, fb)) in labels.positives:
                good += 1
            else:
                bad += 1
    recall: dict[str, list[float]] = defaultdict(list)
    for pair, kind in labels.positives.items():
        a, b = sorted(pair, key=lambda f: (passages.get(f, 0), f))
        if passages.get(a):
            recall[kind].append(len(linked[(a, b)]) / passages[a])
    precision = good / (good + bad) if good + bad else 1.0
    return precision, {kind: sum(v) / len(v) for kind, v in sorted(recall.items())}
