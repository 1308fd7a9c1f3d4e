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
character it came from. OpenCC is called through ``dedup.normalize.opencc``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from dedup.codepoints import code_points, from_code_points
from dedup.kernels import compiled
from dedup.normalize.boilerplate import (
    drop_boilerplate,
    patterns_always_tried,
    present_triggers_each,
)
from dedup.normalize.line_keys import drop_repeated_lines
from dedup.normalize.opencc import convert_codes
from dedup.normalize.records import EXAMPLES, NormalizeConfig, NormalizedText, NormalizeStats
from dedup.normalize.tables import (
    content_table,
    expanding_table,
    fold,
    kept_expanding_table,
    nfkc,
    placeholder_table,
    table_mask,
    variant_code_table,
    width_table,
)

# Traditional text arrives in OpenCC's own standard (爲/羣), Taiwan's (為/群/著) or Hong Kong's
# (衞). tw2s undoes Taiwan variants and converts; hk2s then folds the Hong Kong variants tw2s
# leaves. On Simplified input both are (nearly) the identity. Measured in benchmarks/bench_normalize.py.
TO_SIMPLIFIED_CONFIGS = ("tw2s", "hk2s")


TO_TRADITIONAL_CONFIG = "s2t"


def normalize(original: str, config: NormalizeConfig | None = None) -> NormalizedText:
    """Reduce ``original`` to its story characters in one script, with offsets back into it."""
    config = config or NormalizeConfig()
    stats = NormalizeStats()
    codes = code_points(original)
    keep = np.ones(len(original), dtype=np.bool_)

    if config.on("boilerplate") and original:
        drop_boilerplate(original, codes, keep, stats, config.explain)
    drop_repeated_lines(original, codes, keep, config, stats)

    if _FAST_STEPS.isdisjoint(config.skip):
        kept, kept_offsets, counts = _keep_and_fold(
            codes,
            keep,
            placeholder_table(),
            content_table(),
            expanding_table(),
            width_table(),
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
        placeholder = table_mask(codes, placeholder_table()) & keep
        censoring = _beside_story_text(codes, placeholder, keep)
        stats.add("placeholders", censoring)
        separators = int(placeholder.sum()) - censoring
        keep &= ~placeholder
    if config.on("punctuation"):
        content = table_mask(codes, content_table())
        stats.add("punctuation", int((keep & ~content).sum()) + separators)
        keep &= content
    else:
        keep &= ~np.isin(codes, code_points(" \t\r\n\u3000\ufeff"))
    codes, offsets = codes[keep], offsets[keep]

    if config.on("width"):
        if table_mask(codes, expanding_table()).any():
            # A character NFKC turns into several (㈠ -> (一)): the slow path, offsets repeated.
            codes, offsets = nfkc(codes, offsets)
            if config.on("punctuation"):
                content = table_mask(codes, content_table())
                codes, offsets = codes[content], offsets[content]
        folded = fold(codes, width_table())
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
    story = keep & ~placeholder & table_mask(codes, content_table())
    has_story = np.zeros(int(line[-1]) + 1, dtype=np.bool_)
    has_story[line[story]] = True
    return int(np.count_nonzero(placeholder & has_story[line]))


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
    expanding = _texts_holding(codes, kept_expanding_table(), starts, starts + lengths)
    if expanding.any():  # a character NFKC expands: the slow path for the texts that hold one
        return _apart_where_expanding(texts, config, expanding)
    keep = np.ones(len(joined), dtype=np.bool_)
    keep[starts[1:] - 1] = False  # the joining newlines
    stats = NormalizeStats()
    if config.on("boilerplate"):
        present = present_triggers_each(codes, starts, starts + lengths)
        always = patterns_always_tried()
        for text, start, found in zip(texts, starts.tolist(), present, strict=True):
            if text and (found or always):  # views: spans are dropped from the joined arrays
                end = start + len(text)
                drop_boilerplate(text, codes[start:end], keep[start:end], stats, False, found)
    drop_repeated_lines(joined, codes, keep, config, stats, (starts, starts + lengths))
    kept, offsets, counts = _keep_and_fold(
        codes, keep, placeholder_table(), content_table(), expanding_table(), width_table()
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
        folded = fold(codes, variant_code_table())
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


def _explain_examples(
    original: str,
    text: str,
    offsets: npt.NDArray[np.int64],
    converted: npt.NDArray[np.bool_],
    stats: NormalizeStats,
) -> None:
    for index in np.flatnonzero(converted)[:EXAMPLES]:
        stats.add("script", 0, f"{original[int(offsets[index])]}→{text[int(index)]}")
