"""The short summary printed after a scan: what was read, what was found, how long it took."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dedup.display import printable
from dedup.models import Report, Summary, document_overlap, source_counts
from dedup.report.palette import Span

if TYPE_CHECKING:
    from dedup.explain import Explanation
    from dedup.normalized_file import NormalizedFile

# What each normalization count means, in the words of a summary line.
STEP_WORDS = {
    "boilerplate": "ad/URL spans removed",
    "repeated-lines": "repeated site lines removed",
    "placeholders": "censorship placeholders removed",
    "punctuation": "punctuation and spaces dropped",
    "width": "full-width characters folded",
    "script": "characters converted to one script",
    "variants": "variant characters folded",
    "passages-converted": "passages converted from the other script",
}

TOP_CLUSTERS = 10
TOP_DOCUMENTS = 10


def _excerpt(text: str, width: int = 24) -> str:
    flat = "".join(text.split())
    return flat if len(flat) <= width else flat[:width] + "…"


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 file``, ``2 files``: a count and its noun."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


def _pairs_found(summary: Summary) -> str:
    verified = plural(summary.verified_pairs, "verified pair")
    candidates = plural(summary.candidate_pairs, "candidate")
    if not summary.exact_copy_pairs:
        return f"{verified} of {candidates}"
    among = summary.verified_pairs - summary.exact_copy_pairs
    return f"{verified}: {plural(summary.exact_copy_pairs, 'exact copy', 'exact copies')}, {among:,} of {candidates}"


def format_summary(report: Report) -> str:
    summary = report.summary
    sources = source_counts(report.inputs, report.clusters)
    lines = [
        f"dedup {report.dedup_version}: read {plural(summary.files, 'file')} from "
        f"{plural(len(sources), 'source')} ({summary.files_skipped:,} skipped), "
        f"{plural(summary.chapters, 'chapter')}, {plural(summary.passages, 'passage')}",
        f"found {plural(summary.matched_documents, 'document')} of {summary.documents:,} "
        f"sharing text ({plural(summary.document_matches, 'match', 'matches')}, "
        f"{plural(summary.document_groups, 'group')} of copies), and "
        f"{plural(summary.clusters, 'cluster')} of near-duplicate passages "
        f"({plural(summary.duplicated_passages, 'passage')}, {_pairs_found(summary)})",
    ]
    lines += _document_lines(report)
    if sources:
        width = max(len("source"), *(len(source.name) for source in sources))
        lines += ["", f"{'source':<{width}}  files  passages  in clusters"]
        for source in sources:
            share = f"{source.in_clusters / source.passages:.0%}" if source.passages else "-"
            lines.append(
                f"{source.name:<{width}}  {source.files:>5}  {source.passages:>8}  "
                f"{source.in_clusters:>6} ({share})"
            )

    lines += _normalization_lines(report, {source.name: source.passages for source in sources})

    giants = [cluster for cluster in report.clusters if cluster.giant]
    if giants:
        limit = report.options.get("max_cluster_size")
        lines += [
            "",
            f"{plural(len(giants), 'giant cluster')} (over {limit} passages each, listed last): "
            "most likely site boilerplate that no pattern removes; check them in index.html",
        ]

    if report.clusters:
        lines += ["", "largest clusters"]
        threshold = float(report.options.get("threshold", 0.0))
        contained = False
        for cluster in report.clusters[:TOP_CLUSTERS]:
            lowest = float(cluster.pairs.jaccard.min())
            highest = float(cluster.pairs.jaccard.max())
            below = lowest < threshold
            contained |= below
            member = next(m for m in cluster.members if m.id == cluster.representative)
            title = f" {member.title}" if member.title else ""
            flag = " [giant]" if cluster.giant else ""
            lines.append(
                f"  {cluster.id:<5}{flag} {plural(len(cluster.members), 'passage')}  "
                f"{', '.join(cluster.sources)}  J {lowest:.2f}-{highest:.2f}{'*' if below else ''}"
                f"{title}  「{_excerpt(member.text)}」"
            )
        if len(report.clusters) > TOP_CLUSTERS:
            lines.append(f"  ... and {len(report.clusters) - TOP_CLUSTERS:,} more in the report")
        if contained:
            containment = float(report.options.get("containment", 0.0))
            lines.append(
                f"  * some pairs are below the Jaccard threshold {threshold:.2f}: one passage "
                f"holds at least {containment:.0%} of the other's shingles (--containment)"
            )

    if report.skipped:
        lines += ["", f"skipped {plural(len(report.skipped), 'input')}"]
        lines += [f"  {entry.path}: {entry.reason}" for entry in report.skipped]
    warned = [entry for entry in report.inputs if entry.warnings]
    if warned:
        lines += ["", "warnings"]
        for entry in warned:
            lines += [f"  {entry.path}: {warning}" for warning in entry.warnings]

    if report.timings:
        stages = {k: v for k, v in report.timings.items() if k != "total"}
        busy = sum(stages.values()) or 1.0
        shares = "  ".join(
            f"{stage} {seconds:.2f}s ({seconds / busy:.0%})" for stage, seconds in stages.items()
        )
        wall = report.timings.get("total", 0.0)
        lines += [
            "",
            f"time {wall:.2f}s on {report.engine}; per stage, summed over workers:",
        ]
        lines.append(f"  {shares}")
    return printable("\n".join(lines))


def _document_lines(report: Report) -> list[str]:
    """Documents first: which sources' documents copy which, the largest groups of copies,
    and the documents that share only part of their text, with their share and from where."""
    from dedup.matches import GROUP_COVERAGE

    if not report.matches:
        return []
    between = document_overlap(report)
    lines = ["", "documents shared between sources (copies: two documents of one group of "
             f"copies, joined by matches covering {GROUP_COVERAGE:.0%} of both; partial: two "
             "documents sharing less, each copy of each counted)"]  # fmt: skip
    ranked = sorted(between.items(), key=lambda item: (-sum(item[1]), item[0]))
    for (one, two), (copies, partly) in ranked[:TOP_DOCUMENTS]:
        where = one if one == two else f"{one} ↔ {two}"
        lines.append(f"  {where}: {plural(copies, 'copy', 'copies')}, {partly:,} partial")
    if len(ranked) > TOP_DOCUMENTS:
        lines.append(
            f"  ... and {len(ranked) - TOP_DOCUMENTS:,} more pairs of sources in index.html"
        )
    documents = {document.id: document for document in report.documents}
    if report.document_groups:
        lines += ["", "largest groups of copies"]
        for group in report.document_groups[:TOP_DOCUMENTS]:
            kept = documents[group.representative]
            title = f" {kept.title}" if kept.title else ""
            lines.append(
                f"  {group.id:<5} {plural(len(group.documents), 'document')}  "
                f"{', '.join(group.sources)}  keep {kept.path}{title}"
            )
        if len(report.document_groups) > TOP_DOCUMENTS:
            more = len(report.document_groups) - TOP_DOCUMENTS
            lines.append(f"  ... and {more:,} more in the report")
    partial = sorted(
        (
            (coverage, document, other, match)
            for match in report.matches
            for document, other, coverage in (
                (match.a, match.b, match.coverage_a),
                (match.b, match.a, match.coverage_b),
            )
            if coverage < GROUP_COVERAGE
        ),
        key=lambda item: (-item[0], item[1].sort_key, item[2].sort_key),
    )
    if partial:
        lines += ["", "documents sharing part of their text (share of its story characters)"]
        for coverage, document, other, match in partial[:TOP_DOCUMENTS]:
            title = f" {document.title}" if document.title else ""
            other_title = f" {other.title}" if other.title else ""
            lines.append(
                f"  {coverage:>4.0%} of {document.path}{title} is in {other.path}{other_title} "
                f"({plural(len(match.spans), 'span')}, "
                f"{plural(match.identical_chars, 'identical character')})"
            )
        if len(partial) > TOP_DOCUMENTS:
            lines.append(f"  ... and {len(partial) - TOP_DOCUMENTS:,} more in the report")
    return lines


def _normalization_lines(report: Report, passages: dict[str, int]) -> list[str]:
    """One line per source: what normalization removed or converted there."""
    per_source: dict[str, Counter[str]] = {}
    for entry in report.inputs:
        per_source.setdefault(entry.source, Counter()).update(entry.normalization)
    lines = []
    for source, counts in sorted(per_source.items()):
        parts = []
        if counts["boilerplate"]:
            parts.append(plural(counts["boilerplate"], "ad/URL span") + " removed")
        if counts["repeated-lines"]:
            parts.append(plural(counts["repeated-lines"], "repeated site line") + " removed")
        if counts["placeholders"]:
            parts.append(plural(counts["placeholders"], "censorship placeholder"))
        if passages.get(source):
            share = counts["passages-converted"] / passages[source]
            other = "Traditional" if report.options.get("script") == "simplified" else "Simplified"
            parts.append(f"{share:.0%} of passages converted from {other}")
        if parts:
            lines.append(f"  {source}: {', '.join(parts)}")
    return ["", "normalization", *lines] if lines else []


def format_explanation(result: NormalizedFile) -> str:
    """``dedup normalize --explain``: per step, how much it did and examples."""
    lines = [f"{result.path} ({result.encoding}): {plural(len(result.chapters), 'chapter')}"]
    for step, words in STEP_WORDS.items():
        count = result.stats.counts.get(step, 0)
        if step == "passages-converted":
            continue
        examples = result.stats.examples.get(step, [])
        shown = "; ".join(f"「{example}」" for example in examples)
        lines.append(f"  {step:<15} {count:>8,}  {words}" + (f"  e.g. {shown}" if shown else ""))
    return "\n".join(lines)


# Background colours for shared stretches in a terminal; without one, stretches are bracketed.
_TERMINAL_COLOURS = ["yellow", "cyan", "green", "magenta", "blue", "red"]


def _painted(text: str, spans: list[Span], colour: bool) -> str:
    pieces: list[str] = []
    at = 0
    for span in sorted(spans, key=lambda s: s.start):
        if span.start < at:
            continue
        pieces.append(printable(text[at : span.start]))
        shared = printable(text[span.start : span.end])
        if colour:
            background = _TERMINAL_COLOURS[span.colour % len(_TERMINAL_COLOURS)]
            pieces.append(click.style(shared, bg=background, fg="black"))
        else:
            pieces.append(f"⟦{shared}⟧")
        at = span.end
    pieces.append(printable(text[at:]))
    return "".join(pieces)


def format_comparison(explanation: Explanation, colour: bool) -> str:
    """``dedup explain``: the numbers, then both texts with what they share marked."""
    a, b = explanation.a, explanation.b
    marking = "same colour, same text" if colour else "⟦shared⟧"
    aligned = [
        f"  {number}. A {span_a.start}-{span_a.end}  ↔  B {span_b.start}-{span_b.end}  "
        f"({plural(identical, 'identical character')})"
        for number, (span_a, span_b, identical) in enumerate(
            zip(
                explanation.spans_a,
                explanation.spans_b,
                explanation.aligned_identical,
                strict=True,
            ),
            start=1,
        )
    ]
    return "\n".join(
        [
            f"A: {printable(a.label)} ({len(a.text):,} characters)",
            f"B: {printable(b.label)} ({len(b.text):,} characters)",
            f"Jaccard {explanation.jaccard:.3f}   containment {explanation.containment:.3f}   "
            f"identical characters {explanation.identical_chars:,}",
            f"aligned: {plural(len(aligned), 'shared span')}, covering "
            f"{explanation.coverage_a:.0%} of A and {explanation.coverage_b:.0%} of B "
            f"(of their story characters; {marking})",
            *aligned,
            "",
            "--- A ---",
            _painted(a.text, explanation.spans_a, colour),
            "",
            "--- B ---",
            _painted(b.text, explanation.spans_b, colour),
        ]
    )


def summary_data(report: Report, written: list[Path]) -> dict[str, Any]:
    """``--format json``: the summary as data, on standard output."""
    sources = {
        source.name: source.to_dict() for source in source_counts(report.inputs, report.clusters)
    }
    return {
        "summary": report.summary.to_dict(),
        "sources": sources,
        "skipped": [entry.to_dict() for entry in report.skipped],
        "largest_document_groups": [
            {"id": g.id, "size": len(g.documents), "sources": list(g.sources)}
            for g in report.document_groups[:10]
        ],
        "largest_clusters": [
            {"id": c.id, "size": len(c.members), "sources": list(c.sources)}
            for c in report.clusters[:10]
        ],
        "seconds": {stage: round(seconds, 3) for stage, seconds in report.timings.items()},
        "files": [path.as_posix() for path in written],
    }
