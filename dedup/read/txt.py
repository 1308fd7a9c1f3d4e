"""Plain-text dumps: one chapter per file, or a whole book with chapter headings."""

from __future__ import annotations

from collections.abc import Iterator

from dedup.models import Document
from dedup.read.decode import Decoded


def documents_from_text(
    path: str, source: str, decoded: Decoded
) -> tuple[list[Document], list[str]]:
    # The text is kept exactly as decoded (CRLF included): report offsets index into it.
    return [Document(path=path, source=source, record=None, text=decoded.text)], []


# A streamed text file is handed on in pieces of about this many characters, cut at a line end.
PIECE_CHARS = 8 << 20


def documents_from_text_stream(path: str, source: str, chunks: Iterator[str]) -> Iterator[Document]:
    """A large text file, a piece at a time; each piece knows its offset in the whole file."""
    buffer = ""
    base = 0
    for chunk in chunks:
        buffer += chunk
        while len(buffer) >= 2 * PIECE_CHARS:
            cut = buffer.rfind("\n", PIECE_CHARS // 2, PIECE_CHARS) + 1 or PIECE_CHARS
            yield Document(path, source, None, buffer[:cut], base=base, continued=base > 0)
            base += cut
            buffer = buffer[cut:]
    if buffer or base == 0:
        yield Document(path, source, None, buffer, base=base, continued=base > 0)
