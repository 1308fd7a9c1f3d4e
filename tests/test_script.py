from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path

import opencc
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dedup.normalize import opencc as script
from dedup.normalize.opencc import FAST_CONFIGS, convert, fast_path_ready

CONFIGS = ("tw2s", "hk2s")


@functools.cache
def converter(config: str) -> opencc.OpenCC:
    return opencc.OpenCC(config)


def whole(text: str, configs: tuple[str, ...] = CONFIGS) -> str:
    """What OpenCC itself makes of the whole text."""
    for config in configs:
        text = converter(config).convert(text)
    return text


def test_the_shipped_tables_match_the_installed_dictionaries() -> None:
    # If this fails after an opencc upgrade, run: python benchmarks/make_opencc_tables.py
    for config in FAST_CONFIGS:
        assert fast_path_ready(config), config


@pytest.mark.parametrize(
    "fixture", ["seed_simplified", "seed_with_ads", "seed_traditional", "hongloumeng_simplified"]
)
def test_equals_opencc_on_real_chapters(fixture: str, request: pytest.FixtureRequest) -> None:
    text: str = request.getfixturevalue(fixture)
    variants = [text, whole(text, ("s2tw",)), whole(text, ("s2hk",)), whole(text, ("s2twp",))]
    for variant in variants:
        expected = whole(variant)
        assert len(expected) == len(variant)
        assert convert(variant, CONFIGS) == expected


def test_phrases_that_keep_a_character_opencc_would_change_alone() -> None:
    # 么 alone becomes 幺 and 著 becomes 着; inside these phrases OpenCC keeps them.
    assert whole("么") == "幺" and convert("么", CONFIGS) == "幺"
    for phrase in ["什么", "这么好", "为什么？", "著書立說", "乾隆年間", "名著"]:
        assert convert(phrase, CONFIGS) == whole(phrase)
    assert convert("说什么", CONFIGS) == "说什么"


def _alphabet() -> list[str]:
    tables = json.loads(
        resources.files("dedup").joinpath(f"data/{script.TABLES_FILE}").read_text("utf-8")
    )["configs"]["tw2s"]
    phrase, changing = tables["phrase_chars"], tables["changing_chars"]
    common = "的一是了我不人在他有这个上们来到时大地为子中你说生国年着就那和要她出也得里后自以会"
    return sorted(set(phrase[::7] + changing[::11] + common + "么什著書乾隆坤，。\n"))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_alphabet(), max_size=40))
def test_equals_opencc_on_any_mix_of_phrase_and_changing_characters(text: str) -> None:
    expected = whole(text)
    assume(len(expected) == len(text))  # dedup gives up rules that change the length
    assert convert(text, CONFIGS) == expected


def test_without_the_matching_dictionaries_whole_texts_go_through_opencc(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, seed_traditional: str
) -> None:
    monkeypatch.setattr(script, "opencc_data_dir", lambda: tmp_path)
    script._tables.cache_clear()
    try:
        assert not fast_path_ready("tw2s")
        assert convert(seed_traditional, CONFIGS) == whole(seed_traditional)
    finally:
        script._tables.cache_clear()


class _Lengthening:
    """An OpenCC stand-in with a rule that changes the length (none of OpenCC's own
    Traditional-to-Simplified entries does, but a future dictionary might)."""

    def convert(self, text: str) -> str:
        return text.replace("么", "麼麼").replace("著", "着")


def test_a_rule_that_changes_the_length_is_given_up_character_by_character(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert fast_path_ready("tw2s")
    monkeypatch.setattr(script, "_converter", lambda config: _Lengthening())
    script._convert_alone.cache_clear()
    try:
        # The run holding 么 would grow, so its characters are converted one by one (and 么
        # alone would grow too, so it stays); the run holding 著 keeps its length.
        assert convert("什么人著書", ("tw2s",)) == "什么人着書"
    finally:
        script._convert_alone.cache_clear()


def test_a_small_run_cache_fills_up_and_still_converts_as_opencc_does(
    seed_traditional: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A cache of 8 runs and 40 characters: probing past taken slots, runs that no longer fit,
    # and later texts converted partly from the cache and partly by OpenCC.
    caches = {config: script._new_run_cache(runs=8, chars=40) for config in CONFIGS}
    monkeypatch.setattr(script, "_run_cache", caches.__getitem__)
    for text in (seed_traditional[:2000], seed_traditional[:2000], seed_traditional):
        assert convert(text, CONFIGS) == whole(text)
    runs, chars = caches["tw2s"].used.tolist()
    assert runs == 8 or chars > 30  # it did fill up


def test_runs_remembered_from_one_text_convert_the_next(seed_traditional: str) -> None:
    first = convert(seed_traditional, CONFIGS)
    runs_before = script._run_cache("tw2s").used[0]
    assert runs_before > 0
    assert convert(seed_traditional, CONFIGS) == first == whole(seed_traditional)
    assert script._run_cache("tw2s").used[0] == runs_before  # every run came from the cache
