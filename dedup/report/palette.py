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


def spans_in_original(normalized: NormalizedText, ranges: list[tuple[int, int, int]]) -> list[Span]:
    """(normalized start, length, colour) ranges as spans of the original text."""
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
    # Each normalized position of the representative takes the colour of the first member
    # stretch that covers it; a stretch is coloured by where it starts in the representative.
    colour_at: dict[int, int] = {}
    next_colour = 0
    for member_id, text in others:
        member = normalize(text, config)
        identical[member_id] = identical_chars(member.text, rep.text, ngram)
        member_ranges = []
        for block in shared_blocks(member.text, rep.text, ngram):
            colour = colour_at.get(block.b_start)
            if colour is None:
                colour = next_colour
                next_colour += 1
            for position in range(block.b_start, block.b_start + block.length):
                colour_at.setdefault(position, colour)
            member_ranges.append((block.a_start, block.length, colour))
        spans[member_id] = spans_in_original(member, member_ranges)
    spans[rep_id] = spans_in_original(rep, _runs(colour_at))
    identical[rep_id] = len(colour_at)
    return Palette(spans, identical)


def _runs(colour_at: dict[int, int]) -> list[tuple[int, int, int]]:
    """(start, length, colour) runs of consecutive positions with the same colour."""
    runs: list[tuple[int, int, int]] = []
    for position in sorted(colour_at):
        colour = colour_at[position]
        if runs and runs[-1][0] + runs[-1][1] == position and runs[-1][2] == colour:
            start, length, _ = runs[-1]
            runs[-1] = (start, length + 1, colour)
        else:
            runs.append((position, 1, colour))
    return runs
