"""The boilerplate step: URLs, domains and site slogans (data/boilerplate.tsv) found by their
patterns, each pattern tried only on texts that hold one of its trigger strings.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dedup.codepoints import code_points, from_code_points
from dedup.kernels import compiled
from dedup.kernels.rows import search_sorted
from dedup.normalize.records import NormalizeStats
from dedup.normalize.tables import (
    UNICODE_SIZE,
    ascii_lower_table,
    data_lines,
    fold,
    halfwidth_lower_table,
    halfwidth_table,
)


@functools.cache
def boilerplate_patterns() -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    """(pattern, triggers): a pattern is tried only on text holding one of its triggers (in
    lower case); a pattern without triggers is always tried."""
    patterns = []
    for pattern, triggers, *_why in data_lines("boilerplate.tsv"):
        expression = re.compile(pattern, re.IGNORECASE | re.MULTILINE)
        patterns.append((expression, tuple(t for t in triggers.split("|") if t)))
    return tuple(patterns)


@functools.cache
def _line_filters() -> tuple[re.Pattern[str] | None, ...]:
    """Per boilerplate pattern, what every line holding a match matches (the optional fourth
    column of boilerplate.tsv), or None."""
    return tuple(
        re.compile(rest[1], re.IGNORECASE) if len(rest) > 1 else None
        for _pattern, _triggers, *rest in data_lines("boilerplate.tsv")
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


def drop_boilerplate(
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
    if not present and not patterns_always_tried():
        return  # the common case: no trigger occurs at all
    lowered: str | None = None
    folded: str | None = None
    folded_codes = fold(codes, halfwidth_table())
    for (pattern, triggers), lines_with in zip(
        boilerplate_patterns(), _line_filters(), strict=True
    ):
        if triggers and not any(trigger in present for trigger in triggers):
            short = [trigger for trigger in triggers if len(trigger) < 2]
            if not short:
                continue
            lowered = lowered or from_code_points(fold(folded_codes, ascii_lower_table()))
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
def patterns_always_tried() -> bool:
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
    first = np.zeros(UNICODE_SIZE, dtype=np.bool_)
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


def _present_triggers(codes: npt.NDArray[np.uint32]) -> set[str]:
    """The triggers (of two characters or more) that occur in ``codes`` once full-width ASCII
    is folded to half-width and ASCII to lower case, as triggers are written."""
    bounds = np.array([0], dtype=np.int64), np.array([len(codes)], dtype=np.int64)
    return present_triggers_each(codes, *bounds)[0]


def present_triggers_each(
    codes: npt.NDArray[np.uint32], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> list[set[str]]:
    """:func:`_present_triggers` of each text ``codes[starts[i]:ends[i]]``, in one call."""
    triggers = _triggers()
    found = _find_triggers_each(
        codes,
        starts,
        ends,
        halfwidth_lower_table(),
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
        row = _find_triggers(
            codes[text_starts[text] : text_ends[text]],
            fold,
            first,
            bigrams,
            starts,
            order,
            trigger_codes,
            offsets,
        )
        for trigger in range(row.shape[0]):  # a loop: numba compiles row assignment slowly
            found[text, trigger] = row[trigger]
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
        group = search_sorted(bigrams, key)
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
