"""Encoding detection on real text in every encoding scraped Chinese dumps use."""

from __future__ import annotations

import codecs
import io

import pytest

from dedup.errors import DecodeFailure
from dedup.read.decode import Replacements, decode_bytes, decode_stream, plausibility


def test_big5_fixture_is_not_utf8_and_decodes_as_big5(hongloumeng_big5_bytes: bytes) -> None:
    with pytest.raises(UnicodeDecodeError):
        hongloumeng_big5_bytes.decode("utf-8")
    decoded = decode_bytes(hongloumeng_big5_bytes)
    assert decoded.encoding == "big5hkscs"
    assert "甄士隱夢幻識通靈" in decoded.text


def test_big5_bytes_also_decode_as_gb18030_but_are_not_taken_for_it(
    hongloumeng_big5_bytes: bytes,
) -> None:
    # The trap: GB18030 accepts these bytes without an error, producing garbage.
    garbage = hongloumeng_big5_bytes.decode("gb18030", "replace")
    assert plausibility(garbage) < 0.5
    assert decode_bytes(hongloumeng_big5_bytes).encoding == "big5hkscs"


def test_traditional_text_saved_as_gb18030_is_read_as_gb18030(seed_traditional: str) -> None:
    data = seed_traditional.encode("gb18030")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    decoded = decode_bytes(data)
    assert decoded.encoding == "gb18030"
    assert decoded.text == seed_traditional


def test_simplified_gb18030(seed_simplified: str) -> None:
    data = seed_simplified.encode("gb18030")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    assert decode_bytes(data).text == seed_simplified
    assert decode_bytes(data).encoding == "gb18030"


@pytest.mark.parametrize(
    ("encode", "expected"),
    [
        (lambda text: codecs.BOM_UTF8 + text.encode("utf-8"), "utf-8-sig"),
        (lambda text: text.encode("utf-16"), "utf-16-le"),
        (lambda text: codecs.BOM_UTF16_BE + text.encode("utf-16-be"), "utf-16-be"),
        (lambda text: text.encode("utf-16-le"), "utf-16-le"),
        (lambda text: text.encode("utf-8"), "utf-8"),
    ],
)
def test_unicode_encodings(seed_simplified: str, encode, expected: str) -> None:  # type: ignore[no-untyped-def]
    decoded = decode_bytes(encode(seed_simplified))
    assert decoded.encoding == expected
    assert decoded.text == seed_simplified


def test_empty_file() -> None:
    with pytest.raises(DecodeFailure, match="empty"):
        decode_bytes(b"")


def test_binary_junk_is_refused() -> None:
    png_header = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8
    with pytest.raises(DecodeFailure, match="binary"):
        decode_bytes(png_header)


def test_one_bad_sequence_names_its_offset_and_replace_reads_it(seed_simplified: str) -> None:
    good = seed_simplified.encode("gb18030")
    data = good[:3000] + b"\xff" + good[3000:]
    with pytest.raises(DecodeFailure, match="offset 3000") as failure:
        decode_bytes(data)
    assert "--errors replace" in str(failure.value)
    decoded = decode_bytes(data, errors="replace")
    assert decoded.encoding == "gb18030"
    assert decoded.text.count("\ufffd") == 1


def test_forced_encoding_that_does_not_fit(hongloumeng_big5_bytes: bytes) -> None:
    with pytest.raises(DecodeFailure, match="does not decode as utf-8"):
        decode_bytes(hongloumeng_big5_bytes, encoding="utf-8")


@pytest.mark.parametrize("encoding", ["utf-8", "gb18030", "big5hkscs"])
def test_a_stream_says_where_a_bad_byte_is_when_chunks_cut_characters(
    seed_simplified: str, encoding: str
) -> None:
    """Chunks of 1,001 bytes cut two- and three-byte characters: the decoder holds back the
    cut start, and an offset counted from the chunk alone would be off by it."""
    text = seed_simplified.encode(encoding, "ignore").decode(encoding)
    # A bad byte in a chunk that starts with the end of a character cut by the chunk before.
    middle = next(
        middle
        for middle in range(len(text) // 2, len(text))
        if _cuts_a_character(text[:middle].encode(encoding), encoding)
    )
    before, after = text[:middle], text[middle:]
    bad = len(before.encode(encoding))
    data = before.encode(encoding) + b"\xff" + after.encode(encoding)
    with pytest.raises(DecodeFailure, match=f"at byte offset {bad + 40};"):
        list(
            decode_stream(
                data[:1001], io.BytesIO(data[1001:]), encoding, chunk_bytes=1001, start=40
            )
        )
    replaced: list[Replacements] = []
    chunks = decode_stream(
        data[:1001], io.BytesIO(data[1001:]), encoding, "replace", 1001, replaced, start=40
    )
    assert "".join(chunks) == before + "\ufffd" + after
    assert [(tally.count, tally.first) for tally in replaced] == [(1, bad + 40)]


def _cuts_a_character(data: bytes, encoding: str) -> bool:
    """Whether the last chunk boundary (every 1,001 bytes) in ``data`` cuts a character."""
    try:
        data[: len(data) - len(data) % 1001].decode(encoding)
    except UnicodeDecodeError:
        return True
    return False
