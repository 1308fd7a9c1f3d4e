"""Rebuild a report at a stricter threshold from the pair scores it saved (``dedup report``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from dedup.cluster import cluster_pairs
from dedup.columns import Similarity
from dedup.errors import ConfigError
from dedup.matches import document_groups
from dedup.models import Match, Pair, Passage, Report


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
        lambda pair, _a, _b: pair.jaccard >= threshold or pair.containment >= containment,
        min_size=min_size,
    )


def narrowed(
    report: Report,
    keep_pair: Callable[[Pair, Passage, Passage], bool],
    keep_match: Callable[[Match], bool] | None = None,
    min_size: int = 2,
) -> Report:
    """``report`` with only the verified pairs ``keep_pair`` keeps (given the pair and its two
    passages), clustered again (clusters of fewer than ``min_size`` members left out), and
    with only the matches ``keep_match`` keeps (all, if None), grouped again; the documents
    neither holds are left out too."""
    options = report.options
    passages = sorted(
        {member.id: member for cluster in report.clusters for member in cluster.members}.values(),
        key=lambda passage: passage.sort_key,
    )
    index = {passage.id: number for number, passage in enumerate(passages)}
    kept = [
        Similarity(
            index[pair.a],
            index[pair.b],
            pair.jaccard,
            pair.containment,
            pair.minhash_jaccard,
            pair.identical_chars,
        )
        for cluster in report.clusters
        for pair in cluster.pairs
        if keep_pair(pair, passages[index[pair.a]], passages[index[pair.b]])
    ]
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
