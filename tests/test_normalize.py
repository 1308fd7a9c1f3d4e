"""Normalization: one script, one form, offsets back into the original."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import opencc
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dedup.codepoints import code_points, from_code_points
from dedup.models import Document
from dedup.normalize import (
    NormalizeConfig,
    NormalizedText,
    line_key,
    line_keys,
    normalize,
    normalize_many,
)
from dedup.normalize import boilerplate as normalize_boilerplate
from dedup.normalize import records as normalize_records
from dedup.normalize import steps as normalize_steps
from dedup.normalize import tables as normalize_tables
from dedup.segment import split_chapters


@pytest.mark.parametrize("config", ["s2t", "s2tw", "s2hk"])
@pytest.mark.parametrize("script", ["simplified", "traditional"])
def test_script_conversions_normalize_identically(
    seed_simplified: str, hongloumeng_simplified: str, config: str, script: str
) -> None:
    converter = opencc.OpenCC(config)
    for text in (seed_simplified, hongloumeng_simplified):
        config = NormalizeConfig(script=script)  # type: ignore[arg-type]
        assert normalize(converter.convert(text), config).text == normalize(text, config).text


def test_opencc_standard_traditional_seed_reads_as_simplified(seed_traditional: str) -> None:
    normalized = normalize(seed_traditional).text
    assert "爲" not in normalized and "羣" not in normalized
    assert "因为无夜间攻击能力" in normalized
    assert normalize(opencc.OpenCC("t2s").convert(seed_traditional)).text == normalized


def test_site_ads_and_urls_are_dropped(seed_with_ads: str) -> None:
    normalized = normalize(seed_with_ads, NormalizeConfig(explain=True))
    # The site that was scraped injected "www.medabc.com.cn 江南文学网" mid-paragraph.
    assert "medabc" not in normalized.text and "江南文学网" not in normalized.text
    assert "www.medabc.com.cn" in normalized.stats.examples["boilerplate"]
    kept = normalize(seed_with_ads, NormalizeConfig(skip=frozenset({"boilerplate"}))).text
    assert "江南文学网" in kept


@pytest.mark.parametrize(
    "line",
    [
        "    更新时间:2007-11-16 7:55:51 本章字数:4804",  # hexhero-book-txt/三国演义.txt
        "TXT小说天堂  http://www.xiaoshuotxt.net",  # hankinghu-literature-books header
        "天才一秒記住本站地址：ｗｗｗ．ｂｉｑｕｇｅｘ．ｃｃ",  # full-width domain
        "（本章未完，請點擊下一頁繼續閱讀）",
        "手机用户请浏览m.biqugex.cc阅读，更优质的阅读体验。",
        "PS：今天两更，求月票！",
    ],
)
def test_boilerplate_lines_vanish(line: str) -> None:
    story = "他们打了第一回合，不分胜负。"
    assert normalize(f"{story}\n{line}\n{story}").text == normalize(f"{story}\n{story}").text


def test_same_chapter_with_site_ads_normalizes_identically(samples: Path) -> None:
    """site-tw/000.txt is seed A converted to Taiwan Traditional, re-paragraphed, with ads."""
    original = (samples / "site-qidian/000.txt").read_text("utf-8")
    republished = (samples / "site-tw/000.txt").read_text("utf-8")
    assert normalize(republished).text == normalize(original).text
    no_boilerplate = NormalizeConfig(skip=frozenset({"boilerplate"}))
    assert normalize(republished, no_boilerplate).text != normalize(original, no_boilerplate).text


def test_each_step_can_be_switched_off(seed_traditional: str) -> None:
    full = normalize(seed_traditional)
    assert full.stats.counts["script"] > 100 and full.converted.mean() > 0.1
    raw = normalize(seed_traditional, NormalizeConfig(skip=frozenset({"script", "variants"})))
    assert "爲" in raw.text and "script" not in raw.stats.counts
    spaced = normalize(
        "第１２章　「你好」", NormalizeConfig(skip=frozenset({"punctuation", "width"}))
    )
    assert spaced.text == "第１２章「你好」"
    assert normalize("他**了", NormalizeConfig(skip=frozenset({"placeholders"}))).text == "他了"
    kept = NormalizeConfig(skip=frozenset({"placeholders", "punctuation"}))
    assert normalize("他**了", kept).text == "他**了"


def test_censorship_placeholders_do_not_make_text_alike() -> None:
    assert normalize("他**了一声，□□□×××○○○").text == "他了一声"


def test_idempotent(seed_with_ads: str, seed_traditional: str) -> None:
    for text in (seed_with_ads, seed_traditional):
        once = normalize(text).text
        assert normalize(once).text == once


@settings(max_examples=200, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(
            list(
                "爲羣纔為群才著裡裏甚麼妳牠衞囘說話，。「」『』“” \n\u3000ＡＢ１２abc*□×○www.x.com"
            )
        )
        | st.characters(),
        max_size=80,
    )
)
def test_offsets_map_back_to_the_original(text: str) -> None:
    normalized = normalize(text)
    assert len(normalized.offsets) == len(normalized.text)
    assert list(normalized.offsets) == sorted(normalized.offsets)
    for char, offset in zip(normalized.text, normalized.offsets, strict=True):
        original = text[int(offset)]
        # Offsets point at story characters, never at punctuation, space or placeholders.
        folded = unicodedata.normalize("NFKC", original)
        assert any(unicodedata.category(c)[0] in "LN" for c in folded), (char, original)
        assert original not in "□×○*"


def test_lines_a_source_repeats_in_every_chapter_are_learned(
    tmp_path: Path, hongloumeng_simplified: str
) -> None:
    """A slogan no pattern knows, after every chapter of one site, is dropped from that site."""
    from dedup import scan

    slogan = "本书由书友云中客上传整理，欢迎加入读者群七七八八九九交流剧情"
    document = Document("h.txt", "s", None, hongloumeng_simplified)
    chapters = [c for c in split_chapters(document) if c.index is not None]
    site = tmp_path / "site-x"
    site.mkdir()
    for number, chapter in enumerate(chapters):
        text = hongloumeng_simplified[chapter.start : chapter.end]
        (site / f"{number}.txt").write_text(f"{text}\n{slogan}\n", "utf-8")
    (site / "3.txt").write_text(
        "第四回 薄命女偏逢薄命郎\n" + "　　话说" * 60 + f"\n{slogan}\n", "utf-8"
    )
    report = scan([str(tmp_path)], jobs=1)
    removed = sum(entry.normalization.get("repeated-lines", 0) for entry in report.inputs)
    assert removed == 4
    skipped = scan([str(tmp_path)], jobs=1, skip_steps=("repeated-lines",))
    assert sum(e.normalization.get("repeated-lines", 0) for e in skipped.inputs) == 0


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from("第一章 本站网址ＷＷＷ.Com_ΣΑσİ\n\r\t。，abcXYZ12"), max_size=80
    )
)
def test_line_keys_of_a_whole_text_are_the_keys_of_its_lines(text: str) -> None:
    assert line_keys(text) == [line_key(line) for line in text.split("\n")]


def test_line_keys_keep_the_characters_line_key_keeps_across_all_of_unicode() -> None:
    every = "".join(
        chr(code) for code in range(0x110000) if code != 10 and not 0xD800 <= code < 0xE000
    )
    assert line_keys(every) == [line_key(every)]


def _separate_steps_normalize(text: str) -> NormalizedText:
    """normalize() made to take its numpy path: the fused pass reports an expanding character."""

    fused = normalize_steps._keep_and_fold

    def reporting_expansion(*args: Any) -> Any:
        kept, offsets, counts = fused(*args)
        counts = counts.copy()
        counts[3] = 1
        return kept, offsets, counts

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(normalize_steps, "_keep_and_fold", reporting_expansion)
        return normalize(text)


def _same(a: NormalizedText, b: NormalizedText) -> bool:
    return (
        a.text == b.text
        and np.array_equal(a.offsets, b.offsets)
        and np.array_equal(a.converted, b.converted)
        and a.stats.counts == b.stats.counts
    )


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from("話说了，。 \n\u3000ＡＢａ１２*＊□〇×㈠①ｶ㍿é\u200b\ue000"),
        max_size=60,
    )
)
def test_the_fused_pass_equals_the_separate_steps(text: str) -> None:
    assert _same(normalize(text), _separate_steps_normalize(text))


def test_the_fused_pass_equals_the_separate_steps_on_real_chapters(
    seed_traditional: str, seed_with_ads: str, hongloumeng_simplified: str
) -> None:
    for text in (seed_traditional, seed_with_ads, hongloumeng_simplified):
        fast = normalize(text)
        assert fast.stats.counts.get("punctuation", 0) > 100
        assert _same(fast, _separate_steps_normalize(text))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("小说天堂網址ｗＷw.ｃcCoOmM。未完待续 \n第"), max_size=60))
def test_triggers_found_in_one_pass_are_those_in_the_folded_text(text: str) -> None:
    folded = text.translate(normalize_tables._halfwidth()).translate(
        {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}
    )
    triggers = {t for _p, found in normalize_boilerplate.boilerplate_patterns() for t in found}
    expected = {t for t in triggers if len(t) >= 2 and t in folded}
    assert normalize_boilerplate._present_triggers(code_points(text)) == expected
    assert expected or "小说天堂" not in folded  # the alphabet does reach triggers


def test_normalized_text_carries_the_code_points_it_was_made_from(seed_traditional: str) -> None:
    from dedup.codepoints import code_points

    for script in ("simplified", "traditional"):
        normalized = normalize(seed_traditional, NormalizeConfig(script=script))
        assert normalized.original_codes is not None and normalized.codes is not None
        assert normalized.original_codes.tolist() == code_points(seed_traditional).tolist()
        assert normalized.codes.tolist() == code_points(normalized.text).tolist()


def _each_alone(texts: list[str], config: NormalizeConfig) -> tuple[list[NormalizedText], Any]:
    alone = [normalize(text, config) for text in texts]
    stats = normalize_records.NormalizeStats()
    for normalized in alone:
        stats.merge(normalized.stats)
    return alone, stats.counts


def _assert_many_is_each_alone(texts: list[str], config: NormalizeConfig) -> None:
    many, stats = normalize_steps.normalize_many(texts, config)
    alone, counts = _each_alone(texts, config)
    assert len(many) == len(alone)
    for together, apart in zip(many, alone, strict=True):
        assert together.text == apart.text
        assert together.offsets.tolist() == apart.offsets.tolist()
        assert together.converted.tolist() == apart.converted.tolist()
        assert together.codes is not None and apart.codes is not None
        assert together.codes.tolist() == apart.codes.tolist()
        assert together.original_codes is not None and apart.original_codes is not None
        assert together.original_codes.tolist() == apart.original_codes.tolist()
    assert stats.counts == counts


_BATCH_ALPHABET = [
    *"爲羣纔為群才著裡裏甚麼妳牠衞囘說話乾隆皇帝頭髮發展，。「」 \n\u3000ＡＢ１２abc*□×○㈠ΣσİPS:：",
    *("www.x.com", "更新时间：", "2024-01-01 12:00", "求月票", "本章未完，请点击下一页继续阅读"),
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(_BATCH_ALPHABET), max_size=12).map("".join), max_size=6),
    st.sampled_from(["simplified", "traditional"]),
)
@example(["本章更新时间：", "2024-01-01 12:00 他说"], "simplified")  # \s* would span the join
@example(["乾", "隆皇帝的頭"], "simplified")  # 乾隆 is a phrase: 乾 alone becomes 干
@example(["他說㈠", "乾隆皇帝", "", "頭髮①"], "traditional")  # ㈠ and ① take the slow path
# Half its characters on a repeated line: the joining newline is not the text's.
@example(["爲爲爲更新时间：\n爲爲，求月票", ""], "simplified")
def test_chapters_normalized_together_are_as_if_normalized_alone(
    texts: list[str], script: str
) -> None:
    repeated = {key for key in line_keys("\n".join(texts))[:2] if key is not None}
    for lines in (frozenset(), frozenset(repeated)):
        config = NormalizeConfig(script=script, repeated_lines=lines)  # type: ignore[arg-type]
        _assert_many_is_each_alone(texts, config)


def test_real_chapters_cut_anywhere_normalize_together_as_alone(
    seed_traditional: str, seed_with_ads: str, hongloumeng_simplified: str
) -> None:
    """Cut mid-phrase everywhere: no conversion or pattern reaches from one piece into the next."""
    for text in (seed_traditional, seed_with_ads, hongloumeng_simplified[:20_000]):
        for step in (7, 37, 1000):
            pieces = [text[start : start + step] for start in range(0, len(text), step)]
            for script in ("simplified", "traditional"):
                _assert_many_is_each_alone(pieces, NormalizeConfig(script=script))  # type: ignore[arg-type]


_URLISH = st.lists(
    st.sampled_from(
        [
            *(
                "www",
                "m",
                "abc",
                "x-1",
                ".",
                "。",
                "com",
                "net",
                "me",
                "cn",
                "/",
                "?a=1",
                "http://",
            ),
            *("TXT", "txt", "小说天堂", "小說天堂", "文学网", "说", "\n", " ", "他说", "，"),
        ]
    ),
    max_size=30,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(_URLISH)
def test_patterns_searched_line_by_line_find_what_a_whole_search_finds(text: str) -> None:
    filtered = [
        (pattern, lines_with)
        for (pattern, _triggers), lines_with in zip(
            normalize_boilerplate.boilerplate_patterns(),
            normalize_boilerplate._line_filters(),
            strict=True,
        )
        if lines_with is not None
    ]
    assert filtered  # the URL pattern has one
    for pattern, lines_with in filtered:
        spans = [
            m.span() for m in normalize_boilerplate.boilerplate_matches(pattern, lines_with, text)
        ]
        assert spans == [m.span() for m in pattern.finditer(text)]


@settings(max_examples=300, deadline=None)
@given(_URLISH)
def test_the_watermark_pattern_with_its_look_ahead_matches_as_without(text: str) -> None:
    import re

    flags = re.IGNORECASE | re.MULTILINE
    before = re.compile(r"(?:txt|ｔｘｔ)?小[说說]天堂", flags)
    (now,) = [
        p
        for p, _t in normalize_boilerplate.boilerplate_patterns()
        if p.pattern.startswith("(?=[tｔ小])")
    ]
    assert [m.span() for m in now.finditer(text)] == [m.span() for m in before.finditer(text)]


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_folding_by_a_compiled_lookup_equals_numpy_indexing(text: str) -> None:
    codes = code_points(text)
    for table in (
        normalize_tables.variant_code_table(),
        normalize_tables.halfwidth_table(),
        normalize_tables.width_table(),
    ):
        assert normalize_tables.fold(codes, table).tolist() == table[codes].tolist()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from("第一回㈠㈣⑴⒐⒅⑿ⅲ①ＡＢｃ１２℃㍘…“”，。　\n\ud800\U00040001\U0002f800丽a"),
        max_size=60,
    ).map("".join)
)
def test_nfkc_by_table_is_nfkc_of_each_character(text: str) -> None:
    """Each character mapped alone, an expanding one (㈠ -> (一)) repeating its offset."""
    from dedup.normalize.tables import nfkc

    offsets = np.arange(10, 10 + len(text), dtype=np.int64)
    codes, mapped_offsets = nfkc(code_points(text), offsets)
    pieces = [unicodedata.normalize("NFKC", char) for char in text]
    assert from_code_points(codes) == "".join(pieces)
    assert mapped_offsets.tolist() == [
        offset for offset, piece in zip(offsets.tolist(), pieces, strict=True) for _ in piece
    ]


def test_a_banner_of_placeholders_is_a_separator_not_censorship(seed_simplified: str) -> None:
    """Only a placeholder beside story text stands for a censored word; a line of ***** or
    ○○○○○ between scenes is punctuation. The same counts on the compiled and the numpy path."""
    text = (
        "*" * 40
        + "\n"
        + seed_simplified[:200]
        + "他说习**是好人。\n○○○○○○\n"
        + seed_simplified[200:400]
    )
    for skip in (frozenset(), frozenset({"width"})):  # width off: the numpy path
        stats = normalize(text, NormalizeConfig(skip=skip)).stats.counts
        assert stats["placeholders"] == 2, skip
        punctuation = normalize(text, NormalizeConfig(skip=skip | {"placeholders"}))
        assert "*" not in punctuation.text
    _texts, stats = normalize_many([text, text], NormalizeConfig())
    assert stats.counts["placeholders"] == 4
