"""Chapters and scene windows on real chapters."""

from __future__ import annotations

import itertools
import re
import zlib
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dedup import segment
from dedup.models import Document
from dedup.normalize import normalize
from dedup.segment import chapters as segment_chapters
from dedup.segment import passages as segment_passages
from dedup.segment import split_chapters, split_passages, window_bounds


def test_chapter_headings_of_a_real_book(hongloumeng_simplified: str) -> None:
    document = Document("hlm.txt", "site", None, hongloumeng_simplified)
    chapters = [c for c in split_chapters(document) if c.index is not None]
    assert [c.index for c in chapters] == [0, 1, 2]
    assert chapters[0].title is not None and chapters[0].title.startswith("第一回")
    assert "甄士隐梦幻识通灵" in chapters[0].title
    assert chapters[2].title is not None and chapters[2].title.startswith("第三回")
    # Chapters tile the text after the first heading.
    assert chapters[0].end == chapters[1].start and chapters[1].end == chapters[2].start


def test_heading_forms() -> None:
    body = (
        "　　话说宝玉在林黛玉房中说耗子精，宝钗撞来，讽刺宝玉元宵不知绿蜡之典，三人正在房中互相取笑。"
        * 3
    )
    text = "\n".join(
        [
            "正文 第一千零二十四章 大战",
            body,
            "第１２章 夜雨",
            body,
            "《》目录 第012回 再战",
            body,
            "Chapter 7: Dawn",
            body,
            "他们打了第一回合，不分胜负。" + body,
        ]
    )
    chapters = split_chapters(Document("x.txt", "s", None, text))
    titles = [c.title for c in chapters]
    assert titles == [
        "正文 第一千零二十四章 大战",
        "第１２章 夜雨",
        "《》目录 第012回 再战",
        "Chapter 7: Dawn",
    ]


def test_table_of_contents_lines_are_not_chapters() -> None:
    body = "　　却说那人走进庙里，只见一个老道士坐在蒲团上，闭着眼睛念经，并不理会他。" * 5
    toc = "\n".join(["目录", "第一回 开篇", "第二回 入庙", "第三回 下山", ""])
    text = toc + "第一回 开篇\n" + body + "\n第二回 入庙\n" + body
    chapters = split_chapters(Document("x.txt", "s", None, text))
    assert [(c.index, c.title) for c in chapters] == [
        (None, None),
        (0, "第一回 开篇"),
        (1, "第二回 入庙"),
    ]


def test_windows_cover_the_text_within_bounds(hongloumeng_simplified: str) -> None:
    normalized = normalize(hongloumeng_simplified)
    bounds = window_bounds(normalized, hongloumeng_simplified, 400)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(normalized.text)
    assert all(end == start for (_, end), (start, _) in itertools.pairwise(bounds))
    lengths = [end - start for start, end in bounds]
    assert all(100 <= length <= 800 for length in lengths)
    assert 300 <= sum(lengths) / len(lengths) <= 600


def test_windows_resynchronise_after_an_insertion(seed_with_ads: str) -> None:
    """A site that adds a paragraph in front still cuts the rest at the same sentences."""
    prefix = (
        "天才一秒记住本站地址：笔趣阁。最快更新！无广告！这一章写得很长，作者求月票，求推荐票。\n"
    )
    plain = normalize(seed_with_ads)
    shifted = normalize(prefix + seed_with_ads)
    plain_windows = {plain.text[a:b] for a, b in window_bounds(plain, seed_with_ads, 400)}
    shifted_windows = {
        shifted.text[a:b] for a, b in window_bounds(shifted, prefix + seed_with_ads, 400)
    }
    shared = plain_windows & shifted_windows
    assert len(shared) >= len(plain_windows) - 1


def test_passage_spans_point_at_the_original(seed_traditional: str) -> None:
    document = Document("c.txt", "site", None, seed_traditional)
    (chapter,) = split_chapters(document)
    normalized = normalize(seed_traditional[chapter.body_start : chapter.end])
    windows = split_passages(document, chapter, normalized, 300)
    assert len(windows) > 3
    for window in windows:
        text = seed_traditional[window.passage.start : window.passage.end]
        assert text == text.strip()
        assert normalize(text).text.startswith(window.normalized[:50])
    # Consecutive passages leave out only whitespace between them.
    for before, after in itertools.pairwise(windows):
        assert seed_traditional[before.passage.end : after.passage.start].strip() == ""


def test_passages_can_overlap(seed_traditional: str) -> None:
    document = Document("c.txt", "site", None, seed_traditional)
    (chapter,) = split_chapters(document)
    normalized = normalize(seed_traditional[chapter.body_start : chapter.end])
    plain = split_passages(document, chapter, normalized, 300)
    overlapping = split_passages(document, chapter, normalized, 300, overlap=100)
    assert len(plain) == len(overlapping)
    for before, after in itertools.pairwise(overlapping):
        assert after.passage.start < before.passage.end  # they share text
        text = seed_traditional[after.passage.start : after.passage.end]
        assert normalize(text).text.startswith(after.normalized[:50])
    assert [w.passage.end for w in plain] == [w.passage.end for w in overlapping]


def test_overlapping_passages_of_one_text_are_not_duplicates(samples: Path) -> None:
    from dedup import scan

    plain = scan([str(samples / "site-qidian")], jobs=1)
    overlapping = scan([str(samples / "site-qidian")], jobs=1, passage_overlap=150)
    assert overlapping.summary.passages == plain.summary.passages
    assert overlapping.clusters == () and plain.clusters == ()


def _reference_cuts(
    text: str, candidates: list[int], min_len: int, max_len: int, modulus: int
) -> list[int]:
    """The window cuts as first written, in plain Python with zlib: the compiled loop must agree."""
    cuts = [0]
    fallback: int | None = None
    for position in [*candidates, len(text)]:
        while position - cuts[-1] > max_len:
            cuts.append(fallback if fallback is not None else cuts[-1] + max_len)
            fallback = None
        if position == len(text):
            break
        if position - cuts[-1] < min_len:
            continue
        if zlib.crc32(text[max(0, position - 3) : position].encode("utf-8")) % modulus == 0:
            cuts.append(position)
            fallback = None
        else:
            fallback = position
    if len(text) - cuts[-1] < min_len // 2 and len(cuts) > 1:
        cuts.pop()
    return [*cuts, len(text)]


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet="a1éΣ中文章节。𠀀😀", min_size=1, max_size=300),
    st.integers(min_value=2, max_value=40),
    st.integers(min_value=2, max_value=7),
)
def test_compiled_cuts_equal_the_plain_python_ones(
    text: str, passage_chars: int, modulus: int
) -> None:
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    candidates = [i for i in range(1, len(text)) if text[i - 1] == "。"]
    min_len, max_len = passage_chars // 2, passage_chars * 2
    compiled = segment_passages._cuts(
        codes, np.array(candidates, dtype=np.int64), min_len, max_len, modulus
    )
    assert compiled.tolist() == _reference_cuts(text, candidates, min_len, max_len, modulus)


def test_compiled_cuts_on_a_real_chapter(seed_traditional: str) -> None:
    text = normalize(seed_traditional).text
    candidates = list(range(7, len(text), 13))
    for modulus in (2, 7, 200):
        compiled = segment_passages._cuts(
            np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32),
            np.array(candidates, dtype=np.int64),
            150,
            600,
            modulus,
        )
        assert compiled.tolist() == _reference_cuts(text, candidates, 150, 600, modulus)


# The heading patterns as they were before possessive quantifiers made them linear: the
# reference the linear ones must agree with (on short lines, where these are still fast).
_NUMERAL = segment_chapters._NUMERAL
_BACKTRACKING_HEADING = re.compile(
    r"^[ \t\u3000#]*[【\[]?[ \t\u3000]*"
    r"(?:[^\n。！？，,：:]{0,10}?[ \t\u3000]+)?"
    r"(?:"
    rf"第[ \t\u3000]*[{_NUMERAL}]+(?:[ \t\u3000]*[{_NUMERAL}]+)*[ \t\u3000]*[章回节節]"
    r"|楔子|序章|引子|尾声|尾聲|后记|後記|番外"
    r"|chapter[ \t]+[0-9]+"
    r")"
    r"(?=[ \t\r\u3000:：．.、,，】\]\-—(（]|$)"
    r"[^\n]{0,60}$",
    re.MULTILINE | re.IGNORECASE,
)
_BACKTRACKING_VOLUME = re.compile(
    r"^[ \t\u3000#]*[【\[]?[ \t\u3000]*(?:正文[ \t\u3000]*)?"
    rf"第[ \t\u3000]*[{_NUMERAL}]+[ \t\u3000]*[卷部集篇]"
    r"(?=[ \t\r\u3000:：．.、,，】\]\-—(（]|$)[^\n]{0,60}$",
    re.MULTILINE,
)
_HEADING_PIECES = [
    " ",
    "\t",
    "\u3000",
    "#",
    "【",
    "】",
    "[",
    "第",
    "一",
    "十",
    "2",
    "０",
    "章",
    "回",
    "卷",
    "部",
    "正文",
    "楔子",
    "后记",
    "番外",
    "Chapter",
    "chapter",
    "c",
    "：",
    "。",
    "，",
    "、",
    "目录",
    "话",
    "说",
    "\r",
    "\n",
    "(",
    "—",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_HEADING_PIECES), max_size=14))
def test_linear_heading_patterns_match_what_the_backtracking_ones_did(pieces: list[str]) -> None:
    text = "".join(pieces)
    line_starts = [0] + [i + 1 for i, char in enumerate(text) if char == "\n"]
    for start in line_starts:
        for linear, reference in (
            (segment.HEADING_PATTERN, _BACKTRACKING_HEADING),
            (segment.VOLUME_PATTERN, _BACKTRACKING_VOLUME),
        ):
            found, expected = linear.match(text, start), reference.match(text, start)
            assert (found and found.span()) == (expected and expected.span())
    # Only lines holding a keyword are tried, and no heading is lost by it.
    every_line = [
        (match.start(), match.end())
        for start in line_starts
        for pattern in (_BACKTRACKING_HEADING, _BACKTRACKING_VOLUME)
        if (match := pattern.match(text, start))
    ]
    assert [(h.start, h.body_start) for h in segment_chapters._headings(text)] == sorted(every_line)


def test_long_runs_of_spaces_or_numerals_are_not_headings() -> None:
    # Each of these lines kept the backtracking patterns busy for hours.
    body = "　　却说那人走进庙里，只见一个老道士坐在蒲团上，闭着眼睛念经，并不理会他。" * 5
    lines = [" " * 5000 + "第x", "第" + "一" * 60 + "次", "#" * 3000 + "　" * 3000 + "第二"]
    text = "\n".join(["第一回 开篇", body, *lines, body, "第二回 下山", body])
    chapters = split_chapters(Document("x.txt", "s", None, text))
    assert [c.title for c in chapters] == ["第一回 开篇", "第二回 下山"]


def _reference_sentence_ends(offsets: np.ndarray, original: str, size: int) -> list[int]:
    is_end = np.array([char in segment.SENTENCE_END_CHARS for char in original], dtype=np.bool_)
    run_ends = np.flatnonzero(is_end & ~np.append(is_end[1:], False)) + 1
    positions = np.searchsorted(offsets, run_ends)
    if not len(positions):
        return []
    first = np.append(True, positions[1:] != positions[:-1])
    return positions[first & (positions > 0) & (positions < size)].tolist()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="他说。！？…!?」”\n 好，", max_size=60))
def test_sentence_ends_in_one_pass_equal_the_vectorized_ones(original: str) -> None:
    normalized = normalize(original)
    expected = _reference_sentence_ends(normalized.offsets, original, len(normalized.text))
    found = segment_passages._sentence_ends_in(
        np.frombuffer(original.encode("utf-32-le"), dtype=np.uint32),
        normalized.offsets,
        segment_passages.sentence_end_table(),
    )
    assert found.tolist() == expected


def test_the_space_table_is_str_isspace_over_all_of_unicode() -> None:
    spaces = [code for code in range(0x110000) if chr(code).isspace()]
    assert np.flatnonzero(segment_passages.space_table()).tolist() == spaces


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="他说好。\n \t\u3000\r\x1c", max_size=40), st.data())
def test_passages_end_where_rstrip_ends_them(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text)))
    limit = data.draw(st.integers(start, len(text)))
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    (end,) = segment_passages._without_trailing_space(
        codes, np.array([start]), np.array([limit]), segment_passages.space_table()
    ).tolist()
    assert end == start + len(text[start:limit].rstrip())


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from([*_HEADING_PIECES, "CHAPTER", "cHaPtEr", "hapter", "楔", "子"]), max_size=30
    )
)
def test_heading_keywords_found_by_the_loop_are_those_the_pattern_finds(pieces: list[str]) -> None:
    text = "".join(pieces)
    by_pattern = sorted(
        {
            text.rfind("\n", 0, m.start()) + 1
            for m in segment_chapters._HEADING_KEYWORD.finditer(text)
        }
    )
    assert segment_chapters._heading_line_candidates(text) == by_pattern


def test_a_chapter_table_gives_back_the_chapters_it_was_made_of(
    hongloumeng_simplified: str,
) -> None:
    body = "　　却说那人走进庙里，只见一个老道士坐在蒲团上，闭着眼睛念经，并不理会他。" * 5
    volumes = (
        f"前言{body}\n第一卷 开篇\n{body}\n第一回 入庙\n{body}\n第二卷 下山\n第二回 回家\n{body}"
    )
    for text in (volumes, hongloumeng_simplified):
        document = Document("x.txt", "s", None, text)
        chapters = split_chapters(document)
        assert len(chapters) > 2
        table = segment.ChapterTable.of(document, chapters)
        assert table.text_length == len(text)
        assert table.chapters() == chapters
    assert [c.index for c in split_chapters(Document("x.txt", "s", None, volumes))] == [
        None,
        None,
        0,
        1,
    ]
