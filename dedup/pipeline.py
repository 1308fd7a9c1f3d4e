"""The scan, as the list of its stages.

discover -> read -> segment -> normalize -> fingerprint -> candidates -> verify -> align ->
cluster -> report. Read to fingerprint run per file, as one task, on the engine's workers
(dedup.engine.tasks); the later stages run once over all passages, here (on a Dask cluster,
candidates, verify and align hand their chunks to the workers that keep the signatures and
texts: dedup.engine.shuffle). Every stage is timed; results never depend on the number of
workers or the order of the input paths.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from dedup.arrays import sorted_unique
from dedup.candidates import find_candidates
from dedup.cluster import check_kept_sources, cluster_pairs
from dedup.config import ScanConfig
from dedup.documents import candidate_documents, document_runs, verified_between
from dedup.engine.base import engine_for
from dedup.engine.gather import prepare_all
from dedup.engine.member_texts import CHANGED_WHILE_SCANNING, members_of, read_documents
from dedup.engine.memory import collector_paused, release_freed_memory
from dedup.matches import (
    align_through_groups,
    document_groups,
    keep_order,
    matches_of,
    original_spans,
    texts_to_align,
)
from dedup.models import Cluster, InputFiles, Report, Skipped, Summary
from dedup.normalize.repeated_lines import RepeatedLines
from dedup.progress import counted
from dedup.read import FoundFile, discover_inputs
from dedup.read.slices import most_tasks
from dedup.report import DEFAULT_FORMATS, write_report
from dedup.report.folder import ReportFolder
from dedup.timing import StageTimer
from dedup.verify import minhash_estimates, verify_candidates
from dedup.version import __version__

Paths = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]


def scan(paths: Paths, config: ScanConfig | None = None, **options: Any) -> Report:
    """Scan the files under ``paths`` (one path, or several) for near-duplicate passages.

    Options are :class:`ScanConfig` fields, given as a ``config`` or as keywords
    (``scan(["dump/"], threshold=0.6)``); keywords given with a ``config`` override its fields.
    """
    config = ScanConfig.with_options(config, options)
    timer = StageTimer()
    started = time.perf_counter()
    with timer("discover"):
        files, skipped = discover_inputs(path_list(paths), config.follow_links)
    return scan_files(files, skipped, config, timer=timer, started=started)


def scan_files(
    files: Sequence[FoundFile],
    skipped: Sequence[Skipped],
    config: ScanConfig,
    repeated: RepeatedLines | None = None,
    timer: StageTimer | None = None,
    started: float | None = None,
) -> Report:
    """The scan of files found already (in discover's order; an index's stored files, say),
    ``skipped`` listed with them; ``repeated``: the lines some sources repeat, learned before
    (their files are not learned from again)."""
    timer = timer or StageTimer()
    started = time.perf_counter() if started is None else started
    engine = engine_for(config, most_tasks(files, config))
    with collector_paused(young_collected=engine.makes_cycles), engine:
        # read -> segment -> normalize -> fingerprint, one task per file, each stage timed
        # in the workers and summed
        prepared = prepare_all(files, config, timer, engine, repeated)
        bars = config.show_progress
        passages = prepared.passages()
        with timer("candidates"):
            candidates = find_candidates(
                passages.alignment.lengths_of,
                passages.hashes,
                passages.signatures,
                passages.spans,
                config.threshold,
                config.num_perm,
                counted(engine, "candidates", "band", bars),
            )
        with timer("verify"):
            verifying = counted(engine, "verify", "chunk", bars)
            estimates = minhash_estimates(candidates.pairs, passages.signatures, verifying)
            passages.let_go_of_signatures()
            verified = verify_candidates(
                candidates.copies,
                candidates.pairs,
                passages.texts,
                estimates,
                config.ngram,
                config.threshold,
                config.containment,
                verifying,
            )
            # The verified pairs hold what later stages need of the candidates (a large
            # dump's candidate pairs are millions); the shingle sets were made on the
            # engine's threads, whose malloc arenas keep what they free: hand it back.
            leader = candidates.leaders(len(passages.spans))
            proposed, exact_copies = len(candidates.pairs), len(candidates.copies)
            del candidates, estimates
            release_freed_memory()
        with timer("align"):
            engine.compiled_ahead()
            # Documents (chapters, records) that share seeds or verified passages are
            # aligned on their normalized texts, held once per distinct passage text.
            documents = document_runs(passages.spans, passages.runs, passages.alignment)
            document_pairs = candidate_documents(
                documents, leader, passages.alignment, verified, engine
            )
            passages.let_go_of_seeds()
            texts = texts_to_align(passages.texts, leader, passages.alignment)
            passages.let_go_of_texts()
            aligned = align_through_groups(
                document_pairs,
                verified_between(document_pairs, documents, verified),
                keep_order(documents, passages.spans, config.keep, document_pairs),
                documents,
                texts,
                config.align,
                counted(engine, "align", "part", bars),
            )
            del texts
            shared = original_spans(aligned, documents, passages.spans, passages.alignment)
            passages.let_go_of_alignment()
        with timer("document texts"):
            # Only the documents that match or hold passages that cluster are shown with
            # their text: read back now rather than carried through the scan.
            shown, changed = read_documents(
                sorted_unique(
                    np.concatenate(
                        (
                            aligned.pairs[aligned.spans[:, 0]].ravel(),
                            documents.of(verified.first),
                            documents.of(verified.second),
                        )
                    )
                ),
                documents,
                passages,
                prepared.files,
                config,
                engine,
            )
            members = members_of(verified, passages.spans, documents, shown)
            passages.let_go_of_spans()
            # What is left of the passages and the documents' runs is done with once the
            # members are cut from their documents; the verified pairs once clustered, the
            # aligned spans once they are matches: the report's records are not made beside
            # them (docs/performance.md).
            document_count = len(documents)
            del passages, documents, verified
        with timer("cluster"):
            clusters = cluster_pairs(
                members.passages,
                members.verified,
                config.keep,
                config.max_cluster_size,
                in_place=True,
            )
            verified_count = len(members.verified)
            del members
            matches = matches_of(aligned, shared, shown)
            aligned_count = len(aligned.pairs)
            del aligned, shared
            groups = document_groups(matches, config.keep)
    check_kept_sources(config.keep, prepared.inputs)
    changed_files = [Skipped(path, CHANGED_WHILE_SCANNING) for path in changed]
    skipped = sorted(
        {s.path: s for s in [*skipped, *prepared.skipped, *changed_files]}.values(),
        key=lambda s: s.path,
    )
    summary = _summarize(
        prepared.inputs,
        skipped,
        prepared.too_short,
        proposed,
        verified_count,
        clusters,
        exact_copies,
    )
    summary = replace(
        summary,
        documents=document_count,
        document_pairs_aligned=aligned_count,
        document_matches=len(matches),
        matched_documents=len({d.id for m in matches for d in (m.a, m.b)}),
        document_groups=len(groups),
    )
    timer.seconds["total"] = time.perf_counter() - started
    return Report(
        dedup_version=__version__,
        options=config.to_dict(),
        summary=summary,
        inputs=prepared.inputs,
        skipped=tuple(skipped),
        clusters=tuple(clusters),
        documents=tuple(sorted(shown.values(), key=lambda d: d.sort_key)),
        matches=tuple(matches),
        document_groups=tuple(groups),
        timings=dict(timer.seconds),
        jobs=engine.workers,
        engine=engine.description,
        directory=os.getcwd(),
    )


def scan_to(
    out: Path | ReportFolder,
    paths: Paths,
    config: ScanConfig | None = None,
    formats: tuple[str, ...] = DEFAULT_FORMATS,
    full_text: bool = False,
    **options: Any,
) -> tuple[Report, list[Path]]:
    """:func:`scan`, then the report stage: the report's files written into ``out`` (whole,
    or not at all: dedup.report.folder), the tables with members' whole texts if
    ``full_text``. Returns the report and the files written."""
    report = scan(paths, config, **options)
    shown = ScanConfig.with_options(config, options).show_progress
    return report, write_report(report, out, formats, show_progress=shown, full_text=full_text)


def path_list(paths: Paths) -> list[str]:
    """The paths a caller gave, as strings: one path (a string is one path, not a list of
    one-character paths) or several."""
    if isinstance(paths, str | os.PathLike):
        return [os.fspath(paths)]
    return [os.fspath(path) for path in paths]


def _summarize(
    inputs: InputFiles,
    skipped: Sequence[Skipped],
    too_short: int,
    candidates: int,
    verified: int,
    clusters: Sequence[Cluster],
    exact_copies: int,
) -> Summary:
    records, chapters, passages = inputs.totals()
    return Summary(
        files=len(inputs),
        files_skipped=len(skipped),
        records=records,
        chapters=chapters,
        passages=passages,
        passages_too_short=too_short,
        candidate_pairs=candidates,
        verified_pairs=verified,
        clusters=len(clusters),
        duplicated_passages=sum(len(cluster.members) for cluster in clusters),
        exact_copy_pairs=exact_copies,
    )
