"""Turn a file's bytes into text, choosing the encoding by evidence rather than by hope.

Scraped Chinese text comes as UTF-8 (with or without BOM), GB18030/GBK, Big5 (with HKSCS
extensions) or UTF-16. Several of these decode each other's bytes without an error but into
garbage (a Big5 file "decodes" as GB18030), so a strict decode alone proves little: each
candidate is also scored by how much of the result is ordinary Chinese or ASCII text.
"""

from __future__ import annotations

import codecs
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import numpy as np
import numpy.typing as npt

from dedup.codepoints import code_points
from dedup.errors import DecodeFailure

BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Codecs that read a byte-order mark themselves, for decoding a stream.
_BOM_STREAM_CODECS = {
    "utf-32-le": "utf-32",
    "utf-32-be": "utf-32",
    "utf-8-sig": "utf-8-sig",
    "utf-16-le": "utf-16",
    "utf-16-be": "utf-16",
}
# Tried in this order when there is no BOM; ties go to the earlier one.
CANDIDATES = ("utf-8", "gb18030", "big5hkscs", "utf-16-le", "utf-16-be")
SAMPLE_BYTES = 256 * 1024
# Share of characters that must look like real text for a decoding to be believed.
MIN_PLAUSIBLE = 0.85


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    encoding: str
    # With errors="replace": how many invalid byte sequences became U+FFFD, and where the
    # first one was (a byte offset), so that the reader can say so.
    replaced: int = 0
    first_replaced: int = -1

    def replacement_warnings(self) -> list[str]:
        return replacement_warning(self.replaced, self.first_replaced)


def replacement_warning(replaced: int, first: int) -> list[str]:
    if not replaced:
        return []
    sequences = "sequence" if replaced == 1 else "sequences"
    return [
        f"{replaced:,} invalid byte {sequences} replaced with U+FFFD (--errors replace), the "
        f"first at byte offset {first:,}"
    ]


@dataclass
class Replacements:
    """What the counting error handler saw: decoding errors, and the first one's byte offset
    (``base`` is the offset of what is being decoded, for a stream read in chunks)."""

    count: int = 0
    first: int = -1
    base: int = 0


_tallies: list[Replacements] = []  # the tally the handler adds to: the innermost decode's
_COUNTING = "dedup-counted-replace"


@functools.cache
def _counting_errors() -> str:
    """The name of an error handler that replaces as "replace" does and counts (registered on
    first use, not when dedup is imported)."""

    def replace_and_count(error: UnicodeError) -> tuple[str, int]:
        if not isinstance(error, UnicodeDecodeError):
            raise error
        if _tallies:
            tally = _tallies[-1]
            if not tally.count:
                tally.first = tally.base + error.start
            tally.count += 1
        return "\ufffd", error.end

    codecs.register_error(_COUNTING, replace_and_count)
    return _COUNTING


def _decoded(data: bytes, encoding: str, errors: str, strip_bom: bool = False) -> Decoded:
    if errors != "replace":
        text = data.decode(encoding, errors)
        return Decoded(text.removeprefix("\ufeff") if strip_bom else text, encoding)
    tally = Replacements()
    _tallies.append(tally)
    try:
        text = data.decode(encoding, _counting_errors())
    finally:
        _tallies.pop()
    text = text.removeprefix("\ufeff") if strip_bom else text
    return Decoded(text, encoding, tally.count, tally.first)


@functools.lru_cache(maxsize=65536)
def _plausible(char: str) -> bool:
    """Ordinary text: ASCII, CJK punctuation and full-width forms, or a common Han character
    (any GB2312 character, or a Big5 level-1 "frequently used" character)."""
    code = ord(char)
    if code < 0x80:
        return char.isprintable() or char in "\n\r\t"
    if 0x3000 <= code <= 0x303F or 0xFF01 <= code <= 0xFF5E or 0x2010 <= code <= 0x206F:
        return True
    if not 0x4E00 <= code <= 0x9FFF:
        return False
    try:
        char.encode("gb2312")
        return True
    except UnicodeEncodeError:
        pass
    try:
        lead = char.encode("big5")[0]
    except UnicodeEncodeError:
        return False
    return 0xA4 <= lead <= 0xC6


@functools.cache
def _plausible_table() -> npt.NDArray[np.bool_]:
    """_plausible for every code point of the Basic Multilingual Plane, looked up in bulk."""
    return np.fromiter((_plausible(chr(code)) for code in range(0x10000)), np.bool_, 0x10000)


def plausibility(text: str) -> float:
    """The share of characters in ``text`` that look like ordinary Chinese or ASCII text."""
    if not text:
        return 0.0
    codes = code_points(text)
    inside = codes[codes < 0x10000]
    return float(np.count_nonzero(_plausible_table()[inside])) / len(codes)


def _sample(data: bytes, encoding: str, final: bool | None = None) -> str:
    decoder = codecs.getincrementaldecoder(encoding)("strict")
    if final is None:
        final = len(data) <= SAMPLE_BYTES
    return decoder.decode(data[:SAMPLE_BYTES], final=final)


def _first_bad_byte(data: bytes, encoding: str) -> int:
    try:
        data.decode(encoding)
    except UnicodeDecodeError as error:
        return error.start
    return -1


def detect_encoding(head: bytes, encoding: str | None = None) -> str:
    """The encoding of a file too large to decode at once, judged from its first bytes; the
    codec returned strips a byte-order mark itself."""
    if encoding is not None:
        return encoding
    for bom, bom_encoding in BOMS:
        if head.startswith(bom):
            return _BOM_STREAM_CODECS[bom_encoding]
    scored = []
    for rank, candidate in enumerate(CANDIDATES):
        try:
            sample = _sample(head[: SAMPLE_BYTES + 8], candidate, final=False)
        except UnicodeDecodeError:
            continue
        if "\x00" not in sample:
            scored.append((plausibility(sample), -rank, candidate))
    if not scored or max(scored)[0] < MIN_PLAUSIBLE:
        raise DecodeFailure(
            "not text in any encoding tried (UTF-8, GB18030, Big5-HKSCS, UTF-16) judging from "
            "its first bytes; if it is text, pass --encoding NAME"
        )
    return max(scored)[2]


def decode_stream(
    head: bytes,
    rest: IO[bytes],
    encoding: str,
    errors: str = "strict",
    chunk_bytes: int = 1 << 20,
    replaced: list[Replacements] | None = None,
    start: int = 0,
) -> Iterator[str]:
    """Decode ``head`` then the rest of the stream, a chunk at a time; with
    ``errors="replace"``, what was replaced is appended to ``replaced`` at the end. Byte
    offsets in messages count from ``start``, where the stream is in its file."""
    counting = errors == "replace"
    decoder = codecs.getincrementaldecoder(encoding)(_counting_errors() if counting else errors)
    consumed = start
    chunk = head
    tally = Replacements()
    while True:
        # Offsets in an error are in the bytes the decoder held back from the last chunk (the
        # start of a character cut by the chunk's end) and this chunk.
        tally.base = consumed - len(decoder.getstate()[0])
        if counting:
            _tallies.append(tally)
        try:
            text = decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as error:
            raise DecodeFailure(
                f"invalid {encoding} byte sequence at byte offset {tally.base + error.start}; "
                "pass --errors replace to read it with replacement characters, or --encoding NAME"
            ) from error
        finally:
            if counting:
                _tallies.pop()
        if text:
            yield text
        if not chunk:
            if replaced is not None:
                replaced.append(tally)
            return
        consumed += len(chunk)
        chunk = rest.read(chunk_bytes)


def decode_bytes(data: bytes, encoding: str | None = None, errors: str = "strict") -> Decoded:
    """Decode ``data``; ``encoding`` forces one, ``errors="replace"`` accepts a file that only
    decodes with replacement characters."""
    if not data:
        raise DecodeFailure("empty file: nothing to read")
    if encoding is not None:
        try:
            return _decoded(data, encoding, errors)
        except UnicodeDecodeError as error:
            raise DecodeFailure(
                f"does not decode as {encoding} (first bad byte at offset {error.start}); "
                "check --encoding, or pass --errors replace to read it anyway"
            ) from error
        except LookupError as error:
            raise DecodeFailure(
                f"unknown encoding {encoding!r}; use a Python codec name"
            ) from error

    for bom, bom_encoding in BOMS:
        if data.startswith(bom):
            try:
                decoded = _decoded(data, bom_encoding, errors, strip_bom=True)
            except UnicodeDecodeError as error:
                raise DecodeFailure(
                    f"starts with a {bom_encoding} byte-order mark but has an invalid byte "
                    f"sequence at offset {error.start}; pass --errors replace to read it anyway"
                ) from error
            return decoded

    # Valid UTF-8 throughout is all the evidence needed: GB18030, Big5 and UTF-16 text (beyond
    # pure ASCII) practically never is, and scoring costs time on every file.
    if b"\x00" not in data[:SAMPLE_BYTES]:
        try:
            return Decoded(data.decode("utf-8"), "utf-8")
        except UnicodeDecodeError:
            pass

    scored: list[tuple[float, int, str]] = []
    for rank, candidate in enumerate(CANDIDATES):
        if candidate.startswith("utf-16") and len(data) % 2:
            continue
        try:
            sample = _sample(data, candidate)
        except UnicodeDecodeError:
            continue
        if "\x00" in sample:
            continue
        scored.append((plausibility(sample), -rank, candidate))
    for score, _, candidate in sorted(scored, reverse=True):
        if score < MIN_PLAUSIBLE:
            break
        try:
            return Decoded(data.decode(candidate), candidate)
        except UnicodeDecodeError:
            continue  # the sample was clean but a later part is not: try the next candidate

    if b"\x00" in data[:SAMPLE_BYTES] and not scored:
        raise DecodeFailure(_with_nul_bytes(data))
    guess = _best_with_replacement(data)
    if guess is None:
        raise DecodeFailure(
            "not text in any encoding tried (UTF-8, GB18030, Big5-HKSCS, UTF-16): binary or "
            "unknown data. If it is text, pass --encoding NAME"
        )
    if errors == "replace":
        return _decoded(data, guess.encoding, errors)
    offset = _first_bad_byte(data, guess.encoding)
    if offset < 0:  # it decodes, but NUL bytes kept it from being believed
        raise DecodeFailure(_with_nul_bytes(data))
    raise DecodeFailure(
        f"looks like {guess.encoding} but has an invalid byte sequence at byte offset {offset}; "
        "pass --errors replace to read it with replacement characters, or --encoding NAME"
    )


def _with_nul_bytes(data: bytes) -> str:
    first = data.find(b"\x00")
    return (
        f"binary data: holds NUL bytes (the first at byte offset {first:,}), which "
        "text never has; remove the file from the dump, strip them (tr -d '\\000') if it is "
        "text, or pass --encoding if it is UTF-16/UTF-32 text"
    )


def _best_with_replacement(data: bytes) -> Decoded | None:
    best: tuple[float, str, str] | None = None
    for candidate in CANDIDATES[:3]:
        text = data.decode(candidate, "replace")
        score = plausibility(text[: SAMPLE_BYTES // 2].replace("\ufffd", ""))
        if best is None or score > best[0]:
            best = (score, text, candidate)
    if best is None or best[0] < MIN_PLAUSIBLE - 0.1:
        return None
    return Decoded(best[1], best[2])
