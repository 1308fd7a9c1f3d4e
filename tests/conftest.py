from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "corpus_samples"


@pytest.fixture(scope="session")
def samples() -> Path:
    return SAMPLES


@pytest.fixture(scope="session")
def seed_simplified() -> str:
    """Seed novel A: a scraped Simplified chapter (typos, a censored word)."""
    return (SAMPLES / "site-qidian/000.txt").read_text("utf-8")


@pytest.fixture(scope="session")
def seed_with_ads() -> str:
    """Seed novel B: Simplified, with the scraping site's ads and URLs mid-paragraph."""
    return (SAMPLES / "site-qidian/001.txt").read_text("utf-8")


@pytest.fixture(scope="session")
def seed_traditional() -> str:
    """Seed novel C: machine-converted OpenCC-standard Traditional (爲/羣/纔)."""
    return (SAMPLES / "site-gbk/002.txt").read_bytes().decode("gb18030")


@pytest.fixture(scope="session")
def hongloumeng_simplified() -> str:
    """红楼梦 chapters 1-3, Simplified, CRLF (tennessine-corpus)."""
    return (SAMPLES / "site-qidian/hongloumeng.txt").read_bytes().decode("utf-8")


@pytest.fixture(scope="session")
def hongloumeng_big5_bytes() -> bytes:
    """The same chapters from an independent Traditional scan, Big5-HKSCS."""
    return (SAMPLES / "site-tw/hongloumeng-big5.txt").read_bytes()
