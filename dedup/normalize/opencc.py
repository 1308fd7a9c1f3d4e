"""Script conversion with OpenCC, run only where one of its dictionaries can change the text.

OpenCC converts by longest match, left to right: it cuts the text at the matches of a phrase
dictionary, then each piece goes through the conversion chain, whose dictionaries again match
longest keys first, inside the piece. Call a character a *phrase character* when it occurs in a
multi-character key of any of these dictionaries (or its own entry turns it into one). Then:

- any other character can only ever be matched alone: no match reaches across it, so the text
  on either side converts independently, and the character converts exactly as it does on its
  own (a table lookup);
- a run of phrase characters between two such characters converts as it would alone, and if it
  holds no character that some dictionary entry replaces, nothing in it changes.

So only the runs that hold a replaceable character go through OpenCC, all in one call, joined by
newlines (a newline is in no key, so the runs stay apart). On Simplified text that is about 3%
of the characters, on Traditional text about 40%; the rest is table lookups, and the result
equals OpenCC's on the whole text (tests/test_script.py). And since a run converts the same
wherever it stands, each process remembers the runs it has converted (a bounded hash table in
arrays the compiled loop reads): words and names recur through a novel and across the sites
that carry it, so most runs never reach OpenCC a second time.

The two character sets per conversion are in ``data/opencc_tables.json``, made from the
installed dictionaries by ``benchmarks/make_opencc_tables.py`` together with each file's
SHA-256. If the installed files are not those, every text goes through OpenCC whole: slower,
never different.

This is the only module that imports opencc.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt
import opencc

from dedup.codepoints import code_points, from_code_points
from dedup.kernels import compiled
from dedup.kernels.hashing import FNV_OFFSET, fnv1a
from dedup.kernels.tables import probe, rehashed

__all__ = [
    "FAST_CONFIGS",
    "TABLES_FILE",
    "convert",
    "convert_codes",
    "fast_path_ready",
    "opencc_data_dir",
]

log = logging.getLogger(__name__)

FAST_CONFIGS = ("tw2s", "hk2s")
TABLES_FILE = "opencc_tables.json"
UNICODE_SIZE = 0x110000
# When a phrase rule changes the length, the characters are converted one by one so that
# offsets stay valid; without the fast path that is decided per chunk of this many characters.
_CONVERT_CHUNK = 64


# What the tables say of a character (bits of one uint8, so one lookup per character).
_PHRASE = 1  # may be matched together with a neighbour
_CHANGING = 2  # some dictionary entry replaces it


@dataclass(frozen=True, slots=True)
class _Tables:
    kind: npt.NDArray[np.uint8]  # _PHRASE | _CHANGING per code point
    alone: npt.NDArray[np.uint32]  # what a character becomes matched on its own


def opencc_data_dir() -> Path:
    return Path(opencc.__file__).parent / "clib" / "share" / "opencc"


@functools.cache
def _converter(config: str) -> opencc.OpenCC:
    return opencc.OpenCC(config)


@functools.cache
def _convert_alone(char: str, config: str) -> str:
    converted: str = _converter(config).convert(char)
    return converted if len(converted) == 1 else char


@functools.cache
def _tables(config: str) -> _Tables | None:
    """The character sets for ``config``, or None when the installed dictionaries are not the
    ones they were made from."""
    if config not in FAST_CONFIGS:
        return None
    shipped = json.loads(
        resources.files("dedup").joinpath(f"data/{TABLES_FILE}").read_text("utf-8")
    )
    entry = shipped["configs"][config]
    data = opencc_data_dir()
    for name, digest in entry["files"].items():
        path = data / name
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            log.info(
                "OpenCC's %s differs from the one dedup's tables were made from: "
                "converting whole texts (slower, same result)",
                name,
            )
            return None
    kind = np.zeros(UNICODE_SIZE, dtype=np.uint8)
    kind[code_points(entry["phrase_chars"])] |= _PHRASE
    kind[code_points(entry["changing_chars"])] |= _CHANGING
    alone = np.arange(UNICODE_SIZE, dtype=np.uint32)
    for char in entry["changing_chars"]:
        alone[ord(char)] = ord(_convert_alone(char, config))
    return _Tables(kind, alone)


def fast_path_ready(config: str) -> bool:
    """Whether ``config`` converts through the tables (the installed dictionaries match)."""
    return _tables(config) is not None


def convert(text: str, configs: tuple[str, ...]) -> str:
    """``text`` through each OpenCC configuration in turn, one character for one (a phrase rule
    that would change the length is given up for character-by-character conversion), so that
    offsets into the text stay valid."""
    return from_code_points(convert_codes(code_points(text), configs))


def convert_codes(
    codes: npt.NDArray[np.uint32],
    configs: tuple[str, ...],
    breaks: npt.NDArray[np.int64] | None = None,
) -> npt.NDArray[np.uint32]:
    """:func:`convert` on an array of code points; with ``breaks`` (ascending positions), the
    texts between them are converted each on its own, as if in separate calls."""
    breaks = _NO_BREAKS if breaks is None else breaks
    for config in configs:
        tables = _tables(config)
        if tables is None:
            codes = np.concatenate(
                [
                    code_points(_convert_whole(from_code_points(piece), config))
                    for piece in np.split(codes, breaks)
                ]
            ).astype(np.uint32)
        else:
            codes = _convert_runs(codes, config, tables, breaks)
    return codes


_NO_BREAKS = np.empty(0, dtype=np.int64)


def _convert_runs(
    codes: npt.NDArray[np.uint32], config: str, tables: _Tables, breaks: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint32]:
    cache = _run_cache(config)
    out, joined, starts, ends, hashes = _plan_runs(
        codes, tables.kind, tables.alone, cache.records, cache.store, breaks
    )
    if not len(starts):
        return out
    converted = code_points(_converter(config).convert(from_code_points(joined)))
    if _place_runs(out, converted, starts, ends):
        cache.make_room(len(starts), int((ends - starts).sum()))
        _remember_runs(codes, out, starts, ends, hashes, cache.records, cache.store, cache.used)
        return out
    # Some rule changed a run's length: that run is converted one character at a time.
    runs = from_code_points(joined).split("\n")
    for start, run, new in zip(
        starts.tolist(), runs, from_code_points(converted).split("\n"), strict=True
    ):
        if len(new) != len(run):
            new = "".join(_convert_alone(char, config) for char in run)
        out[start : start + len(run)] = code_points(new)
    return out


# The run cache of a process, per configuration: at most this many runs, and this many
# characters of them (about 50 MB when full).
_CACHE_RUNS = 1 << 19
_CACHE_CHARS = 1 << 21
_FIRST_RUNS = 1 << 12  # it starts small and doubles as it fills
# A run's record: its hash, where it is in the store, its length (0: a free slot). Records sit
# in the slots themselves (twice as many slots as runs, so probes stay short), and the store
# holds each run followed by its conversion: a lookup touches one record and one stretch of
# the store, and a table only as large as the runs it holds stays in the processor's caches,
# which matters since a Traditional text looks up a run every few characters.
_HASH, _STORED, _LENGTH = 0, 1, 2


@dataclass
class _RunCache:
    records: npt.NDArray[np.int64]
    store: npt.NDArray[np.uint32]
    used: npt.NDArray[np.int64]  # runs and store positions taken
    runs: int  # the most it will hold
    chars: int

    def make_room(self, runs: int, chars: int) -> None:
        """Grow (up to the limits) so that ``runs`` more runs of ``chars`` characters fit."""
        slots = self.records.shape[0]
        while 2 * (int(self.used[0]) + runs) > slots and slots < 2 * self.runs:
            slots *= 2
        if slots != self.records.shape[0]:
            self.records = rehashed(self.records, slots, _HASH, _LENGTH, 0)
        size = self.store.shape[0]
        while int(self.used[1]) + 2 * chars > size and size < 2 * self.chars:
            size *= 2
        if size != self.store.shape[0]:
            store = np.zeros(min(size, 2 * self.chars), dtype=np.uint32)
            store[: self.store.shape[0]] = self.store
            self.store = store


def _new_run_cache(runs: int = _CACHE_RUNS, chars: int = _CACHE_CHARS) -> _RunCache:
    """An empty run cache; ``runs`` must be a power of two."""
    first = min(runs, _FIRST_RUNS)
    return _RunCache(
        np.zeros((2 * first, 4), dtype=np.int64),
        np.zeros(min(2 * chars, 8 * first), dtype=np.uint32),
        np.zeros(2, dtype=np.int64),
        runs,
        chars,
    )


@functools.cache
def _run_cache(config: str) -> _RunCache:
    return _new_run_cache()


@compiled
def _run_hash(codes: npt.NDArray[np.uint32], start: int, end: int) -> np.int64:
    """FNV-1a over the code points of a run (as a signed 64-bit number)."""
    value = np.uint64(FNV_OFFSET)
    for position in range(start, end):
        value = fnv1a(value, np.uint64(codes[position]))
    return np.int64(value)


@compiled
def _cached_run(
    codes: npt.NDArray[np.uint32],
    start: int,
    end: int,
    value: np.int64,
    records: npt.NDArray[np.int64],
    store: npt.NDArray[np.uint32],
) -> tuple[int, int]:
    """(where the conversion of the stored run equal to ``codes[start:end]`` begins in the
    store, or -1; the slot it is in, or the free slot where it would go)."""
    mask = records.shape[0] - 1
    length = end - start
    slot = probe(records, value, _HASH, value, _LENGTH, length, _LENGTH, 0)
    while records[slot, _LENGTH] != 0:  # a run of this hash and length: the same run?
        stored = records[slot, _STORED]
        same = True
        for offset in range(length):
            if store[stored + offset] != codes[start + offset]:
                same = False
                break
        if same:
            return stored + length, slot
        slot = probe(records, (slot + 1) & mask, _HASH, value, _LENGTH, length, _LENGTH, 0)
    return -1, slot


@compiled
def _plan_runs(
    codes: npt.NDArray[np.uint32],
    kind: npt.NDArray[np.uint8],
    alone: npt.NDArray[np.uint32],
    records: npt.NDArray[np.int64],
    store: npt.NDArray[np.uint32],
    breaks: npt.NDArray[np.int64],
) -> tuple[
    npt.NDArray[np.uint32],
    npt.NDArray[np.uint32],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
]:
    """One pass over the text: characters outside phrases converted alone (into ``out``, the
    rest copied), runs already in the cache converted from it, and the other runs of phrase
    characters that hold a changing one (``starts``, ``ends``, their hashes), joined by
    newlines into ``joined`` for OpenCC. No run reaches across a position in ``breaks``."""
    size = codes.shape[0]
    out = np.empty(size, dtype=np.uint32)
    starts = np.empty(size, dtype=np.int64)
    ends = np.empty(size, dtype=np.int64)
    run_hashes = np.empty(size, dtype=np.int64)
    runs = 0
    joined_size = 0
    position = 0
    piece = 0  # breaks[piece - 1] <= position < breaks[piece]: the text position is in
    # Every character is first taken as converted alone (unchanged unless it is a changing
    # character): right for all but the runs that hold a changing phrase character, which are
    # found from their first such character and done whole before going on past them.
    while position < size:
        code = codes[position]
        out[position] = alone[code]
        if kind[code] != _PHRASE | _CHANGING:
            position += 1
            continue
        while piece < breaks.shape[0] and breaks[piece] <= position:
            piece += 1
        low = breaks[piece - 1] if piece > 0 else 0
        high = breaks[piece] if piece < breaks.shape[0] else size
        start = position  # the characters before it in its run are unchanging: out is right
        while start > low and kind[codes[start - 1]] & _PHRASE:
            start -= 1
        end = position + 1
        while end < high and kind[codes[end]] & _PHRASE:
            end += 1
        value = _run_hash(codes, start, end)
        converted, _slot = _cached_run(codes, start, end, value, records, store)
        if converted >= 0:
            for offset in range(end - start):
                out[start + offset] = store[converted + offset]
        else:
            for offset in range(position, end):
                out[offset] = codes[offset]
            starts[runs] = start
            ends[runs] = end
            run_hashes[runs] = value
            joined_size += end - start + (1 if runs else 0)
            runs += 1
        position = end
    joined = np.empty(joined_size, dtype=np.uint32)
    cursor = 0
    for run in range(runs):
        if run:
            joined[cursor] = 10  # newline
            cursor += 1
        for position in range(starts[run], ends[run]):
            joined[cursor] = codes[position]
            cursor += 1
    return out, joined, starts[:runs], ends[:runs], run_hashes[:runs]


@compiled
def _remember_runs(
    codes: npt.NDArray[np.uint32],
    out: npt.NDArray[np.uint32],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    run_hashes: npt.NDArray[np.int64],
    records: npt.NDArray[np.int64],
    store: npt.NDArray[np.uint32],
    used: npt.NDArray[np.int64],
) -> None:
    """Store each run ``codes[start:end]`` with its conversion ``out[start:end]``, until the
    cache is full (then the runs it holds keep being used, and new ones go to OpenCC)."""
    for run in range(starts.shape[0]):
        start, end = starts[run], ends[run]
        length = end - start
        if 2 * used[0] >= records.shape[0] or used[1] + 2 * length > store.shape[0]:
            return
        converted, slot = _cached_run(codes, start, end, run_hashes[run], records, store)
        if converted >= 0:
            continue  # the same run came up twice in one text
        stored = used[1]
        for offset in range(length):
            store[stored + offset] = codes[start + offset]
            store[stored + length + offset] = out[start + offset]
        records[slot, _HASH] = run_hashes[run]
        records[slot, _STORED] = stored
        records[slot, _LENGTH] = length
        used[0] += 1
        used[1] = stored + 2 * length


@compiled
def _place_runs(
    out: npt.NDArray[np.uint32],
    converted: npt.NDArray[np.uint32],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
) -> bool:
    """Copy each converted run back to its place; False (``out`` partly written) when some run
    came back with another length (no run holds a newline, so the newlines show where each
    converted run ends)."""
    cursor = 0
    for run in range(starts.shape[0]):
        length = ends[run] - starts[run]
        if cursor + length > converted.shape[0]:
            return False
        for offset in range(length):
            if converted[cursor + offset] == 10:
                return False
            out[starts[run] + offset] = converted[cursor + offset]
        cursor += length
        if cursor < converted.shape[0]:
            if converted[cursor] != 10:
                return False
            cursor += 1
    return bool(cursor == converted.shape[0])


def _convert_whole(text: str, config: str) -> str:
    converted: str = _converter(config).convert(text)
    if len(converted) == len(text):
        return converted
    pieces = []
    for start in range(0, len(text), _CONVERT_CHUNK):
        chunk = text[start : start + _CONVERT_CHUNK]
        piece: str = _converter(config).convert(chunk)
        if len(piece) != len(chunk):
            piece = "".join(_convert_alone(char, config) for char in chunk)
        pieces.append(piece)
    return "".join(pieces)
