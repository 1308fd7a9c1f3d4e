"""Character tables of the normalize stage, one entry per code point (looked up in bulk by
numpy or the compiled loops): what is story text, what is a censorship placeholder, width and
NFKC folding, variants.
"""

from __future__ import annotations

import functools
import unicodedata
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from dedup.codepoints import code_points, from_code_points
from dedup.kernels import compiled

PLACEHOLDERS = "*＊□■×✕○〇●◯"


_TABLE_LIMIT = 0x40000  # past the CJK extension planes nothing is story text


UNICODE_SIZE = 0x110000  # tables span every code point, so a lookup needs no bounds check


@functools.cache
def content_table() -> npt.NDArray[np.bool_]:
    """Which code points carry content: letters and numbers (not private-use glyphs, which
    anti-scraping fonts use, and not the placeholders over censored words)."""
    table = np.zeros(UNICODE_SIZE, dtype=np.bool_)
    table[:_TABLE_LIMIT] = unicode_facts().content
    return table


_CONTENT_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No"})


@dataclass(frozen=True)
class UnicodeFacts:
    """What the tables take from ``unicodedata``, for the code points below _TABLE_LIMIT."""

    content: npt.NDArray[np.bool_]  # a letter or number, by its category
    nfkc_codes: npt.NDArray[np.int64]  # the characters NFKC changes, ascending
    nfkc_targets: npt.NDArray[np.int64]  # the one character each becomes, or -1: several
    lower_codes: npt.NDArray[np.int64]  # content characters whose lower case is another one
    lower_targets: npt.NDArray[np.int64]
    longer_lower: npt.NDArray[np.int64]  # content characters whose lower case is several

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnicodeFacts) and all(
            np.array_equal(getattr(self, name), getattr(other, name))
            for name in self.__dataclass_fields__
        )


UNICODE_FACTS_FILE = "unicode_facts.npz"
# The facts the file holds as they are (``content`` is packed eight to a byte).
_ARRAYS = tuple(UnicodeFacts.__dataclass_fields__)[1:]


@functools.cache
def unicode_facts() -> UnicodeFacts:
    """The facts as shipped in ``data/unicode_facts.npz`` when they were made under this
    Python's Unicode version (reading them takes milliseconds, computing them a fifth of a
    second, in every process that normalizes); else computed."""
    try:
        with resources.files("dedup").joinpath(f"data/{UNICODE_FACTS_FILE}").open("rb") as file:
            shipped = np.load(file)
            if str(shipped["unicode_version"]) == unicodedata.unidata_version:
                return UnicodeFacts(
                    np.unpackbits(shipped["content"], count=_TABLE_LIMIT).astype(np.bool_),
                    *(shipped[name] for name in _ARRAYS),
                )
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):  # computed, as below
        pass
    return computed_unicode_facts()


def computed_unicode_facts() -> UnicodeFacts:
    """The facts, from ``unicodedata``."""
    characters = _all_characters()
    categories = map(unicodedata.category, characters)
    content = np.fromiter(
        map(_CONTENT_CATEGORIES.__contains__, categories), dtype=np.bool_, count=_TABLE_LIMIT
    )
    normalized = np.fromiter(
        map(functools.partial(unicodedata.is_normalized, "NFKC"), characters),
        dtype=np.bool_,
        count=_TABLE_LIMIT,
    )
    nfkc_codes = np.flatnonzero(~normalized)
    nfkc = [unicodedata.normalize("NFKC", chr(code)) for code in nfkc_codes.tolist()]
    nfkc_targets = [ord(mapped) if len(mapped) == 1 else -1 for mapped in nfkc]
    codes = np.flatnonzero(content)
    lowered = list(map(str.lower, map(chr, codes.tolist())))
    lengths = np.fromiter(map(len, lowered), dtype=np.int64, count=len(codes))
    single = [ord(char) if len(char) == 1 else -1 for char in lowered]
    changed = (lengths == 1) & (np.array(single, dtype=np.int64) != codes)
    return UnicodeFacts(
        content,
        nfkc_codes.astype(np.int64),
        np.array(nfkc_targets, dtype=np.int64),
        codes[changed].astype(np.int64),
        np.array(single, dtype=np.int64)[changed],
        codes[lengths != 1].astype(np.int64),
    )


def _all_characters() -> str:
    """Every code point below _TABLE_LIMIT, in order, as one string: the facts are found by
    mapping functions over it at C speed rather than by a Python loop over code points."""
    return "".join(map(chr, range(_TABLE_LIMIT)))


def write_unicode_facts(path: Path) -> None:
    """``data/unicode_facts.npz``: the facts computed under this Python's Unicode version."""
    facts = computed_unicode_facts()
    with open(path, "wb") as file:
        np.savez_compressed(
            file,
            unicode_version=np.array(unicodedata.unidata_version),
            content=np.packbits(facts.content),
            **{name: getattr(facts, name) for name in _ARRAYS},
        )


@functools.cache
def placeholder_table() -> npt.NDArray[np.bool_]:
    table = np.zeros(UNICODE_SIZE, dtype=np.bool_)
    for char in PLACEHOLDERS:
        table[ord(char)] = True
    return table


def data_lines(name: str) -> Iterator[list[str]]:
    data = resources.files("dedup").joinpath(f"data/{name}").read_text("utf-8")
    for line in data.splitlines():
        if line and not line.startswith("#"):
            yield line.split("\t")


@functools.cache
def _variant_table() -> dict[int, str]:
    return {ord(variant): folded for variant, folded, *_why in data_lines("variants.tsv")}


@functools.cache
def _halfwidth() -> dict[int, int]:
    """Full-width ASCII to ASCII, one character for one, so spans found on the folded copy are
    spans of the original."""
    table = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
    table[0x3000] = 0x20
    return table


def nfkc(
    codes: npt.NDArray[np.uint32], offsets: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """NFKC per character (full-width letters and digits, compatibility ideographs, ①→1) of
    the text whose code points are ``codes``; a character that expands (㈠→(一)) repeats its
    offset. Done by table, and only the expanding characters one by one (there are few)."""
    if len(codes) and int(codes.max()) >= _TABLE_LIMIT:  # past the tables: per character
        text = from_code_points(codes)
        normalized = [unicodedata.normalize("NFKC", char) for char in text]
        counts = np.fromiter(map(len, normalized), dtype=np.int64, count=len(normalized))
        return code_points("".join(normalized)), np.repeat(offsets, counts)
    single = fold(codes, _nfkc_table())
    positions = np.flatnonzero(table_mask(codes, expanding_table()))
    if not len(positions):
        return single, offsets
    pieces = [_nfkc_expansion(code) for code in codes[positions].tolist()]
    lengths = np.ones(len(codes), dtype=np.int64)
    lengths[positions] = [len(piece) for piece in pieces]
    expanded = np.repeat(single, lengths)
    starts = (np.cumsum(lengths) - lengths)[positions]
    for start, piece in zip(starts.tolist(), pieces, strict=True):
        expanded[start : start + len(piece)] = piece
    return expanded, np.repeat(offsets, lengths)


@functools.lru_cache(maxsize=4096)
def _nfkc_expansion(code: int) -> npt.NDArray[np.uint32]:
    return code_points(unicodedata.normalize("NFKC", chr(code)))


@functools.cache
def _nfkc_table() -> npt.NDArray[np.uint32]:
    """NFKC of each character it maps to one other (identity for the rest)."""
    table = identity_table().copy()
    for code, target in _nfkc_single().items():
        if target >= 0:
            table[code] = target
    return table


def table_mask(
    codes: npt.NDArray[np.uint32], table: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    return table[codes]


@compiled
def fold(codes: npt.NDArray[np.uint32], table: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """Map every code point through ``table`` (``table[codes]``, which numpy does eight times
    slower: it first widens every index to 64 bits)."""
    folded = np.empty(codes.shape[0], dtype=np.uint32)
    for position in range(codes.shape[0]):
        folded[position] = table[codes[position]]
    return folded


@functools.cache
def identity_table() -> npt.NDArray[np.uint32]:
    return np.arange(UNICODE_SIZE, dtype=np.uint32)


@functools.cache
def halfwidth_table() -> npt.NDArray[np.uint32]:
    table = identity_table().copy()
    for code, target in _halfwidth().items():
        table[code] = target
    return table


@functools.cache
def ascii_lower_table() -> npt.NDArray[np.uint32]:
    table = identity_table().copy()
    table[ord("A") : ord("Z") + 1] += 32
    return table


@functools.cache
def _nfkc_single() -> dict[int, int]:
    """Code points NFKC maps to one other character, and the ones it expands (value -1)."""
    facts = unicode_facts()
    return dict(zip(facts.nfkc_codes.tolist(), facts.nfkc_targets.tolist(), strict=True))


@functools.cache
def width_table() -> npt.NDArray[np.uint32]:
    """NFKC one-to-one (full-width letters and digits, compatibility ideographs, Kangxi
    radicals), then ASCII lower case."""
    table = _nfkc_table().copy()
    upper = table[(table >= ord("A")) & (table <= ord("Z"))]
    table[(table >= ord("A")) & (table <= ord("Z"))] = upper + 32
    return table


@functools.cache
def expanding_table() -> npt.NDArray[np.bool_]:
    table = np.zeros(UNICODE_SIZE, dtype=np.bool_)
    for code, target in _nfkc_single().items():
        if target < 0:
            table[code] = True
    return table


@functools.cache
def kept_expanding_table() -> npt.NDArray[np.bool_]:
    """Characters NFKC expands that normalization may keep (content, not placeholders): a
    text holding none never takes the slow path. "…" expands too, but is punctuation."""
    return expanding_table() & content_table() & ~placeholder_table()


@functools.cache
def variant_code_table() -> npt.NDArray[np.uint32]:
    table = identity_table().copy()
    for code, folded in _variant_table().items():
        table[code] = ord(folded)
    return table


@functools.cache
def halfwidth_lower_table() -> npt.NDArray[np.uint32]:
    return ascii_lower_table()[halfwidth_table()]
