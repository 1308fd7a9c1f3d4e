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

from dedup.errors import ConfigError
from dedup.models import InputFile, Match, MatchedDocument, Report

# A document at least this much covered by a kept one is a copy of it: the share document
# groups use (matches.GROUP_COVERAGE), chosen on the quality benchmark's chapter pairs.
DEFAULT_COVERAGE = 0.8
KEEP_POLICIES = ("longest", "first", "cleanest", "source:A,B")


@dataclass(frozen=True, slots=True)
class Removal:
    """A document left out, the kept document it duplicates, and how much of it that one
    covers (its share of the removed document's story characters, and identical ones)."""

    removed: MatchedDocument
    kept: MatchedDocument
    coverage: float
    identical_chars: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "removed": self.removed.location(),
            "removed_story_chars": self.removed.story_chars,
            "kept": self.kept.location(),
            "coverage": round(self.coverage, 4),
            "identical_chars": self.identical_chars,
        }


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


def preference(
    keep: str, inputs: Sequence[InputFile]
) -> Callable[[MatchedDocument], tuple[Any, ...]]:
    """The sort key of documents, the one to keep first: ``longest`` (most story characters),
    ``first`` (reading order), ``source:A,B`` (a document of A, then of B, then any; the
    longest of those), ``cleanest`` (from the file whose normalization removed the fewest ads,
    site lines and censorship placeholders per passage, and converted the fewest passages
    from the other script; then the longest). Ties go to reading order."""
    if keep == "longest":
        return lambda d: (-d.story_chars, d.sort_key)
    if keep == "first":
        return lambda d: (d.sort_key,)
    if keep.startswith("source:"):
        wanted = [name.strip() for name in keep.removeprefix("source:").split(",") if name.strip()]
        place = {name: number for number, name in enumerate(wanted)}
        return lambda d: (place.get(d.source, len(place)), -d.story_chars, d.sort_key)
    if keep == "cleanest":
        noise = {entry.path: _noise(entry) for entry in inputs}
        return lambda d: (
            noise.get(d.path.split("!/", 1)[0], (0.0, 0.0)),
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
