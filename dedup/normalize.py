"""Normalize stage: the same scene must read the same on every site.

Only the characters that carry the story are kept (letters, Han characters, digits), converted
to one script and one form. Punctuation, whitespace and quote styles differ by site and are
dropped for fingerprinting; the original text is never changed: every normalized character
keeps the offset of the original character it came from.

This is the only module that imports opencc.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from importlib import resources

import numpy as np
import numpy.typing as npt
import opencc

from dedup.config import Script

# Traditional text arrives in OpenCC's own standard (爲/羣), Taiwan's (為/群/著) or Hong Kong's
# (衞). tw2s undoes Taiwan variants and converts; hk2s then folds the Hong Kong variants tw2s
# leaves. On Simplified input both are (nearly) the identity.
TO_SIMPLIFIED_CONFIGS = ("tw2s", "hk2s")
TO_TRADITIONAL_CONFIG = "s2t"

# Site ads: URLs and bare domains injected into the text by the site that published it.
URL_PATTERN = re.compile(
    r"(?:https?://)?(?:[a-z0-9-]+\.)+(?:com|net|org|cc|cn|info|la|me|tw|hk|io|co|tv|top|xyz|vip|in)"
    r"(?:/[\w./?=&%-]*)?",
    re.IGNORECASE | re.ASCII,
)
_CONVERT_CHUNK = 64
_TABLE_LIMIT = 0x40000  # past the CJK extension planes nothing is story text


@dataclass(frozen=True, slots=True)
class NormalizedText:
    """``text[i]`` came from ``original[offsets[i]]``."""

    text: str
    offsets: npt.NDArray[np.int64]


@functools.cache
def _content_table() -> npt.NDArray[np.bool_]:
    """Which code points carry content: letters and numbers, but not private-use glyphs
    (anti-scraping fonts) or the placeholders sites put over censored words."""
    table = np.zeros(_TABLE_LIMIT, dtype=np.bool_)
    for code in range(_TABLE_LIMIT):
        if unicodedata.category(chr(code))[0] in "LN":
            table[code] = True
    for placeholder in "○〇□×":
        table[ord(placeholder)] = False
    return table


@functools.cache
def _converters(configs: tuple[str, ...]) -> tuple[opencc.OpenCC, ...]:
    return tuple(opencc.OpenCC(config) for config in configs)


@functools.cache
def _variant_table() -> dict[int, str]:
    table: dict[int, str] = {}
    data = resources.files("dedup").joinpath("data/variants.tsv").read_text("utf-8")
    for line in data.splitlines():
        if not line or line.startswith("#"):
            continue
        variant, folded, _why = line.split("\t", 2)
        table[ord(variant)] = folded
    return table


@functools.cache
def _ascii_lower() -> dict[int, int]:
    return {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


def _code_points(text: str) -> npt.NDArray[np.uint32]:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _from_code_points(codes: npt.NDArray[np.uint32]) -> str:
    return codes.astype(np.uint32).tobytes().decode("utf-32-le", "surrogatepass")


def _convert_script(text: str, configs: tuple[str, ...]) -> str:
    """OpenCC conversion that never changes the length, so offsets stay valid. A phrase rule
    that would change the length is given up for character-by-character conversion."""
    converted = text
    for converter in _converters(configs):
        converted = converter.convert(converted)
    if len(converted) == len(text):
        return converted
    pieces = []
    for start in range(0, len(text), _CONVERT_CHUNK):
        chunk = text[start : start + _CONVERT_CHUNK]
        piece = chunk
        for converter in _converters(configs):
            piece = converter.convert(piece)
        if len(piece) != len(chunk):
            piece = "".join(_convert_char(char, configs) for char in chunk)
        pieces.append(piece)
    return "".join(pieces)


@functools.lru_cache(maxsize=16384)
def _convert_char(char: str, configs: tuple[str, ...]) -> str:
    converted = char
    for converter in _converters(configs):
        converted = converter.convert(converted)
    return converted if len(converted) == 1 else char


def _nfkc(text: str, offsets: npt.NDArray[np.int64]) -> tuple[str, npt.NDArray[np.int64]]:
    """NFKC per character (full-width letters and digits, compatibility ideographs, Kangxi
    radicals). Most such mappings are one character to one, done by ``str.translate``."""
    if unicodedata.is_normalized("NFKC", text):
        return text, offsets
    one_to_one: dict[int, str] = {}
    expanding: set[str] = set()
    for char in set(text):
        mapped = unicodedata.normalize("NFKC", char)
        if mapped == char:
            continue
        if len(mapped) == 1:
            one_to_one[ord(char)] = mapped
        else:
            expanding.add(char)
    if not expanding:
        return text.translate(one_to_one), offsets
    pieces: list[str] = []
    repeat = np.ones(len(text), dtype=np.int64)
    for index, char in enumerate(text):
        mapped = unicodedata.normalize("NFKC", char)
        pieces.append(mapped)
        repeat[index] = len(mapped)
    return "".join(pieces), np.repeat(offsets, repeat)


def _keep_content(text: str, offsets: npt.NDArray[np.int64]) -> tuple[str, npt.NDArray[np.int64]]:
    if not text:
        return text, offsets
    codes = _code_points(text)
    table = _content_table()
    mask = np.zeros(len(codes), dtype=np.bool_)
    inside = codes < _TABLE_LIMIT
    mask[inside] = table[codes[inside]]
    return _from_code_points(codes[mask]), offsets[mask]


def normalize(original: str, script: Script = "simplified") -> NormalizedText:
    """Reduce ``original`` to its story characters in one script, with offsets back into it."""
    offsets = np.arange(len(original), dtype=np.int64)
    text = original
    if URL_PATTERN.search(text):
        keep = np.ones(len(text), dtype=np.bool_)
        for match in URL_PATTERN.finditer(text):
            keep[match.start() : match.end()] = False
        text = _from_code_points(_code_points(text)[keep])
        offsets = offsets[keep]
    text, offsets = _keep_content(text, offsets)
    text, offsets = _nfkc(text, offsets)
    text, offsets = _keep_content(text, offsets)  # NFKC can turn a symbol into punctuation
    text = text.translate(_ascii_lower())
    # Always through Simplified: the variant table folds there, and every Traditional standard
    # converges on it; the Traditional target is one canonical s2t of that.
    text = _convert_script(text, TO_SIMPLIFIED_CONFIGS)
    text = text.translate(_variant_table())
    if script == "traditional":
        text = _convert_script(text, (TO_TRADITIONAL_CONFIG,))
    return NormalizedText(text, offsets)
