"""Normalization: one script, one form, offsets back into the original."""

from __future__ import annotations

import unicodedata

import opencc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dedup.normalize import normalize


@pytest.mark.parametrize("config", ["s2t", "s2tw", "s2hk"])
@pytest.mark.parametrize("script", ["simplified", "traditional"])
def test_script_conversions_normalize_identically(
    seed_simplified: str, hongloumeng_simplified: str, config: str, script: str
) -> None:
    converter = opencc.OpenCC(config)
    for text in (seed_simplified, hongloumeng_simplified):
        assert normalize(converter.convert(text), script).text == normalize(text, script).text  # type: ignore[arg-type]


def test_opencc_standard_traditional_seed_reads_as_simplified(seed_traditional: str) -> None:
    normalized = normalize(seed_traditional).text
    assert "爲" not in normalized and "羣" not in normalized
    assert "因为无夜间攻击能力" in normalized
    assert normalize(opencc.OpenCC("t2s").convert(seed_traditional)).text == normalized


def test_punctuation_width_and_urls_are_dropped(seed_with_ads: str) -> None:
    normalized = normalize(seed_with_ads).text
    assert "medabc" not in normalized  # www.medabc.com.cn injected by the scraped site
    assert "江南文学网" in normalized  # a site name without a pattern stays (for now)
    assert normalize("第１２章「你好」，ＡＢＣ").text == "第12章你好abc"


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
