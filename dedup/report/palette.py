"""The palette (调色盘): which stretches of text two passages share, aligned, in matching
colours, and how many characters they share (雷同字数).

Passages are compared in their normalized form, so a Traditional copy with other punctuation
still lines up with the Simplified original; the shared stretches are then mapped back onto the
original text of each passage, which is what a person reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from dedup.normalize import NormalizeConfig, NormalizedText, normalize
from dedup.verify import identical_chars, shared_blocks


@dataclass(frozen=True, slots=True)
class Span:
    """Characters ``start:end`` of an original passage, shared stretch number ``colour``."""

    start: int
    end: int
    colour: int


def _spans(normalized: NormalizedText, ranges: list[tuple[int, int, int]]) -> list[Span]:
    spans = []
    for start, length, colour in ranges:
        first = int(normalized.offsets[start])
        last = int(normalized.offsets[start + length - 1])
        spans.append(Span(first, last + 1, colour))
    return spans


@dataclass(frozen=True, slots=True)
class Palette:
    """For each passage of a cluster, the spans it shares with the representative, coloured by
    the representative's stretch they match (so the same colour marks the same text in every
    member), and its identical-character count against the representative."""

    spans: dict[str, list[Span]]
    identical: dict[str, int]


def cluster_palette(
    representative: tuple[str, str],
    others: list[tuple[str, str]],
    ngram: int,
    config: NormalizeConfig,
) -> Palette:
    """``representative`` and ``others`` are (id, original text) pairs."""
    rep_id, rep_text = representative
    rep = normalize(rep_text, config)
    spans: dict[str, list[Span]] = {rep_id: []}
    identical: dict[str, int] = {}
    # Colour the representative's normalized positions by the first member stretch covering them.
    colour_at: dict[int, int] = {}
    rep_ranges: list[tuple[int, int, int]] = []
    next_colour = 0
    for member_id, text in others:
        member = normalize(text, config)
        blocks = shared_blocks(member.text, rep.text, ngram)
        identical[member_id] = identical_chars(member.text, rep.text, ngram)
        member_ranges = []
        for block in blocks:
            colour = colour_at.get(block.b_start)
            if colour is None:
                colour = next_colour
                next_colour += 1
                for position in range(block.b_start, block.b_start + block.length):
                    colour_at.setdefault(position, colour)
                rep_ranges.append((block.b_start, block.length, colour))
            member_ranges.append((block.a_start, block.length, colour))
        spans[member_id] = _spans(member, member_ranges)
    spans[rep_id] = _spans(rep, sorted(rep_ranges))
    identical[rep_id] = len(
        {p for start, length, _ in rep_ranges for p in range(start, start + length)}
    )
    return Palette(spans, identical)
