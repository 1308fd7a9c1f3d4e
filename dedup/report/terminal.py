"""The short summary printed after a scan: what was read, what was found, how long it took."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import click

from dedup.models import Report
from dedup.report.palette import Span

if TYPE_CHECKING:
    from dedup.explain import Explanation
    from dedup.pipeline import NormalizedFile

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


def _excerpt(text: str, width: int = 24) -> str:
    flat = "".join(text.split())
    return flat if len(flat) <= width else flat[:width] + "…"


def format_summary(report: Report) -> str:
    summary = report.summary
    sources = sorted({entry.source for entry in report.inputs})
    lines = [
        f"dedup {report.dedup_version}: read {summary.files} files from {len(sources)} sources "
        f"({summary.files_skipped} skipped), {summary.chapters} chapters, "
        f"{summary.passages} passages",
        f"found {summary.clusters} clusters of near-duplicate passages "
        f"({summary.duplicated_passages} passages, {summary.verified_pairs} verified pairs "
        f"of {summary.candidate_pairs} candidates)",
    ]

    passages_per_source: Counter[str] = Counter()
    files_per_source: Counter[str] = Counter()
    for entry in report.inputs:
        passages_per_source[entry.source] += entry.passages
        files_per_source[entry.source] += 1
    duplicated: Counter[str] = Counter()
    for cluster in report.clusters:
        for member in cluster.members:
            duplicated[member.source] += 1
    if sources:
        width = max(len("source"), *(len(source) for source in sources))
        lines += ["", f"{'source':<{width}}  files  passages  in clusters"]
        for source in sources:
            total = passages_per_source[source]
            share = f"{duplicated[source] / total:.0%}" if total else "-"
            lines.append(
                f"{source:<{width}}  {files_per_source[source]:>5}  {total:>8}  "
                f"{duplicated[source]:>6} ({share})"
            )

    lines += _normalization_lines(report, passages_per_source)

    giants = [cluster for cluster in report.clusters if cluster.giant]
    if giants:
        limit = report.options.get("max_cluster_size")
        lines += [
            "",
            f"{len(giants)} giant clusters (over {limit} passages each, listed last): most likely "
            "site boilerplate that no pattern removes; check them in index.html",
        ]

    if report.clusters:
        lines += ["", "largest clusters"]
        for cluster in report.clusters[:TOP_CLUSTERS]:
            lowest = min(pair.jaccard for pair in cluster.pairs)
            highest = max(pair.jaccard for pair in cluster.pairs)
            member = next(m for m in cluster.members if m.id == cluster.representative)
            title = f" {member.title}" if member.title else ""
            flag = " [giant]" if cluster.giant else ""
            lines.append(
                f"  {cluster.id:<5}{flag} {len(cluster.members)} passages  "
                f"{', '.join(cluster.sources)}  J {lowest:.2f}-{highest:.2f}{title}  "
                f"「{_excerpt(member.text)}」"
            )
        if len(report.clusters) > TOP_CLUSTERS:
            lines.append(f"  ... and {len(report.clusters) - TOP_CLUSTERS} more in the report")

    if report.skipped:
        lines += ["", f"skipped {len(report.skipped)} inputs"]
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
        lines += ["", f"time {wall:.2f}s with {report.jobs} jobs; per stage, summed over workers:"]
        lines.append(f"  {shares}")
    return "\n".join(lines)


def _normalization_lines(report: Report, passages: Counter[str]) -> list[str]:
    """One line per source: what normalization removed or converted there."""
    per_source: dict[str, Counter[str]] = {}
    for entry in report.inputs:
        per_source.setdefault(entry.source, Counter()).update(entry.normalization)
    lines = []
    for source, counts in sorted(per_source.items()):
        parts = []
        if counts["boilerplate"]:
            parts.append(f"{counts['boilerplate']:,} ad/URL spans removed")
        if counts["repeated-lines"]:
            parts.append(f"{counts['repeated-lines']:,} repeated site lines removed")
        if counts["placeholders"]:
            parts.append(f"{counts['placeholders']:,} censorship placeholders")
        if passages[source]:
            share = counts["passages-converted"] / passages[source]
            other = "Traditional" if report.options.get("script") == "simplified" else "Simplified"
            parts.append(f"{share:.0%} of passages converted from {other}")
        if parts:
            lines.append(f"  {source}: {', '.join(parts)}")
    return ["", "normalization", *lines] if lines else []


def format_explanation(result: NormalizedFile) -> str:
    """``dedup normalize --explain``: per step, how much it did and examples."""
    lines = [f"{result.path} ({result.encoding}): {len(result.chapters)} chapters"]
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
        pieces.append(text[at : span.start])
        shared = text[span.start : span.end]
        if colour:
            background = _TERMINAL_COLOURS[span.colour % len(_TERMINAL_COLOURS)]
            pieces.append(click.style(shared, bg=background, fg="black"))
        else:
            pieces.append(f"⟦{shared}⟧")
        at = span.end
    pieces.append(text[at:])
    return "".join(pieces)


def format_comparison(explanation: Explanation, colour: bool) -> str:
    """``dedup explain``: the numbers, then both texts with what they share marked."""
    a, b = explanation.a, explanation.b
    marking = "same colour, same text" if colour else "⟦shared⟧"
    return "\n".join(
        [
            f"A: {a.label} ({len(a.text):,} characters)",
            f"B: {b.label} ({len(b.text):,} characters)",
            f"Jaccard {explanation.jaccard:.3f}   containment {explanation.containment:.3f}   "
            f"identical characters {explanation.identical_chars:,}   ({marking})",
            "",
            "--- A ---",
            _painted(a.text, explanation.spans_a, colour),
            "",
            "--- B ---",
            _painted(b.text, explanation.spans_b, colour),
        ]
    )
