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

from dedup.arrays import sorted_unique
from dedup.fingerprint import Keys, shingle_key_batch, shingle_keys
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
)


@dataclass(frozen=True, slots=True)
class Span:
    """Characters ``start:end`` of an original passage, shared stretch number ``colour``."""

    start: int
    end: int
    colour: int


def spans_in_original(normalized: NormalizedText, ranges: list[tuple[int, int, int]]) -> list[Span]:
    """(normalized start, length, colour) ranges as spans of the original text."""
    return [Span(*row) for row in span_rows(normalized, ranges)]


def span_rows(normalized: NormalizedText, ranges: list[tuple[int, int, int]]) -> list[list[int]]:
    """(normalized start, length, colour) ranges as ``[start, end, colour]`` rows of the
    original text: a span from its first character's original to its last's, inclusive."""
    if not ranges:
        return []
    table = np.array(ranges, dtype=np.int64)
    offsets = normalized.offsets
    table[:, 1] = offsets[table[:, 0] + table[:, 1] - 1] + 1
    table[:, 0] = offsets[table[:, 0]]
    rows: list[list[int]] = table.tolist()
    return rows


@dataclass(frozen=True, slots=True)
class Palette:
    """For each passage of a cluster, the spans it shares with the representative, coloured by
    the representative's stretch they match (so the same colour marks the same text in every
    member), as ``[start, end, colour]`` rows of its original text, and its
    identical-character count against the representative."""

    spans: dict[str, list[list[int]]]
    identical: dict[str, int]


def cluster_palette(
    representative: tuple[str, str],
    others: list[tuple[str, str]],
    ngram: int,
    config: NormalizeConfig,
    normalized: Mapping[str, NormalizedText] | None = None,
    keys: Mapping[str, Keys] | None = None,
) -> Palette:
    """``representative`` and ``others`` are (id, original text) pairs; ``normalized`` holds
    their texts normalized, and ``keys`` the shingle keys of those, if made already (see
    :func:`normalized_texts` and :func:`shingle_keys_of`)."""
    if normalized is None:
        normalized = normalized_texts([representative[1], *(text for _id, text in others)], config)
    normalized_text = normalized.__getitem__

    def keys_of(text: str) -> Keys:
        return shingle_keys(text, ngram) if keys is None else keys[text]

    rep_id, rep_text = representative
    rep = normalized_text(rep_text)
    rep_index: NgramIndex | None = None  # built when a member differs from the representative
    rep_keys: Keys | None = None
    compared: dict[str, tuple[int, list[Block]]] = {}  # normalized text -> its alignment
    spans: dict[str, list[list[int]]] = {rep_id: []}
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
                rep_index = ngram_index(rep.text, ngram, keys_of(rep.text))
                rep_keys = sorted_unique(keys_of(rep.text))
            member_keys = keys_of(member.text)
            identical[member_id] = covered_chars(member_keys, rep_keys, ngram, len(member.text))
            blocks = shared_blocks(member.text, rep.text, ngram, rep_index, member_keys)
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
        spans[member_id] = span_rows(member, member_ranges)
    spans[rep_id] = span_rows(rep, _runs(colour_at))
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


def shingle_keys_of(texts: Iterable[str], ngram: int) -> dict[str, Keys]:
    """Each distinct text's ``shingle_keys``, made in batches (a call a text cost more in
    its fixed costs than in the work: the page's palettes compare tens of thousands)."""
    distinct = list(dict.fromkeys(texts))
    keys: dict[str, Keys] = {}
    for batch in in_batches(distinct, map(len, distinct), BATCH_CHARS):
        made, offsets = shingle_key_batch(batch, ngram)
        bounds = offsets.tolist()
        keys.update((text, made[bounds[n] : bounds[n + 1]]) for n, text in enumerate(batch))
    return keys


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
