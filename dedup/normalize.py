"""Normalize stage: the same scene must read the same on every site.

Only the characters that carry the story are kept (letters, Han characters, digits), converted
to one script and one form. Each step can be switched off, and each counts what it did (shown by
``dedup normalize --explain`` and in the scan summary):

- ``boilerplate``: URLs, domains and site slogans from ``data/boilerplate.tsv``;
- ``repeated-lines``: lines that one source repeats in many chapters (learned from the dump);
- ``placeholders``: the ``*``, ``□``, ``×``, ``○`` sites put over censored words;
- ``punctuation``: punctuation, whitespace and invisible characters (zero-width, private-use
  glyphs of anti-scraping fonts);
- ``width``: NFKC (full-width letters and digits, compatibility ideographs), ASCII lower case;
- ``script``: OpenCC to one script;
- ``variants``: variants OpenCC leaves apart, from ``data/variants.tsv``.

The original text is never changed: every normalized character keeps the offset of the original
character it came from. OpenCC is called through ``dedup.script``.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from dedup.codepoints import code_points, from_code_points
from dedup.compiled import compiled
from dedup.config import NORMALIZE_STEPS as STEPS
from dedup.config import Script
from dedup.script import convert_codes

__all__ = [
    "BATCH_CHARS",
    "STEPS",
    "NormalizeConfig",
    "NormalizeStats",
    "NormalizedText",
    "in_batches",
    "line_key",
    "line_key_array",
    "line_keys",
    "normalize",
    "normalize_many",
    "prepare_tables",
]
# Traditional text arrives in OpenCC's own standard (爲/羣), Taiwan's (為/群/著) or Hong Kong's
# (衞). tw2s undoes Taiwan variants and converts; hk2s then folds the Hong Kong variants tw2s
# leaves. On Simplified input both are (nearly) the identity. Measured in benchmarks/bench_normalize.py.
TO_SIMPLIFIED_CONFIGS = ("tw2s", "hk2s")
TO_TRADITIONAL_CONFIG = "s2t"
PLACEHOLDERS = "*＊□■×✕○〇●◯"
_TABLE_LIMIT = 0x40000  # past the CJK extension planes nothing is story text
_UNICODE_SIZE = 0x110000  # tables span every code point, so a lookup needs no bounds check
_MIN_LINE_KEY_CHARS = 6  # shorter lines ("第一回", "完") are not learned as boilerplate
_EXAMPLES = 5


@dataclass(frozen=True, slots=True)
class NormalizeConfig:
    script: Script = "simplified"
    skip: frozenset[str] = frozenset()
    repeated_lines: frozenset[int] = frozenset()  # line keys (see line_key) to drop
    explain: bool = False  # collect examples of what each step did

    def on(self, step: str) -> bool:
        return step not in self.skip


@dataclass
class NormalizeStats:
    """What the steps did: counts of characters (and spans) removed or changed."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, name: str, count: int, example: str | None = None) -> None:
        if count:
            self.counts[name] = self.counts.get(name, 0) + count
        if example is not None:
            found = self.examples.setdefault(name, [])
            if len(found) < _EXAMPLES and example not in found:
                found.append(example)

    def merge(self, other: NormalizeStats, examples: bool = False) -> None:
        for name, count in other.counts.items():
            self.counts[name] = self.counts.get(name, 0) + count
        if examples:
            for name, found in other.examples.items():
                for example in found:
                    self.add(name, 0, example)


@dataclass(frozen=True, slots=True)
class NormalizedText:
    """``text[i]`` came from ``original[offsets[i]]``; ``converted[i]`` says whether script
    conversion changed that character (a Traditional original, when the target is Simplified)."""

    text: str
    offsets: npt.NDArray[np.int64]
    converted: npt.NDArray[np.bool_]
    stats: NormalizeStats
    # The code points of ``text`` and of the original, as normalize had them: passages are cut
    # from these, and encoding each chapter again cost a tenth of the cutting. None when
    # unknown.
    codes: npt.NDArray[np.uint32] | None = None
    original_codes: npt.NDArray[np.uint32] | None = None


@functools.cache
def _content_table() -> npt.NDArray[np.bool_]:
    """Which code points carry content: letters and numbers (not private-use glyphs, which
    anti-scraping fonts use, and not the placeholders over censored words)."""
    table = np.zeros(_UNICODE_SIZE, dtype=np.bool_)
    categories = map(unicodedata.category, _all_characters())
    table[:_TABLE_LIMIT] = np.fromiter(
        map(_CONTENT_CATEGORIES.__contains__, categories), dtype=np.bool_, count=_TABLE_LIMIT
    )
    return table


_CONTENT_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No"})


@functools.cache
def _all_characters() -> str:
    """Every code point below _TABLE_LIMIT, in order, as one string: the tables are built by
    mapping functions over it at C speed rather than by a Python loop over code points."""
    return "".join(map(chr, range(_TABLE_LIMIT)))


@functools.cache
def _placeholder_table() -> npt.NDArray[np.bool_]:
    table = np.zeros(_UNICODE_SIZE, dtype=np.bool_)
    for char in PLACEHOLDERS:
        table[ord(char)] = True
    return table


def _data_lines(name: str) -> Iterator[list[str]]:
    data = resources.files("dedup").joinpath(f"data/{name}").read_text("utf-8")
    for line in data.splitlines():
        if line and not line.startswith("#"):
            yield line.split("\t")


@functools.cache
def _variant_table() -> dict[int, str]:
    return {ord(variant): folded for variant, folded, *_why in _data_lines("variants.tsv")}


@functools.cache
def boilerplate_patterns() -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    """(pattern, triggers): a pattern is tried only on text holding one of its triggers (in
    lower case); a pattern without triggers is always tried."""
    patterns = []
    for pattern, triggers, *_why in _data_lines("boilerplate.tsv"):
        expression = re.compile(pattern, re.IGNORECASE | re.MULTILINE)
        patterns.append((expression, tuple(t for t in triggers.split("|") if t)))
    return tuple(patterns)


@functools.cache
def _line_filters() -> tuple[re.Pattern[str] | None, ...]:
    """Per boilerplate pattern, what every line holding a match matches (the optional fourth
    column of boilerplate.tsv), or None."""
    return tuple(
        re.compile(rest[1], re.IGNORECASE) if len(rest) > 1 else None
        for _pattern, _triggers, *rest in _data_lines("boilerplate.tsv")
    )


def boilerplate_matches(
    pattern: re.Pattern[str], lines_with: re.Pattern[str] | None, text: str
) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text)``, searched only in the lines ``lines_with`` finds something
    in when given. The same matches when no match of the pattern spans or looks across a line
    end: each match then lies in one line, and a search resumes after a match within its line."""
    if lines_with is None:
        yield from pattern.finditer(text)
        return
    line_end = -1
    for hint in lines_with.finditer(text):
        if hint.start() <= line_end:
            continue  # a line already searched
        line_start = text.rfind("\n", 0, hint.start()) + 1
        line_end = text.find("\n", hint.start())
        line_end = len(text) if line_end < 0 else line_end
        yield from pattern.finditer(text, line_start, line_end)


@functools.cache
def _halfwidth() -> dict[int, int]:
    """Full-width ASCII to ASCII, one character for one, so spans found on the folded copy are
    spans of the original."""
    table = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
    table[0x3000] = 0x20
    return table


_NOT_CONTENT = re.compile(r"[\W_]+")


def line_key(line: str) -> int | None:
    """A key for a line's content, for learning the lines a source repeats; None for lines too
    short to tell boilerplate from story. The key is FNV-1a (64-bit) over the code points of
    the line's letters and digits in lower case, its two halves folded into 32 bits."""
    content = _NOT_CONTENT.sub("", line).lower()
    if len(content) < _MIN_LINE_KEY_CHARS:
        return None
    value = _FNV_OFFSET
    for char in content:
        value = ((value ^ ord(char)) * _FNV_PRIME) & _MASK64
    return (value ^ (value >> 32)) & 0xFFFFFFFF


_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK64 = (1 << 64) - 1


def line_keys(text: str) -> list[int | None]:
    """``line_key`` of every line of ``text``, computed for the whole text at once. What
    line_key's pattern removes is exactly what the content table (letters and numbers) does not
    hold, so one table lookup replaces a regular expression per line, and lower case is a
    table lookup too, except for the few letters whose lower case depends on their neighbours
    or is longer than one character (then ``str.lower`` does it)."""
    return [key if key >= 0 else None for key in line_key_array(code_points(text)).tolist()]


def line_key_array(codes: npt.NDArray[np.uint32]) -> npt.NDArray[np.int64]:
    """:func:`line_keys` of the text whose code points are ``codes``, -1 where None."""
    keys, exact = _line_hashes(codes, _line_key_table(), _MIN_LINE_KEY_CHARS)
    if exact:
        return keys
    kept = _table_mask(codes, _content_table()) | (codes == ord("\n"))
    lowered = code_points(from_code_points(codes[kept]).lower())
    # Every character of the lowered text counts (İ's lower case brings a combining dot).
    everything = np.arange(_UNICODE_SIZE, dtype=np.uint32)
    everything[ord("\n")] = _NOT_KEYED
    keys, _exact = _line_hashes(lowered, everything, _MIN_LINE_KEY_CHARS)
    return keys


# What _line_hashes makes of a character, besides its lower case: not part of the key (not a
# letter or digit, or the newline that ends a line), or one whose lower case str.lower decides.
_NOT_KEYED = 0
_CONTEXTUAL = 0xFFFFFFFF


@functools.cache
def _line_key_table() -> npt.NDArray[np.uint32]:
    """One lookup per character for line keys: its lower case if it is a letter or digit,
    _CONTEXTUAL if that lower case depends on its neighbours or is longer, else _NOT_KEYED."""
    table = np.where(_content_table(), _lower_table(), _NOT_KEYED).astype(np.uint32)
    table[_contextual_lower_table()] = _CONTEXTUAL
    table[ord("\n")] = _NOT_KEYED
    return table


@functools.cache
def _lower_table() -> npt.NDArray[np.uint32]:
    """Each content character's lower case, where that is one character."""
    table = _identity_table().copy()
    codes = np.flatnonzero(_content_table())
    lowered = list(map(str.lower, map(chr, codes.tolist())))
    single = np.fromiter(map(len, lowered), dtype=np.int64, count=len(codes)) == 1
    table[codes[single]] = np.fromiter(
        (ord(char) for char, one in zip(lowered, single.tolist(), strict=True) if one),
        dtype=np.uint32,
    )
    return table


@functools.cache
def _contextual_lower_table() -> npt.NDArray[np.bool_]:
    """Content characters ``str.lower`` does not map one for one: İ becomes two characters,
    and Σ becomes ς or σ by the letters around it."""
    table = np.zeros(_UNICODE_SIZE, dtype=np.bool_)
    codes = np.flatnonzero(_content_table())
    lengths = np.fromiter(map(len, map(str.lower, map(chr, codes.tolist()))), np.int64)
    table[codes[lengths != 1]] = True
    table[ord("Σ")] = True
    return table


@compiled
def _line_hashes(
    codes: npt.NDArray[np.uint32], table: npt.NDArray[np.uint32], shortest: int
) -> tuple[npt.NDArray[np.int64], bool]:
    """For each line of ``codes`` (split at newlines): line_key's hash of the characters the
    table keys (by what it maps them to), or -1 if it has fewer than ``shortest`` of them; and
    False (with the keys unfinished) if a _CONTEXTUAL character came up. FNV-1a rather than a
    CRC: one multiplication a character instead of a chain of table lookups (7 -> 3.6 ns)."""
    lines = 1
    for code in codes:
        lines += code == 10
    keys = np.empty(lines, dtype=np.int64)
    line = 0
    length = 0
    value = np.uint64(_FNV_OFFSET)
    for code in codes:
        mapped = table[code]
        if mapped == _NOT_KEYED:
            if code == 10:
                keys[line] = _folded(value) if length >= shortest else -1
                line += 1
                length = 0
                value = np.uint64(_FNV_OFFSET)
            continue
        if mapped == _CONTEXTUAL:
            return keys, False
        value = (value ^ np.uint64(mapped)) * np.uint64(_FNV_PRIME)
        length += 1
    keys[line] = _folded(value) if length >= shortest else -1
    return keys, True


@compiled
def _folded(value: np.uint64) -> np.int64:
    return np.int64((value ^ (value >> np.uint64(32))) & np.uint64(0xFFFFFFFF))


@functools.lru_cache(maxsize=64)
def _key_array(keys: frozenset[int]) -> npt.NDArray[np.int64]:
    """A source's repeated line keys as a sorted array (one per source, made once)."""
    return np.array(sorted(keys), dtype=np.int64)


def _nfkc(
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
    single = _fold(codes, _nfkc_table())
    positions = np.flatnonzero(_table_mask(codes, _expanding_table()))
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
    table = _identity_table().copy()
    for code, target in _nfkc_single().items():
        if target >= 0:
            table[code] = target
    return table


def _table_mask(
    codes: npt.NDArray[np.uint32], table: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    return table[codes]


def normalize(original: str, config: NormalizeConfig | None = None) -> NormalizedText:
    """Reduce ``original`` to its story characters in one script, with offsets back into it."""
    config = config or NormalizeConfig()
    stats = NormalizeStats()
    codes = code_points(original)
    keep = np.ones(len(original), dtype=np.bool_)

    if config.on("boilerplate") and original:
        _drop_boilerplate(original, codes, keep, stats, config.explain)
    _drop_repeated_lines(original, codes, keep, config, stats)

    if _FAST_STEPS.isdisjoint(config.skip):
        kept, kept_offsets, counts = _keep_and_fold(
            codes,
            keep,
            _placeholder_table(),
            _content_table(),
            _expanding_table(),
            _width_table(),
        )
        if counts[3] == 0:  # no character NFKC expands: the fused pass is the whole story
            stats.add("placeholders", int(counts[0]))
            stats.add("punctuation", int(counts[1]))
            stats.add("width", int(counts[2]))
            return _convert_and_finish(original, codes, kept, kept_offsets, config, stats)

    original_codes = codes
    offsets = np.arange(len(original), dtype=np.int64)
    separators = 0
    if config.on("placeholders"):
        placeholder = _table_mask(codes, _placeholder_table()) & keep
        censoring = _beside_story_text(codes, placeholder, keep)
        stats.add("placeholders", censoring)
        separators = int(placeholder.sum()) - censoring
        keep &= ~placeholder
    if config.on("punctuation"):
        content = _table_mask(codes, _content_table())
        stats.add("punctuation", int((keep & ~content).sum()) + separators)
        keep &= content
    else:
        keep &= ~np.isin(codes, code_points(" \t\r\n\u3000\ufeff"))
    codes, offsets = codes[keep], offsets[keep]

    if config.on("width"):
        if _table_mask(codes, _expanding_table()).any():
            # A character NFKC turns into several (㈠ -> (一)): the slow path, offsets repeated.
            codes, offsets = _nfkc(codes, offsets)
            if config.on("punctuation"):
                content = _table_mask(codes, _content_table())
                codes, offsets = codes[content], offsets[content]
        folded = _fold(codes, _width_table())
        stats.add("width", int(np.count_nonzero(folded != codes)))
        codes = folded
    return _convert_and_finish(original, original_codes, codes, offsets, config, stats)


def _beside_story_text(
    codes: npt.NDArray[np.uint32], placeholder: npt.NDArray[np.bool_], keep: npt.NDArray[np.bool_]
) -> int:
    """How many of the ``placeholder`` characters are on a line with story text (censoring, as
    _keep_and_fold counts it), not on a line of their own (a separator)."""
    if not placeholder.any():
        return 0
    line = np.cumsum(codes == ord("\n"))
    story = keep & ~placeholder & _table_mask(codes, _content_table())
    has_story = np.zeros(int(line[-1]) + 1, dtype=np.bool_)
    has_story[line[story]] = True
    return int(np.count_nonzero(placeholder & has_story[line]))


def _drop_repeated_lines(
    original: str,
    codes: npt.NDArray[np.uint32],
    keep: npt.NDArray[np.bool_],
    config: NormalizeConfig,
    stats: NormalizeStats,
    text_starts: npt.NDArray[np.int64] | None = None,
) -> None:
    """Drop the lines the source repeats; ``text_starts``: where each text of a joined batch
    begins (one text when None). A text that would lose more than REPEATED_MAX_SHARE of its
    characters this way keeps them all: that is a chapter the source carries more than once
    (or a page that is all boilerplate), not story text framed by a site's lines."""
    if not config.on("repeated-lines") or not config.repeated_lines:
        return
    keys = line_key_array(codes)
    repeated_keys = _key_array(config.repeated_lines)
    at = np.minimum(np.searchsorted(repeated_keys, keys), len(repeated_keys) - 1)
    repeated = np.flatnonzero(repeated_keys[at] == keys)
    if not len(repeated):
        return
    newlines = np.flatnonzero(codes == ord("\n"))
    starts = np.concatenate(([0], newlines + 1))[repeated]
    ends = np.append(newlines, len(original))[repeated]
    bounds = np.array([0], dtype=np.int64) if text_starts is None else text_starts
    text_of = np.searchsorted(bounds, starts, side="right") - 1
    lengths = np.diff(np.append(bounds, len(original)))
    dropped = np.bincount(text_of, weights=ends - starts, minlength=len(bounds))
    spared = dropped > REPEATED_MAX_SHARE * lengths
    for start, end, text in zip(starts.tolist(), ends.tolist(), text_of.tolist(), strict=True):
        if spared[text]:
            continue
        keep[start:end] = False
        stats.add("repeated-lines", 1, original[start:end].strip() if config.explain else None)


def normalize_many(
    texts: Sequence[str], config: NormalizeConfig | None = None
) -> tuple[list[NormalizedText], NormalizeStats]:
    """:func:`normalize` of each text, and what the steps did to them all (each result's own
    ``stats`` are left empty). The same results as one call per text (tested), in one pass
    over all of them: a scan normalizes a novel chapter by chapter, and for chapters of a few
    thousand characters the fixed cost of the steps' dozen array calls was a quarter of the
    time. Nothing reaches from one text into the next: the texts are joined by newlines that
    are dropped before anything else, lines are taken one by one, the boilerplate patterns
    run on each text that holds a trigger, and script conversion breaks its runs between
    texts."""
    config = config or NormalizeConfig()
    if len(texts) < 2 or config.explain or not _FAST_STEPS.isdisjoint(config.skip):
        return _one_by_one(texts, config)
    joined = "\n".join(texts)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    starts = np.concatenate(([0], np.cumsum(lengths + 1)[:-1]))
    codes = code_points(joined)
    expanding = _texts_holding(codes, _kept_expanding_table(), starts, starts + lengths)
    if expanding.any():  # a character NFKC expands: the slow path for the texts that hold one
        return _apart_where_expanding(texts, config, expanding)
    keep = np.ones(len(joined), dtype=np.bool_)
    keep[starts[1:] - 1] = False  # the joining newlines
    stats = NormalizeStats()
    if config.on("boilerplate"):
        present = _present_triggers_each(codes, starts, starts + lengths)
        always = _patterns_always_tried()
        for text, start, found in zip(texts, starts.tolist(), present, strict=True):
            if text and (found or always):  # views: spans are dropped from the joined arrays
                end = start + len(text)
                _drop_boilerplate(text, codes[start:end], keep[start:end], stats, False, found)
    _drop_repeated_lines(joined, codes, keep, config, stats, starts)
    kept, offsets, counts = _keep_and_fold(
        codes, keep, _placeholder_table(), _content_table(), _expanding_table(), _width_table()
    )
    stats.add("placeholders", int(counts[0]))
    stats.add("punctuation", int(counts[1]))
    stats.add("width", int(counts[2]))
    bounds = np.searchsorted(offsets, starts)  # where each text's characters begin in kept
    final, converted = _to_one_script(kept, config, stats, bounds[1:])
    text = from_code_points(final)
    results = []
    for number, (low, high) in enumerate(itertools.pairwise([*bounds.tolist(), len(final)])):
        start = int(starts[number])
        results.append(
            NormalizedText(
                text[low:high],
                offsets[low:high] - start,
                converted[low:high],
                NormalizeStats(),
                final[low:high],
                codes[start : start + int(lengths[number])],
            )
        )
    return results, stats


# Texts are normalized together, this many characters at a time: the steps' fixed costs are
# paid once per batch rather than once per text, while a batch's arrays stay small enough to
# sit in the processor's caches.
BATCH_CHARS = 1 << 16

Item = TypeVar("Item")


def in_batches(items: Iterable[Item], sizes: Iterable[int], limit: int) -> Iterator[list[Item]]:
    """``items`` in consecutive lists, each closed once the ``sizes`` of its items reach
    ``limit`` (normalize_many's batches: ``limit`` is BATCH_CHARS, the sizes characters)."""
    batch: list[Item] = []
    size = 0
    for item, item_size in zip(items, sizes, strict=True):
        batch.append(item)
        size += item_size
        if size >= limit:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _apart_where_expanding(
    texts: Sequence[str], config: NormalizeConfig, expanding: npt.NDArray[np.bool_]
) -> tuple[list[NormalizedText], NormalizeStats]:
    """normalize_many where some texts hold a character NFKC expands (``expanding``, per text):
    those alone (normalize's slow path, should the character be kept), the rest together.
    Decided before any step runs, so no text is normalized twice."""
    slow = np.flatnonzero(expanding).tolist()
    fast = np.flatnonzero(~expanding).tolist()
    results: list[NormalizedText | None] = [None] * len(texts)
    stats = NormalizeStats()
    for numbers, (done, done_stats) in (
        (slow, _one_by_one([texts[i] for i in slow], config)),
        (fast, normalize_many([texts[i] for i in fast], config)),
    ):
        for number, normalized in zip(numbers, done, strict=True):
            results[number] = normalized
        stats.merge(done_stats)
    return [normalized for normalized in results if normalized is not None], stats


@compiled
def _texts_holding(
    codes: npt.NDArray[np.uint32],
    table: npt.NDArray[np.bool_],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
) -> npt.NDArray[np.bool_]:
    """Whether each text ``codes[starts[i]:ends[i]]`` holds a character the table marks."""
    holding = np.zeros(starts.shape[0], dtype=np.bool_)
    for text in range(starts.shape[0]):
        for position in range(starts[text], ends[text]):
            if table[codes[position]]:
                holding[text] = True
                break
    return holding


def _one_by_one(
    texts: Sequence[str], config: NormalizeConfig
) -> tuple[list[NormalizedText], NormalizeStats]:
    stats = NormalizeStats()
    results = []
    for text in texts:
        normalized = normalize(text, config)
        stats.merge(normalized.stats, examples=True)
        results.append(replace(normalized, stats=NormalizeStats()))
    return results, stats


# With these steps on (the default), dropping placeholders and punctuation and folding widths
# is one compiled pass (_keep_and_fold); otherwise, or when a character NFKC expands into
# several is kept, the same steps run as separate numpy operations.
_FAST_STEPS = frozenset({"placeholders", "punctuation", "width"})


@compiled
def _keep_and_fold(
    codes: npt.NDArray[np.uint32],
    keep: npt.NDArray[np.bool_],
    placeholder: npt.NDArray[np.bool_],
    content: npt.NDArray[np.bool_],
    expanding: npt.NDArray[np.bool_],
    width: npt.NDArray[np.uint32],
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The kept characters that are content, width-folded, with their offsets; and counts of
    placeholders dropped, other non-content characters dropped, characters folded, and kept
    characters that NFKC expands (the caller's slow path handles those). A placeholder on a
    line with no story character is a separator (a banner of ****), counted as punctuation:
    only one beside story text stands for a censored word."""
    out = np.empty(codes.shape[0], dtype=np.uint32)
    offsets = np.empty(codes.shape[0], dtype=np.int64)
    counts = np.zeros(4, dtype=np.int64)
    kept = 0
    line_placeholders = 0
    line_has_content = False
    for index in range(codes.shape[0]):
        code = codes[index]
        if code == 10:  # a line ends: its placeholders were censoring or a separator
            counts[0 if line_has_content else 1] += line_placeholders
            line_placeholders = 0
            line_has_content = False
        if not keep[index]:
            continue
        if placeholder[code]:
            line_placeholders += 1
        elif not content[code]:
            counts[1] += 1
        else:
            line_has_content = True
            if expanding[code]:
                counts[3] += 1
            folded = width[code]
            if folded != code:
                counts[2] += 1
            out[kept] = folded
            offsets[kept] = index
            kept += 1
    counts[0 if line_has_content else 1] += line_placeholders
    return out[:kept], offsets[:kept], counts


def _convert_and_finish(
    original: str,
    original_codes: npt.NDArray[np.uint32],
    codes: npt.NDArray[np.uint32],
    offsets: npt.NDArray[np.int64],
    config: NormalizeConfig,
    stats: NormalizeStats,
) -> NormalizedText:
    """The script and variant steps, and the normalized text."""
    codes, converted = _to_one_script(codes, config, stats)
    text = from_code_points(codes)
    if config.explain:
        _explain_examples(original, text, offsets, converted, stats)
    return NormalizedText(text, offsets, converted, stats, codes, original_codes)


def _to_one_script(
    codes: npt.NDArray[np.uint32],
    config: NormalizeConfig,
    stats: NormalizeStats,
    breaks: npt.NDArray[np.int64] | None = None,
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.bool_]]:
    """The script and variant steps: the codes, and which ones conversion changed (each text
    between ``breaks`` converted on its own)."""
    converted = np.zeros(len(codes), dtype=np.bool_)
    if config.on("script"):
        # Always through Simplified: every Traditional standard converges on it and the variant
        # table folds there; the Traditional target is one canonical s2t of that.
        simplified = convert_codes(codes, TO_SIMPLIFIED_CONFIGS, breaks)
        converted = simplified != codes
        stats.add("script", int(converted.sum()))
        codes = simplified
    if config.on("variants"):
        folded = _fold(codes, _variant_code_table())
        stats.add("variants", int(np.count_nonzero(folded != codes)))
        codes = folded
    if config.on("script") and config.script == "traditional":
        codes = convert_codes(codes, (TO_TRADITIONAL_CONFIG,), breaks)
    return codes, converted


def prepare_tables() -> None:
    """Build the lookup tables (about half a second) once, before worker processes are forked,
    so that every worker inherits them instead of building its own."""
    normalize("預熱ＡＢ１２㈠，什么著書")
    normalize_many(["預熱ＡＢ１２，什么著書", "http://www.x.com 第二"])


def _drop_boilerplate(
    original: str,
    codes: npt.NDArray[np.uint32],
    keep: npt.NDArray[np.bool_],
    stats: NormalizeStats,
    explain: bool,
    present: set[str] | None = None,
) -> None:
    """Mark the spans the boilerplate patterns match (``present``: the triggers in the text,
    if known). They run on a copy with full-width ASCII
    folded to half-width (same length, so spans carry over), and only when one of a pattern's
    trigger strings occurs: most chapters have no ads, and finding which triggers occur at all
    (by their first two characters, in one vectorized pass) is far cheaper than a regular
    expression or a substring search per trigger."""
    present = _present_triggers(codes) if present is None else present
    if not present and not _patterns_always_tried():
        return  # the common case: no trigger occurs at all
    lowered: str | None = None
    folded: str | None = None
    folded_codes = _fold(codes, _halfwidth_table())
    for (pattern, triggers), lines_with in zip(
        boilerplate_patterns(), _line_filters(), strict=True
    ):
        if triggers and not any(trigger in present for trigger in triggers):
            short = [trigger for trigger in triggers if len(trigger) < 2]
            if not short:
                continue
            lowered = lowered or from_code_points(_fold(folded_codes, _ascii_lower_table()))
            if not any(trigger in lowered for trigger in short):
                continue
        folded = folded or from_code_points(folded_codes)
        for match in boilerplate_matches(pattern, lines_with, folded):
            if match.end() > match.start() and keep[match.start() : match.end()].any():
                keep[match.start() : match.end()] = False
                span = original[match.start() : match.end()].strip() if explain else None
                stats.add("boilerplate", 1, span)


def _bigram(text: str) -> int:
    """The first two characters of a trigger as one number."""
    return (ord(text[0]) << 21) | ord(text[1])


@functools.cache
def _patterns_always_tried() -> bool:
    """Whether some pattern has no trigger, or one too short to be found by its first two
    characters (those are looked for by a substring search)."""
    return any(not t or min(map(len, t)) < 2 for _pattern, t in boilerplate_patterns())


@dataclass(frozen=True, slots=True)
class _Triggers:
    """The triggers of two characters or more, for the compiled search: grouped by their first
    two characters (sorted ``bigrams``; group ``g`` is ``order[starts[g]:starts[g + 1]]``), each
    trigger's code points at ``codes[offsets[t]:offsets[t + 1]]``."""

    texts: tuple[str, ...]
    first: npt.NDArray[np.bool_]  # which characters start a trigger
    bigrams: npt.NDArray[np.int64]
    starts: npt.NDArray[np.int64]
    order: npt.NDArray[np.int64]
    codes: npt.NDArray[np.uint32]
    offsets: npt.NDArray[np.int64]


@functools.cache
def _triggers() -> _Triggers:
    texts = tuple(sorted({t for _p, found in boilerplate_patterns() for t in found if len(t) >= 2}))
    keys = np.array([_bigram(t) for t in texts], dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    bigrams, starts = np.unique(keys[order], return_index=True)
    first = np.zeros(_UNICODE_SIZE, dtype=np.bool_)
    first[[ord(t[0]) for t in texts]] = True
    lengths = np.array([len(t) for t in texts], dtype=np.int64)
    return _Triggers(
        texts,
        first,
        bigrams.astype(np.int64),
        np.append(starts, len(texts)).astype(np.int64),
        order.astype(np.int64),
        code_points("".join(texts)),
        np.concatenate(([0], np.cumsum(lengths))).astype(np.int64),
    )


@functools.cache
def _halfwidth_lower_table() -> npt.NDArray[np.uint32]:
    return _ascii_lower_table()[_halfwidth_table()]


def _present_triggers(codes: npt.NDArray[np.uint32]) -> set[str]:
    """The triggers (of two characters or more) that occur in ``codes`` once full-width ASCII
    is folded to half-width and ASCII to lower case, as triggers are written."""
    bounds = np.array([0], dtype=np.int64), np.array([len(codes)], dtype=np.int64)
    return _present_triggers_each(codes, *bounds)[0]


def _present_triggers_each(
    codes: npt.NDArray[np.uint32], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> list[set[str]]:
    """:func:`_present_triggers` of each text ``codes[starts[i]:ends[i]]``, in one call."""
    triggers = _triggers()
    found = _find_triggers_each(
        codes,
        starts,
        ends,
        _halfwidth_lower_table(),
        triggers.first,
        triggers.bigrams,
        triggers.starts,
        triggers.order,
        triggers.codes,
        triggers.offsets,
    )
    present: list[set[str]] = [set() for _start in starts]
    for text, trigger in zip(*np.nonzero(found), strict=True):
        present[int(text)].add(triggers.texts[int(trigger)])
    return present


@compiled
def _find_triggers_each(
    codes: npt.NDArray[np.uint32],
    text_starts: npt.NDArray[np.int64],
    text_ends: npt.NDArray[np.int64],
    fold: npt.NDArray[np.uint32],
    first: npt.NDArray[np.bool_],
    bigrams: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    order: npt.NDArray[np.int64],
    trigger_codes: npt.NDArray[np.uint32],
    offsets: npt.NDArray[np.int64],
) -> npt.NDArray[np.bool_]:
    """_find_triggers of each text ``codes[text_starts[i]:text_ends[i]]`` (a row each)."""
    found = np.zeros((text_starts.shape[0], order.shape[0]), dtype=np.bool_)
    for text in range(text_starts.shape[0]):
        found[text] = _find_triggers(
            codes[text_starts[text] : text_ends[text]],
            fold,
            first,
            bigrams,
            starts,
            order,
            trigger_codes,
            offsets,
        )
    return found


@compiled
def _find_triggers(
    codes: npt.NDArray[np.uint32],
    fold: npt.NDArray[np.uint32],
    first: npt.NDArray[np.bool_],
    bigrams: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    order: npt.NDArray[np.int64],
    trigger_codes: npt.NDArray[np.uint32],
    offsets: npt.NDArray[np.int64],
) -> npt.NDArray[np.bool_]:
    """Which triggers occur in the folded text: at each position whose first two characters
    start some trigger, the triggers with those two are compared in full."""
    found = np.zeros(order.shape[0], dtype=np.bool_)
    size = codes.shape[0]
    for index in range(size - 1):
        head = fold[codes[index]]
        if not first[head]:
            continue
        key = (np.int64(head) << 21) | fold[codes[index + 1]]
        group = np.searchsorted(bigrams, key)
        if group == bigrams.shape[0] or bigrams[group] != key:
            continue
        for member in range(starts[group], starts[group + 1]):
            trigger = order[member]
            start, end = offsets[trigger], offsets[trigger + 1]
            if found[trigger] or index + end - start > size:
                continue
            same = True
            for offset in range(2, end - start):
                if fold[codes[index + offset]] != trigger_codes[start + offset]:
                    same = False
                    break
            found[trigger] = same
    return found


@compiled
def _fold(codes: npt.NDArray[np.uint32], table: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """Map every code point through ``table`` (``table[codes]``, which numpy does eight times
    slower: it first widens every index to 64 bits)."""
    folded = np.empty(codes.shape[0], dtype=np.uint32)
    for position in range(codes.shape[0]):
        folded[position] = table[codes[position]]
    return folded


@functools.cache
def _identity_table() -> npt.NDArray[np.uint32]:
    return np.arange(_UNICODE_SIZE, dtype=np.uint32)


@functools.cache
def _halfwidth_table() -> npt.NDArray[np.uint32]:
    table = _identity_table().copy()
    for code, target in _halfwidth().items():
        table[code] = target
    return table


@functools.cache
def _ascii_lower_table() -> npt.NDArray[np.uint32]:
    table = _identity_table().copy()
    table[ord("A") : ord("Z") + 1] += 32
    return table


@functools.cache
def _nfkc_single() -> dict[int, int]:
    """Code points NFKC maps to one other character, and the ones it expands (value -1)."""
    normalized = np.fromiter(
        map(functools.partial(unicodedata.is_normalized, "NFKC"), _all_characters()),
        dtype=np.bool_,
        count=_TABLE_LIMIT,
    )
    mapping: dict[int, int] = {}
    for code in np.flatnonzero(~normalized).tolist():
        mapped = unicodedata.normalize("NFKC", chr(code))
        mapping[code] = ord(mapped) if len(mapped) == 1 else -1
    return mapping


@functools.cache
def _width_table() -> npt.NDArray[np.uint32]:
    """NFKC one-to-one (full-width letters and digits, compatibility ideographs, Kangxi
    radicals), then ASCII lower case."""
    table = _nfkc_table().copy()
    upper = table[(table >= ord("A")) & (table <= ord("Z"))]
    table[(table >= ord("A")) & (table <= ord("Z"))] = upper + 32
    return table


@functools.cache
def _expanding_table() -> npt.NDArray[np.bool_]:
    table = np.zeros(_UNICODE_SIZE, dtype=np.bool_)
    for code, target in _nfkc_single().items():
        if target < 0:
            table[code] = True
    return table


@functools.cache
def _kept_expanding_table() -> npt.NDArray[np.bool_]:
    """Characters NFKC expands that normalization may keep (content, not placeholders): a
    text holding none never takes the slow path. "…" expands too, but is punctuation."""
    return _expanding_table() & _content_table() & ~_placeholder_table()


@functools.cache
def _variant_code_table() -> npt.NDArray[np.uint32]:
    table = _identity_table().copy()
    for code, folded in _variant_table().items():
        table[code] = ord(folded)
    return table


def _explain_examples(
    original: str,
    text: str,
    offsets: npt.NDArray[np.int64],
    converted: npt.NDArray[np.bool_],
    stats: NormalizeStats,
) -> None:
    for index in np.flatnonzero(converted)[:_EXAMPLES]:
        stats.add("script", 0, f"{original[int(offsets[index])]}→{text[int(index)]}")


# A line is site boilerplate when its source repeats it in at least this many chapters, and in
# at least this share of them: a slogan after every chapter qualifies, a poem quoted twice not.
REPEATED_MIN_CHAPTERS = 3
REPEATED_MIN_SHARE = 0.1
# ...and a text keeps its repeated lines when they would be more than this share of it.
REPEATED_MAX_SHARE = 0.5


def repeated_lines_needed(chapters: int) -> int:
    """In how many of a source's ``chapters`` a line must occur to be boilerplate."""
    return max(REPEATED_MIN_CHAPTERS, int(np.ceil(REPEATED_MIN_SHARE * chapters)))
