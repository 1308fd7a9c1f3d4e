"""Plain-text dumps: one chapter per file, or a whole book with chapter headings."""

from __future__ import annotations

from dedup.models import Document
from dedup.read.decode import Decoded


def documents_from_text(
    path: str, source: str, decoded: Decoded
) -> tuple[list[Document], list[str]]:
    # The text is kept exactly as decoded (CRLF included): report offsets index into it.
    return [Document(path=path, source=source, record=None, text=decoded.text)], []
