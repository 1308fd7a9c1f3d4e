"""The normalize stage's character tables: the Unicode facts they are built from."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from dedup.normalize import tables
from dedup.normalize.tables import UnicodeFacts, computed_unicode_facts, unicode_facts


@pytest.fixture
def fresh_facts() -> Iterator[None]:
    unicode_facts.cache_clear()
    yield
    unicode_facts.cache_clear()


def test_the_shipped_facts_are_this_pythons_and_used(
    monkeypatch: pytest.MonkeyPatch, fresh_facts: object
) -> None:
    computed: list[UnicodeFacts] = []
    compute = tables.computed_unicode_facts
    monkeypatch.setattr(tables, "computed_unicode_facts", lambda: computed.append(compute()))
    shipped = unicode_facts()
    assert computed == []  # read from the file, not computed
    # If this fails after a Python upgrade, run: python benchmarks/make_unicode_facts.py
    assert shipped == computed_unicode_facts()
    # a few facts a reader can check by eye
    assert shipped.content[ord("龍")] and shipped.content[ord("Ａ")]
    assert not shipped.content[ord("，")] and not shipped.content[0xE000]  # private use
    nfkc = dict(zip(shipped.nfkc_codes.tolist(), shipped.nfkc_targets.tolist(), strict=True))
    assert nfkc[ord("Ａ")] == ord("A") and nfkc[ord("㈠")] == -1 and ord("龍") not in nfkc
    lower = dict(zip(shipped.lower_codes.tolist(), shipped.lower_targets.tolist(), strict=True))
    assert lower[ord("Ａ")] == ord("ａ") and ord("İ") in shipped.longer_lower.tolist()


def test_under_another_unicode_version_the_facts_are_computed(
    monkeypatch: pytest.MonkeyPatch, fresh_facts: object
) -> None:
    computed: list[UnicodeFacts] = []
    compute = tables.computed_unicode_facts

    def computing() -> UnicodeFacts:
        computed.append(compute())
        return computed[-1]

    monkeypatch.setattr(tables, "computed_unicode_facts", computing)
    monkeypatch.setattr(unicodedata, "unidata_version", "0.0.0")
    facts = unicode_facts()
    assert computed == [facts]


@pytest.mark.parametrize("content", [None, b"not a zip file", b"PK\x03\x04 cut short"])
def test_a_missing_or_damaged_file_gives_way_to_computing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fresh_facts: object, content: bytes | None
) -> None:
    (tmp_path / "data").mkdir()
    if content is not None:
        (tmp_path / "data" / tables.UNICODE_FACTS_FILE).write_bytes(content)
    monkeypatch.setattr(tables.resources, "files", lambda package: tmp_path)
    assert unicode_facts() == computed_unicode_facts()
