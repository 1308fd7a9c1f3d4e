"""Align stage: the stretches two documents share, found seed -> extend -> filter on their
normalized text (the scheme of the PAN text-alignment task, written for characters).

- **seed**: every k-character string of one document is looked up among the other's (a hash
  table of the second's, rolling hashes); a string the second document holds more than
  ``MAX_SEED_REPEATS`` times (a laugh, a drum roll) seeds nothing.
- **extend**: each seed is run out along its diagonal, both ways, to the longest identical
  stretch; seeds inside a stretch found already are passed over.
- **chain**: stretches in order along the first document join one shared span when the gaps
  between them on both sides are short (a typo, a renamed character, a censored word, an ad the
  normalization left in), with the two sides' gaps within as much of each other.
- **filter**: a span keeps when it holds at least ``min_identical`` identical characters (not
  counting those inside strings too common to seed), at least half of its length on either
  side; of spans that overlap on either side the one with
  more identical characters is kept.

Retrieval for it (which documents to align at all) is winnowing (Schleimer, Wilkerson and Aiken
2003) over the same seeds, in the workers: :func:`winnowed_seeds` keeps, of every ``window``
consecutive seed hashes of a passage, the least, so that any identical stretch of
``window + k - 1`` characters gives both documents at least one kept hash in common, wherever
the passage cuts fall (docs/quality.md says what this found that passage LSH did not).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dedup.config import AlignConfig
from dedup.kernels import compiled
from dedup.kernels.rows import sort_rows, stable_order, with_room_for_rows

WINNOW_WINDOW = 16  # chosen by the quality benchmark (docs/quality.md)
MAX_SEED_REPEATS = 16
_SKIP_AFTER = 4  # seed lengths: an identical stretch this long is not looked into for others
_STRIDE = 4  # positions between seeds looked up far from any stretch found (_identical_runs)
_LOOK_BACK = 2  # chains' reaches looked back from a seed held there

_MULTIPLIER = np.uint64(0x100000001B3)
_MIX = np.uint64(0x9E3779B97F4A7C15)

Spans = npt.NDArray[np.int64]  # rows (a_start, a_end, b_start, b_end, identical_chars)
SeedTable = tuple[
    npt.NDArray[np.uint64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
]


def align(a: npt.NDArray[np.uint32], b: npt.NDArray[np.uint32], config: AlignConfig) -> Spans:
    """The spans ``a`` and ``b`` (normalized code points) share, in order along ``a``: rows of
    (a_start, a_end, b_start, b_end, identical_chars), ends exclusive."""
    return aligned_spans(a, b, config.seed_chars, config.max_gap, config.min_identical)


@compiled
def _mixed(value: np.uint64) -> np.uint64:
    value ^= value >> np.uint64(31)
    value *= _MIX
    value ^= value >> np.uint64(29)
    return value


@compiled
def _kmer_hashes(codes: npt.NDArray[np.uint32], k: int) -> npt.NDArray[np.uint64]:
    """The rolling hash of each k-character string of ``codes`` (by its start)."""
    count = codes.shape[0] - k + 1
    if count <= 0:
        return np.empty(0, dtype=np.uint64)
    power = np.uint64(1)
    for _ in range(k - 1):
        power *= _MULTIPLIER
    hashes = np.empty(count, dtype=np.uint64)
    value = np.uint64(0)
    for position in range(k):
        value = value * _MULTIPLIER + np.uint64(codes[position]) + np.uint64(1)
    hashes[0] = value
    for start in range(1, count):
        value -= (np.uint64(codes[start - 1]) + np.uint64(1)) * power
        value = value * _MULTIPLIER + np.uint64(codes[start + k - 1]) + np.uint64(1)
        hashes[start] = value
    return hashes


@compiled
def winnowed_seeds(
    codes: npt.NDArray[np.uint32],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    k: int,
    window: int,
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """The winnowed seed hashes of each passage ``codes[starts[i]:ends[i]]`` (32 bits each) and
    the passage each belongs to; a passage's hash is kept once however often it is chosen."""
    total = 0
    for passage in range(starts.shape[0]):
        total += max(0, ends[passage] - starts[passage])
    found = np.empty(total, dtype=np.uint32)
    owner = np.empty(total, dtype=np.int64)
    count = 0
    for passage in range(starts.shape[0]):
        hashes = _kmer_hashes(codes[starts[passage] : ends[passage]], k)
        size = hashes.shape[0]
        if size == 0:
            continue
        for position in range(size):
            hashes[position] = _mixed(hashes[position])
        span = min(window, size)
        best = -1
        for left in range(size - span + 1):
            # the rightmost least hash of the window, as Schleimer et al. choose it: only
            # looked for afresh when the last one left the window
            right = left + span - 1
            if best < left:
                best = left
                for position in range(left + 1, right + 1):
                    if hashes[position] <= hashes[best]:
                        best = position
            elif hashes[right] <= hashes[best]:
                best = right
            else:
                continue
            found[count] = np.uint32(hashes[best] >> np.uint64(32))
            owner[count] = passage
            count += 1
    return found[:count].copy(), owner[:count].copy()


@compiled
def aligned_spans(
    a: npt.NDArray[np.uint32],
    b: npt.NDArray[np.uint32],
    k: int,
    max_gap: int,
    min_identical: int,
) -> Spans:
    """:func:`align`, compiled."""
    return spans_with_table(a, b, seed_table(b, k), False, k, max_gap, min_identical)


@compiled
def seed_table(codes: npt.NDArray[np.uint32], k: int) -> SeedTable:
    """The k-character strings of ``codes`` as a hash table: keys, the first position of each
    (-1: a free slot), how many times each occurs, and each position's next of the same; and
    how many of the strings before each position are too common to seed (a prefix sum)."""
    hashes = _kmer_hashes(codes, k)
    slots = 1
    while slots < 2 * hashes.shape[0]:
        slots *= 2
    mask = np.uint64(slots - 1)
    keys = np.zeros(slots, dtype=np.uint64)
    heads = np.full(slots, -1, dtype=np.int64)
    repeats = np.zeros(slots, dtype=np.int64)
    following = np.full(hashes.shape[0], -1, dtype=np.int64)
    slot_of = np.empty(hashes.shape[0], dtype=np.int64)
    for position in range(hashes.shape[0] - 1, -1, -1):  # each chain ascending
        key = hashes[position]
        slot = _mixed(key) & mask
        while heads[slot] != -1 and keys[slot] != key:
            slot = (slot + np.uint64(1)) & mask
        keys[slot] = key
        following[position] = heads[slot]
        heads[slot] = position
        repeats[slot] += 1
        slot_of[position] = slot
    common = np.zeros(hashes.shape[0] + 1, dtype=np.int64)
    for position in range(hashes.shape[0]):
        common[position + 1] = common[position] + (repeats[slot_of[position]] > MAX_SEED_REPEATS)
    return keys, heads, repeats, following, common


@compiled
def spans_with_table(
    scanned: npt.NDArray[np.uint32],
    held: npt.NDArray[np.uint32],
    table: SeedTable,
    held_is_a: bool,
    k: int,
    max_gap: int,
    min_identical: int,
) -> Spans:
    """The spans ``scanned`` and ``held`` share, ``table`` being held's seed_table (made once
    for a document aligned with many): a is ``held`` if ``held_is_a``, else ``scanned``."""
    none = np.empty((0, 5), dtype=np.int64)
    if scanned.shape[0] < k or held.shape[0] < k:
        return none
    runs = _identical_runs(scanned, held, table, k, max_gap)
    if runs.shape[0] == 0:
        return none
    if held_is_a:
        for row in range(runs.shape[0]):
            runs[row, 0], runs[row, 1] = runs[row, 1], runs[row, 0]
        runs = sort_rows(runs, runs.shape[0], 0, 1, 4)
    chains = _chained(runs, k, max_gap)
    return _filtered(chains, min_identical)


@compiled
def _held_slot(table: SeedTable, key: np.uint64) -> np.int64:
    """The slot of ``key`` in a seed table, or -1 where the held document does not have the
    string or has it too often to seed."""
    keys, heads, repeats = table[0], table[1], table[2]
    mask = np.uint64(keys.shape[0] - 1)
    slot = _mixed(key) & mask
    while heads[slot] != -1 and keys[slot] != key:
        slot = (slot + np.uint64(1)) & mask
    if heads[slot] == -1 or repeats[slot] > MAX_SEED_REPEATS:
        return np.int64(-1)
    return np.int64(slot)  # not int(): numba would type int(a uint64) and -1 as one float


@compiled
def _identical_runs(
    scanned: npt.NDArray[np.uint32],
    held: npt.NDArray[np.uint32],
    table: SeedTable,
    k: int,
    max_gap: int,
) -> Spans:
    """Rows (scanned start, held start, length, informative) of the identical stretches seeds
    grow into, sorted; informative: the length less the strings inside it too common to seed
    (a run through "nbsp;nbsp;..." or a laugh is long, and says nothing).

    Far from any stretch found, seeds are looked up only every _STRIDE positions: a stretch of
    ``k + _STRIDE - 1`` characters or more holds one of them; from the first held, every
    position from ``_LOOK_BACK`` chains' reach before it is looked up, so the shorter
    stretches a chain begins with are found too. What is passed over is a stretch too short to
    hold a strided seed with none found near it, which no span is made of unless others as
    short follow it (docs/performance.md: most pairs across groups share little, and looking
    up each of their positions was most of the alignment's time)."""
    heads, following, common = table[1], table[3], table[4]
    reach = max_gap + k  # how far from a stretch the next one of its chain may begin
    # Where the last stretch on each diagonal ended along scanned.
    # Diagonals are many (every offset of a long held document) but few have a seed: a small
    # table of them, not an array over all (which a book-length document made costly to
    # clear for each short one aligned with it).
    diagonals = np.full(64, -1, dtype=np.int64)
    reached_at = np.zeros(64, dtype=np.int64)
    diagonal_count = 0
    runs = np.empty((16, 4), dtype=np.int64)
    count = 0
    hashes = _kmer_hashes(scanned, k)
    start = 0
    near_until = 0  # positions before this are near a stretch found, or a seed held
    while start < hashes.shape[0]:
        if start >= near_until:
            probe = start
            while probe < hashes.shape[0] and _held_slot(table, hashes[probe]) == -1:
                probe += _STRIDE
            if probe >= hashes.shape[0]:
                break
            start = max(start, probe - _LOOK_BACK * reach)
            near_until = probe + 1
        slot = _held_slot(table, hashes[start])
        if slot == -1:
            start += 1
            continue
        furthest = start  # where the longest stretch found from here ends
        other = heads[slot]
        while other != -1:
            diagonal = other - start + scanned.shape[0]
            if 2 * (diagonal_count + 1) > diagonals.shape[0]:
                diagonals, reached_at = _grown_diagonals(diagonals, reached_at)
            at = _diagonal_slot(diagonals, diagonal)
            if diagonals[at] == -1:
                diagonals[at] = diagonal
                diagonal_count += 1
            if reached_at[at] <= start:
                length = 0
                while (
                    start + length < scanned.shape[0]
                    and other + length < held.shape[0]
                    and scanned[start + length] == held[other + length]
                ):
                    length += 1
                if length >= k:
                    back = 0
                    while (
                        start - back > reached_at[at]
                        and other - back > 0
                        and scanned[start - back - 1] == held[other - back - 1]
                    ):
                        back += 1
                    runs = with_room_for_rows(runs, count, 1)
                    runs[count, 0] = start - back
                    runs[count, 1] = other - back
                    runs[count, 2] = length + back
                    first, last = other - back, other + length - k + 1
                    runs[count, 3] = length + back - (common[last] - common[first])
                    count += 1
                    reached_at[at] = start + length
                    furthest = max(furthest, start + length)
                    near_until = max(near_until, start + length + reach)
            other = following[other]
        # Inside a long identical stretch, a seed on another diagonal could only make a span
        # that overlaps this one, which the filter cuts away: the scan goes on near its end
        # (a copied chapter is one lookup per stretch, not one per character).
        if furthest - start >= _SKIP_AFTER * k:
            start = furthest - k + 1
        else:
            start += 1
    return sort_rows(runs, count, 0, 1, 4)


@compiled
def _diagonal_slot(diagonals: npt.NDArray[np.int64], diagonal: int) -> int:
    mask = diagonals.shape[0] - 1
    slot = (diagonal * 0x2545F4914F6CDD1D) & mask
    while diagonals[slot] != -1 and diagonals[slot] != diagonal:
        slot = (slot + 1) & mask
    return int(slot)


@compiled
def _grown_diagonals(
    diagonals: npt.NDArray[np.int64], reached_at: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    grown = np.full(diagonals.shape[0] * 2, -1, dtype=np.int64)
    values = np.zeros(diagonals.shape[0] * 2, dtype=np.int64)
    for old in range(diagonals.shape[0]):
        if diagonals[old] != -1:
            slot = _diagonal_slot(grown, diagonals[old])
            grown[slot] = diagonals[old]
            values[slot] = reached_at[old]
    return grown, values


@compiled
def _chained(runs: Spans, k: int, max_gap: int) -> Spans:
    """Rows (a_start, a_end, b_start, b_end, identical, informative) of the runs joined into
    chains: a run joins the open chain it follows most closely on both sides, gaps at most ``max_gap`` and
    the two sides' gaps within ``max_gap`` of each other (a small overlap, from runs that
    share characters at their ends, counts as no gap)."""
    chains = np.empty((runs.shape[0], 6), dtype=np.int64)
    count = 0
    open_chains = np.empty(runs.shape[0], dtype=np.int64)
    open_count = 0
    for run in range(runs.shape[0]):
        a_start, b_start, length = runs[run, 0], runs[run, 1], runs[run, 2]
        best, best_cost = -1, 1 << 62
        kept = 0
        for index in range(open_count):
            chain = open_chains[index]
            if chains[chain, 1] < a_start - max_gap:
                continue  # closed for good: runs come in order along a
            open_chains[kept] = chain
            kept += 1
            a_gap = a_start - chains[chain, 1]
            b_gap = b_start - chains[chain, 3]
            if a_gap < -k or b_gap < -k or b_gap > max_gap:
                continue
            drift = abs(a_gap - b_gap)
            if drift > max_gap:
                continue
            cost = max(a_gap, 0) + max(b_gap, 0) + drift
            if cost < best_cost:
                best, best_cost = chain, cost
        open_count = kept
        a_end, b_end = a_start + length, b_start + length
        if best == -1:
            chains[count, 0], chains[count, 1] = a_start, a_end
            chains[count, 2], chains[count, 3] = b_start, b_end
            chains[count, 4] = length
            chains[count, 5] = runs[run, 3]
            open_chains[open_count] = count
            open_count += 1
            count += 1
            continue
        added = max(0, a_end - max(a_start, chains[best, 1]))
        chains[best, 4] += added
        chains[best, 5] += runs[run, 3] * added // max(1, length)
        chains[best, 1] = max(chains[best, 1], a_end)
        chains[best, 3] = max(chains[best, 3], b_end)
    return chains[:count]


@compiled
def _filtered(chains: Spans, min_identical: int) -> Spans:
    """The chains that hold enough identical characters, densely enough, along a. Where two
    overlap on either side (a stretch one document repeats), the one with more identical
    characters is kept whole and the other is cut back to what it does not share with it (its
    identical characters taken in proportion), if enough is left."""
    strong = np.empty((chains.shape[0], 6), dtype=np.int64)
    found = 0
    for row in range(chains.shape[0]):
        longest = max(chains[row, 1] - chains[row, 0], chains[row, 3] - chains[row, 2])
        if chains[row, 5] >= min_identical and 2 * chains[row, 4] >= longest:
            for column in range(6):
                strong[found, column] = chains[row, column]
            found += 1
    fewer_first = np.empty(found, dtype=np.int64)
    for row in range(found):
        fewer_first[row] = -strong[row, 4]
    order = stable_order(fewer_first)
    kept = np.empty((found, 6), dtype=np.int64)
    count = 0
    chain = np.empty(6, dtype=np.int64)
    for index in range(order.shape[0]):
        for column in range(6):
            chain[column] = strong[order[index], column]
        alive = True
        changed = True
        while alive and changed:
            changed = False
            for number in range(count):
                for side in (0, 2):
                    low, high = kept[number, side], kept[number, side + 1]
                    if not (chain[side] < high and low < chain[side + 1]):
                        continue
                    before = chain[side + 1] - chain[side]
                    left, right = low - chain[side], chain[side + 1] - high
                    if left >= right:  # keep what comes before the other
                        cut = chain[side + 1] - max(low, chain[side])
                        chain[1] -= cut
                        chain[3] -= cut
                    else:
                        cut = min(high, chain[side + 1]) - chain[side]
                        chain[0] += cut
                        chain[2] += cut
                    size = max(chain[1] - chain[0], chain[3] - chain[2])
                    if chain[1] <= chain[0] or chain[3] <= chain[2] or before <= 0:
                        alive = False
                        break
                    chain[4] = chain[4] * (before - cut) // before
                    chain[5] = chain[5] * (before - cut) // before
                    if chain[5] < min_identical or 2 * chain[4] < size:
                        alive = False
                        break
                    changed = True
                if not alive:
                    break
        if alive:
            for column in range(6):
                kept[count, column] = chain[column]
            count += 1
    ordered: Spans = sort_rows(kept, count, 0, 2, 5)
    return ordered
