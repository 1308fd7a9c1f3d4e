"""The palette (调色盘): which stretches of text two passages share, aligned, in matching
colours, and how many characters they share (雷同字数).

Passages are compared in their normalized form, so a Traditional copy with other punctuation
still lines up with the Simplified original; the shared stretches are then mapped back onto the
original text of each passage, which is what a person reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dedup.fingerprint import Keys, shingle_keys
from dedup.normalize import (
    BATCH_CHARS,
    NormalizeConfig,
    NormalizedText,
    in_batches,
    normalize_many,
)
from dedup.verify import (
    Block,
    NgramIndex,
    covered_chars,
    ngram_index,
    shared_blocks,
    sorted_unique_keys,
)


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
    normalized: Mapping[str, NormalizedText] | None = None,
) -> Palette:
    """``representative`` and ``others`` are (id, original text) pairs; ``normalized`` holds
    their texts normalized, if that was done already (see :func:`normalized_texts`)."""
    if normalized is None:
        normalized = normalized_texts([representative[1], *(text for _id, text in others)], config)
    normalized_text = normalized.__getitem__

    rep_id, rep_text = representative
    rep = normalized_text(rep_text)
    rep_index: NgramIndex | None = None  # built when a member differs from the representative
    rep_keys: Keys | None = None
    compared: dict[str, tuple[int, list[Block]]] = {}  # normalized text -> its alignment
    spans: dict[str, list[Span]] = {rep_id: []}
    identical: dict[str, int] = {}
    # Each normalized position of the representative takes the colour of the first member
    # stretch that covers it (-1: none yet); a stretch is coloured by where it starts in the
    # representative.
    colour_at = np.full(len(rep.text), -1, dtype=np.int64)
    colours = 0
    for member_id, text in others:
        member = normalized_text(text)
        if member.text == rep.text:  # the usual case: the same scene, other script or layout
            identical[member_id] = len(member.text)
            blocks = [Block(0, 0, len(rep.text))] if len(rep.text) >= ngram else []
        elif member.text in compared:  # another copy of a text already aligned
            identical[member_id], blocks = compared[member.text]
        else:
            if rep_index is None or rep_keys is None:
                rep_index = ngram_index(rep.text, ngram)
                rep_keys = sorted_unique_keys(rep.text, ngram)
            identical[member_id] = covered_chars(
                shingle_keys(member.text, ngram), rep_keys, ngram, len(member.text)
            )
            blocks = shared_blocks(member.text, rep.text, ngram, rep_index)
            compared[member.text] = identical[member_id], blocks
        member_ranges = []
        for block in blocks:
            colour = int(colour_at[block.b_start])
            if colour < 0:
                colour = colours
                colours += 1
            stretch = colour_at[block.b_start : block.b_start + block.length]
            stretch[stretch < 0] = colour
            member_ranges.append((block.a_start, block.length, colour))
        spans[member_id] = spans_in_original(member, member_ranges)
    spans[rep_id] = spans_in_original(rep, _runs(colour_at))
    identical[rep_id] = int(np.count_nonzero(colour_at >= 0))
    return Palette(spans, identical)


def normalized_texts(texts: Iterable[str], config: NormalizeConfig) -> dict[str, NormalizedText]:
    """Each distinct text normalized (copies are common), in batches: normalizing passages one
    call at a time cost more in the calls' fixed costs than in the work."""
    distinct = list(dict.fromkeys(texts))
    normalized: dict[str, NormalizedText] = {}
    for batch in in_batches(distinct, map(len, distinct), BATCH_CHARS):
        normalized.update(zip(batch, normalize_many(batch, config)[0], strict=True))
    return normalized


def _runs(colour_at: npt.NDArray[np.int64]) -> list[tuple[int, int, int]]:
    """(start, length, colour) runs of consecutive coloured positions with the same colour."""
    positions = np.flatnonzero(colour_at >= 0)
    if not positions.size:
        return []
    colours = colour_at[positions]
    starts = np.flatnonzero(
        np.concatenate(([True], (np.diff(positions) != 1) | (np.diff(colours) != 0)))
    )
    ends = np.append(starts[1:], positions.size)
    return [
        (int(positions[start]), int(end - start), int(colours[start]))
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True)
    ]
