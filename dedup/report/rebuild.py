"""Rebuild a report at a stricter threshold from the pair scores it saved (``dedup report``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from dedup.arrays import concatenated
from dedup.cluster import cluster_pairs
from dedup.columns import SimilarityTable
from dedup.errors import ConfigError
from dedup.matches import document_groups
from dedup.models import Match, PairTable, Passage, Report

# Which of a cluster's pairs to keep (a flag each), given its pairs and the passages its
# pairs' numbers name (``PairTable.ids``, in that order).
PairFilter = Callable[[PairTable, Sequence[Passage]], npt.NDArray[np.bool_]]


def rebuild(
    report: Report,
    threshold: float | None = None,
    containment: float | None = None,
    min_size: int = 2,
) -> Report:
    """The report a scan at a stricter ``threshold`` (or ``containment``) would give, from the
    pair scores saved in ``report``, without reading or fingerprinting anything again; clusters
    with fewer than ``min_size`` members are left out."""
    options = dict(report.options)
    threshold = options["threshold"] if threshold is None else threshold
    containment = options["containment"] if containment is None else containment
    if threshold < options["threshold"] or containment < options["containment"]:
        raise ConfigError(
            f"the saved report only has pairs at Jaccard >= {options['threshold']} or containment "
            f">= {options['containment']}; scan again to go lower"
        )
    options["threshold"], options["containment"] = threshold, containment
    return narrowed(
        dataclasses.replace(report, options=options),
        lambda pairs, _members: (pairs.jaccard >= threshold) | (pairs.containment >= containment),
        min_size=min_size,
    )


def narrowed(
    report: Report,
    keep_pairs: PairFilter,
    keep_match: Callable[[Match], bool] | None = None,
    min_size: int = 2,
) -> Report:
    """``report`` with only the verified pairs ``keep_pairs`` keeps, clustered again (clusters
    of fewer than ``min_size`` members left out), and with only the matches ``keep_match``
    keeps (all, if None), grouped again; the documents neither holds are left out too. The
    pairs are kept a cluster's table at a time, as columns: a report's pairs are millions,
    and made one object each they were most of a rebuild's time."""
    options = report.options
    passages = sorted(
        {member.id: member for cluster in report.clusters for member in cluster.members}.values(),
        key=lambda passage: passage.sort_key,
    )
    index = {passage.id: number for number, passage in enumerate(passages)}
    parts: list[tuple[npt.NDArray[np.int64], PairTable, npt.NDArray[np.bool_]]] = []
    for cluster in report.clusters:
        pairs = cluster.pairs
        numbers = np.array([index[member] for member in pairs.ids], dtype=np.int64)
        parts.append((numbers, pairs, keep_pairs(pairs, [passages[n] for n in numbers.tolist()])))
    kept = SimilarityTable(
        concatenated([numbers[pairs.a[wanted]] for numbers, pairs, wanted in parts], np.int64),
        concatenated([numbers[pairs.b[wanted]] for numbers, pairs, wanted in parts], np.int64),
        concatenated([pairs.jaccard[wanted] for _n, pairs, wanted in parts], np.float64),
        concatenated([pairs.containment[wanted] for _n, pairs, wanted in parts], np.float64),
        concatenated([pairs.minhash_jaccard[wanted] for _n, pairs, wanted in parts], np.float64),
        concatenated([pairs.identical_chars[wanted] for _n, pairs, wanted in parts], np.int64),
    )
    keep, largest = options.get("keep", "longest"), options.get("max_cluster_size", 200)
    clusters = [
        c
        for c in cluster_pairs(dict(enumerate(passages)), kept, keep, largest)
        if len(c.members) >= min_size
    ]
    clusters = [
        dataclasses.replace(c, id=f"c{number}") for number, c in enumerate(clusters, start=1)
    ]
    matches = report.matches
    groups = report.document_groups
    if keep_match is not None:
        matches = tuple(match for match in matches if keep_match(match))
        groups = tuple(document_groups(matches, keep))
    held = {m.document for c in clusters for m in c.members}
    held |= {d.id for match in matches for d in (match.a, match.b)}
    summary = dataclasses.replace(
        report.summary,
        verified_pairs=sum(len(c.pairs) for c in clusters),
        clusters=len(clusters),
        duplicated_passages=sum(len(c.members) for c in clusters),
        document_matches=len(matches),
        matched_documents=len({d.id for m in matches for d in (m.a, m.b)}),
        document_groups=len(groups),
    )
    return dataclasses.replace(
        report,
        summary=summary,
        clusters=tuple(clusters),
        documents=tuple(d for d in report.documents if d.id in held),
        matches=tuple(matches),
        document_groups=tuple(groups),
    )
