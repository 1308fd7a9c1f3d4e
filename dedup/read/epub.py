"""EPUB books: the chapters in spine (reading) order, the visible text of each XHTML file."""

from __future__ import annotations

import io
import posixpath
import zipfile
from xml.etree import ElementTree

from dedup.errors import DecodeFailure, NotAnEpub
from dedup.models import Document
from dedup.read.decode import decode_bytes
from dedup.read.html import visible_text

_CONTAINER = "META-INF/container.xml"


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def documents_from_epub(path: str, source: str, data: bytes) -> tuple[list[Document], list[str]]:
    """One document per spine item (``record`` is its position in the spine)."""
    try:
        book = zipfile.ZipFile(io.BytesIO(data))
        container = ElementTree.fromstring(book.read(_CONTAINER))
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError) as error:
        raise NotAnEpub(f"not a readable EPUB ({error}); check the file is complete") from error
    rootfile = next(
        (e.get("full-path") for e in container.iter() if _local(e.tag) == "rootfile"), None
    )
    if not rootfile:
        raise NotAnEpub("not a readable EPUB (no rootfile in META-INF/container.xml)")
    try:
        package = ElementTree.fromstring(book.read(rootfile))
    except (KeyError, ElementTree.ParseError) as error:
        raise NotAnEpub(f"not a readable EPUB (package file {rootfile}: {error})") from error
    base = posixpath.dirname(rootfile)
    manifest = {
        item.get("id"): item.get("href")
        for item in package.iter()
        if _local(item.tag) == "item" and item.get("href")
    }
    spine = [item.get("idref") for item in package.iter() if _local(item.tag) == "itemref"]

    documents: list[Document] = []
    warnings: list[str] = []
    for position, idref in enumerate(spine):
        href = manifest.get(idref)
        if href is None:
            warnings.append(f"spine item {position}: {idref!r} is not in the manifest, skipped")
            continue
        name = posixpath.normpath(posixpath.join(base, href.split("#")[0]))
        try:
            markup = decode_bytes(book.read(name)).text
        except KeyError:
            warnings.append(f"spine item {position}: {name} is missing from the book, skipped")
            continue
        except DecodeFailure as failure:
            warnings.append(f"spine item {position}: {name}: {failure}")
            continue
        text, title = visible_text(markup)
        if text.strip():
            documents.append(Document(path, source, position, text, title))
    return documents, warnings
