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
from dedup.kernels import compiled
from dedup.normalize import (
    BATCH_CHARS,
    NormalizeConfig,
    NormalizedText,
    in_batches,
    normalize_many,
)
from dedup.verify import (
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


Ranges = list[tuple[int, int, int]] | npt.NDArray[np.int64]


def spans_in_original(normalized: NormalizedText, ranges: Ranges) -> list[Span]:
    """(normalized start, length, colour) ranges as spans of the original text."""
    return [Span(*row) for row in span_rows(normalized, ranges)]


def span_rows(normalized: NormalizedText, ranges: Ranges) -> list[list[int]]:
    """(normalized start, length, colour) ranges (tuples, or rows of an array) as ``[start,
    end, colour]`` rows of the original text: a span from its first character's original to
    its last's, inclusive."""
    if not len(ranges):
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
    # normalized text -> its characters covered, and its blocks (shared_blocks)
    compared: dict[str, tuple[int, npt.NDArray[np.int64]]] = {}
    spans: dict[str, list[list[int]]] = {rep_id: []}
    identical: dict[str, int] = {}
    whole = np.array([[0, 0, len(rep.text)]] if len(rep.text) >= ngram else [], np.int64).reshape(
        -1, 3
    )
    # Each normalized position of the representative takes the colour of the first member
    # stretch that covers it (-1: none yet); a stretch is coloured by where it starts in the
    # representative.
    colour_at = np.full(len(rep.text), -1, dtype=np.int64)
    colours = np.zeros(1, dtype=np.int64)  # the colours given so far
    for member_id, text in others:
        member = normalized_text(text)
        if member.text == rep.text:  # the usual case: the same scene, other script or layout
            identical[member_id] = len(member.text)
            blocks = whole
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
        spans[member_id] = span_rows(member, _coloured(blocks, colour_at, colours))
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


@compiled
def _coloured(
    blocks: npt.NDArray[np.int64], colour_at: npt.NDArray[np.int64], colours: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """A member's blocks ``(start, representative's start, length)`` as ``(start, length,
    colour)`` ranges: each block takes the colour of the representative's position it starts
    at, or a new one (``colours[0]`` counts them), and gives it to the positions it covers
    that have none yet."""
    ranges = np.empty((blocks.shape[0], 3), dtype=np.int64)
    for number in range(blocks.shape[0]):
        start, at, length = blocks[number, 0], blocks[number, 1], blocks[number, 2]
        colour = colour_at[at]
        if colour < 0:
            colour = colours[0]
            colours[0] += 1
        for position in range(at, at + length):
            if colour_at[position] < 0:
                colour_at[position] = colour
        ranges[number, 0], ranges[number, 1], ranges[number, 2] = start, length, colour
    return ranges


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
