"""Where an input is: a path on this machine's filesystem, or an fsspec URL (``s3://bucket/
dump/``, ``gcs://``, ``file://``, ``memory://``), read through fsspec, which is installed with
the dask extra (a URL's own filesystem, such as s3fs, is the user's to install).

A URL's files are listed and read through fsspec alone: nothing is copied to disk first. Their
stamp (dedup.read.discover.FoundFile.stamp) is their size and a digest of what their
filesystem says of their last change (modification time, ETag, checksum), so a file changed
while the scan runs is found out as a local one is; the member texts of a plain UTF-8 file are
read back by their bytes, as a local file's are, in ranges asked of its filesystem at once
(:func:`read_ranges`)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from typing import Any, BinaryIO

from dedup.errors import InputPathError

_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]+://")


def is_url(path: str) -> bool:
    """Whether ``path`` is a URL (``scheme://...``) rather than a path of this machine."""
    return bool(_URL.match(path))


def open_input(where: str) -> BinaryIO:
    """The file at ``where`` (a path or a URL), opened to read its bytes (seekable)."""
    if not is_url(where):
        return open(where, "rb")
    import fsspec

    opened: BinaryIO = fsspec.open(where, "rb").open()
    return opened


def read_ranges(url: str, starts: Sequence[int], ends: Sequence[int]) -> list[bytes]:
    """The bytes ``starts[i]:ends[i]`` of the file at ``url``, asked of its filesystem in one
    call (fsspec's ``cat_ranges``, which S3's and other object stores' filesystems make as
    requests at once, rather than reading the whole file again)."""
    filesystem, path = _filesystem(url)
    return list(filesystem.cat_ranges([path] * len(starts), list(starts), list(ends)))


def read_all(where: str) -> bytes:
    with open_input(where) as handle:
        return handle.read()


def exists(where: str) -> bool:
    if not is_url(where):
        return os.path.lexists(where)
    filesystem, path = _filesystem(where)
    return bool(filesystem.exists(path))


def is_plain_file(where: str) -> bool:
    """Whether ``where`` is a file (for a path: a regular file, not a link)."""
    if not is_url(where):
        return os.path.isfile(where) and not os.path.islink(where)
    filesystem, path = _filesystem(where)
    return bool(filesystem.isfile(path))


def size_of(where: str) -> int:
    if not is_url(where):
        return os.path.getsize(where)
    filesystem, path = _filesystem(where)
    return int(filesystem.size(path))


# What filesystems say of a file's last change: local and memory (mtime, created), S3
# (LastModified, ETag), GCS (updated, md5Hash, generation), Azure (last_modified, etag).
_CHANGE_FIELDS = (
    "mtime", "created", "LastModified", "last_modified", "updated", "ETag", "etag", "md5Hash",
    "generation", "checksum",
)  # fmt: skip


def url_stamp(url: str) -> tuple[int, int] | None:
    """(size, a digest of its change fields) of the file at ``url``; None if it cannot be
    asked. A filesystem that tells no change field has its files stamped by size alone."""
    try:
        filesystem, path = _filesystem(url)
        info = filesystem.info(path)
    except (InputPathError, OSError, ValueError):
        return None
    said = repr([(name, str(info[name])) for name in _CHANGE_FIELDS if name in info])
    digest = int.from_bytes(hashlib.sha256(said.encode("utf-8")).digest()[:7], "big")
    return int(info.get("size") or 0), digest


def url_files(url: str) -> tuple[list[tuple[str, tuple[str, ...]]], list[str]]:
    """The files at or under ``url``: (each file's URL, its parts below ``url``), in order;
    and the URLs of what is there but not a regular file (a pipe, a device, or a link to
    neither, as a local filesystem lists them), which are not read: opening a pipe would wait
    for ever.
    A URL that does not exist, or whose filesystem fsspec cannot load, stops the scan, as a
    path that does not exist does."""
    filesystem, root = _filesystem(url)
    try:
        if not filesystem.exists(root):
            raise InputPathError(f"{url}: no such file or folder; check the URL and try again")
        if not filesystem.isdir(root):
            return ([(url, ())], []) if filesystem.isfile(root) else ([], [url])
        found = filesystem.find(root, withdirs=False, detail=True)
    except OSError as error:
        raise InputPathError(
            f"{url}: cannot list it ({error}); check the URL and try again"
        ) from None
    top = root.rstrip("/")
    files, others = [], []
    for path in sorted(found):
        entry = found[path]
        regular = entry.get("type", "file") == "file"
        if not regular and not (entry.get("islink") and filesystem.isfile(path)):
            others.append(filesystem.unstrip_protocol(path))
            continue
        relative = path[len(top) :].strip("/").split("/") if path.startswith(top) else [path]
        files.append((filesystem.unstrip_protocol(path), tuple(relative)))
    return files, others


def _filesystem(url: str) -> tuple[Any, str]:
    try:
        import fsspec
    except ImportError:
        raise InputPathError(
            f"{url}: reading URLs needs fsspec: pip install 'dedup[dask]' (or pip install fsspec)"
        ) from None
    try:
        filesystem, path = fsspec.core.url_to_fs(url)
    except ImportError as error:  # the protocol's package is not installed (s3fs for s3://)
        raise InputPathError(f"{url}: {error} (pip install it), then scan again") from None
    except ValueError as error:
        raise InputPathError(
            f"{url}: {error}; check the URL (fsspec names its protocols, s3:// for S3, say)"
        ) from None
    return filesystem, str(path)
