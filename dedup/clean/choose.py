"""Which documents a cleaned copy leaves out, and for which kept document each.

Documents are taken in the order ``--keep`` prefers them; each is left out when a document
kept already covers it (their match covers at least ``coverage`` of its story characters),
and kept otherwise. So every removed document names a kept one, which the copy holds, and a
chain of near copies keeps its best one rather than none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dedup.config import kept_sources
from dedup.errors import ConfigError
from dedup.matches import keep_key
from dedup.models import InputFile, Match, MatchedDocument, Report
from dedup.read.zip import outer_path

# A document at least this much covered by a kept one is a copy of it: the share that makes a
# group of copies (matches.GROUP_COVERAGE), so that clean leaves out what the report groups.
DEFAULT_COVERAGE = 0.8
KEEP_POLICIES = ("longest", "first", "cleanest", "source:A,B")


@dataclass(frozen=True, slots=True)
class Removal:
    """A document left out (or, by passage, a stretch of it: ``span``, offsets into the same
    decoded text as the document's), the kept document it duplicates (and the stretch of it,
    ``kept_span``), how much of the removed document that one covers (its share of the story
    characters) and the identical characters."""

    removed: MatchedDocument
    kept: MatchedDocument
    coverage: float
    identical_chars: int
    span: tuple[int, int] | None = None
    kept_span: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {
            "removed": self.removed.location(),
            "removed_story_chars": self.removed.story_chars,
            "kept": self.kept.location(),
            "coverage": round(self.coverage, 4),
            "identical_chars": self.identical_chars,
        }
        if self.span is not None and self.kept_span is not None:
            data["removed_span"] = list(self.span)
            data["kept_span"] = list(self.kept_span)
        return data

    @property
    def sort_key(self) -> tuple[Any, ...]:
        return (*self.removed.sort_key, *(self.span or ()))


def removals(report: Report, keep: str, coverage: float = DEFAULT_COVERAGE) -> list[Removal]:
    """The documents of ``report`` a cleaned copy leaves out, in reading order."""
    if not 0.0 < coverage <= 1.0:
        raise ConfigError(f"coverage must be in (0, 1], not {coverage}")
    covers: dict[str, list[tuple[str, Match, float]]] = {}
    for match in report.matches:
        if match.coverage_a >= coverage:
            covers.setdefault(match.a.id, []).append((match.b.id, match, match.coverage_a))
        if match.coverage_b >= coverage:
            covers.setdefault(match.b.id, []).append((match.a.id, match, match.coverage_b))
    documents = {document.id: document for document in report.documents}
    order = sorted(documents.values(), key=preference(keep, report.inputs))
    rank = {document.id: number for number, document in enumerate(order)}
    kept: set[str] = set()
    removed: list[Removal] = []
    for document in order:
        partners = [entry for entry in covers.get(document.id, ()) if entry[0] in kept]
        if not partners:
            kept.add(document.id)
            continue
        partner, match, share = min(partners, key=lambda entry: (-entry[2], rank[entry[0]]))
        removed.append(Removal(document, documents[partner], share, match.identical_chars))
    return sorted(removed, key=lambda removal: removal.removed.sort_key)


def struck_stretches(report: Report, keep: str, min_chars: int) -> list[Removal]:
    """By passage: the stretches each document shares with a document ``keep`` prefers to it,
    cut back to whole sentences, each with that document's stretch (which the copy keeps:
    a stretch is only struck against one that is not struck itself). Stretches of fewer
    than ``min_chars`` characters after the cut are left alone."""
    order = sorted(report.documents, key=preference(keep, report.inputs))
    rank = {document.id: number for number, document in enumerate(order)}
    struck: dict[str, list[tuple[int, int]]] = {}
    found: list[Removal] = []
    shared: dict[str, list[tuple[MatchedDocument, int, int, int, int, int]]] = {}
    for match in report.matches:
        for span in match.spans:
            one = (
                match.b,
                span.a_start,
                span.a_end,
                span.b_start,
                span.b_end,
                span.identical_chars,
            )
            two = (
                match.a,
                span.b_start,
                span.b_end,
                span.a_start,
                span.a_end,
                span.identical_chars,
            )
            shared.setdefault(match.a.id, []).append(one)
            shared.setdefault(match.b.id, []).append(two)
    for document in order:
        for partner, start, end, kept_start, kept_end, identical in sorted(
            shared.get(document.id, ()), key=lambda entry: (entry[1], rank[entry[0].id])
        ):
            if rank[partner.id] > rank[document.id]:
                continue  # the partner is struck against this one, not this against it
            if any(s < kept_end and kept_start < e for s, e in struck.get(partner.id, ())):
                continue  # the partner's stretch is not in the copy: this one stays
            low, high = whole_sentences(document, start, end)
            if high - low < min_chars:
                continue
            if any(s < high and low < e for s, e in struck.get(document.id, ())):
                continue  # struck already, against another partner
            struck.setdefault(document.id, []).append((low, high))
            found.append(
                Removal(document, partner, 0.0, identical, (low, high), (kept_start, kept_end))
            )
    return sorted(found, key=lambda removal: removal.sort_key)


# Where a sentence ends: its last punctuation, then any closing quotes and brackets.
_SENTENCE_ENDS = frozenset("。！？!?…；;")
_CLOSING = frozenset("」』”’）)】》\"'")
# An aligned stretch starts and ends at story characters: this many characters around it are
# looked at for the punctuation that opens or ends its sentence.
_SNAP_CHARS = 4


def _sentence_boundary(text: str, position: int) -> bool:
    """Whether a sentence ends just before ``position`` (or the text starts or ends there)."""
    if position <= 0 or position >= len(text):
        return True
    before, after = text[position - 1], text[position]
    if before == "\n":
        return True
    if after in _SENTENCE_ENDS or after in _CLOSING:
        return False
    at = position - 1
    while at > 0 and text[at] in _CLOSING:
        at -= 1
    return text[at] in _SENTENCE_ENDS


def _no_story(text: str) -> bool:
    return not any(char.isalnum() for char in text)


def whole_sentences(document: MatchedDocument, start: int, end: int) -> tuple[int, int]:
    """``start``-``end`` (offsets in the decoded text) cut back to the whole sentences in it:
    from the start of the first sentence that starts in it (an opening quote or indent just
    before it counts) to the end of the last one that ends in it (with its closing
    punctuation and quotes, just after it). Empty when no whole sentence is in it."""
    text, base = document.text, document.start
    low, high = start - base, end - base
    # The first boundary from the start and the first from the end: looking at every
    # character of every stretch made a clean by passage slower than its scan
    # (docs/performance.md).
    first = next(
        (
            p
            for p in range(max(0, low - _SNAP_CHARS), high + 1)
            if _sentence_boundary(text, p) and (p >= low or _no_story(text[p:low]))
        ),
        high,
    )
    last = next(
        (
            p
            for p in range(min(len(text), high + _SNAP_CHARS), low - 1, -1)
            if _sentence_boundary(text, p) and (p <= high or _no_story(text[high:p]))
        ),
        first,
    )
    if last <= first:
        return start, start
    return base + first, base + last


def preference(
    keep: str, inputs: Sequence[InputFile]
) -> Callable[[MatchedDocument], tuple[Any, ...]]:
    """The sort key of documents, the one to keep first: ``longest`` (most story characters),
    ``first`` (reading order), ``source:A,B`` (a document of A, then of B, then any; the
    longest of those), ``cleanest`` (from the file whose normalization removed the fewest ads,
    site lines and censorship placeholders per passage, and converted the fewest passages
    from the other script; then the longest). Ties go to reading order."""
    if keep in ("longest", "first") or kept_sources(keep):
        # the order a scan's groups keep by (a report's kept document is the one clean keeps)
        key = keep_key(keep)
        return lambda d: key(d.source, d.story_chars, d.sort_key)
    if keep == "cleanest":
        noise = {entry.path: _noise(entry) for entry in inputs}
        return lambda d: (
            noise.get(outer_path(d.path), (0.0, 0.0)),
            -d.story_chars,
            d.sort_key,
        )
    raise ConfigError(f"keep must be one of {', '.join(KEEP_POLICIES)}, not {keep!r}")


def _noise(entry: InputFile) -> tuple[float, float]:
    counts = entry.normalization
    passages = max(1, entry.passages)
    removed = counts.get("boilerplate", 0) + counts.get("repeated-lines", 0)
    removed += counts.get("placeholders", 0)
    return (removed / passages, counts.get("passages-converted", 0) / passages)
