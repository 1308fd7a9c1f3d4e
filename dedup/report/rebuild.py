"""Rebuild a report at a stricter threshold from the pair scores it saved (``dedup report``)."""

from __future__ import annotations

import dataclasses

from dedup.cluster import cluster_pairs
from dedup.columns import Similarity
from dedup.errors import ConfigError
from dedup.models import Report


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
        if pair.jaccard >= threshold or pair.containment >= containment
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
    summary = dataclasses.replace(
        report.summary,
        verified_pairs=sum(len(c.pairs) for c in clusters),
        clusters=len(clusters),
        duplicated_passages=sum(len(c.members) for c in clusters),
    )
    held = {m.document for c in clusters for m in c.members}
    held |= {d.id for match in report.matches for d in (match.a, match.b)}
    return dataclasses.replace(
        report,
        options=options,
        summary=summary,
        clusters=tuple(clusters),
        documents=tuple(d for d in report.documents if d.id in held),
    )
