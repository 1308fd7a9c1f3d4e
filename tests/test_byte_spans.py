"""Passages' texts read back by their bytes: the same texts as reading the file again."""

from __future__ import annotations

import codecs
import gzip
import os
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dedup
from dedup.config import ScanConfig
from dedup.engine import member_texts, tasks
from dedup.engine.byte_spans import NOT_IN_BYTES, byte_offsets, texts_at
from dedup.read import FoundFile, discover_inputs

# One-, two-, three- and four-byte characters in UTF-8 (ASCII, Latin, Han, a Han extension B).
CHARACTERS = st.sampled_from(list("a\n\r1éñ天地玄黄，。「」\U00020000\U0002a6d6"))


@settings(deadline=None)  # the first example compiles the loop
@given(st.lists(CHARACTERS, max_size=60).map("".join), st.data(), st.integers(1, 9))
def test_byte_offsets_are_those_of_the_encoded_prefix(
    text: str, data: st.DataObject, block_chars: int
) -> None:
    positions = data.draw(st.lists(st.integers(0, len(text)), max_size=12))
    found = byte_offsets(text, np.array(positions, dtype=np.int64), block_chars)
    assert found.tolist() == [len(text[:position].encode("utf-8")) for position in positions]


def test_positions_past_the_text_are_refused() -> None:
    with pytest.raises(ValueError, match="outside"):
        byte_offsets("天地", np.array([3], dtype=np.int64))


def _dump(tmp_path: Path, seed_simplified: str, hongloumeng_simplified: str) -> Path:
    """Sites with the same chapters as plain UTF-8 (LF and CRLF), with a byte-order mark, as
    GB18030, gzipped, in a zip, and read with replacement characters."""
    text = hongloumeng_simplified[:6000]
    files: dict[str, bytes] = {
        "plain/a.txt": (seed_simplified + text).encode("utf-8"),
        "crlf/a.txt": text.encode("utf-8"),  # the sample keeps its CRLF line ends
        "bom/a.txt": codecs.BOM_UTF8 + (seed_simplified + text).encode("utf-8"),
        "gbk/a.txt": (text + seed_simplified).encode("gb18030"),
        "gz/a.txt.gz": gzip.compress(seed_simplified.encode("utf-8")),
        "broken/a.txt": seed_simplified.encode("utf-8")[:-1] + b"\xff\n" + text.encode("utf-8"),
    }
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    (tmp_path / "zip").mkdir()
    with zipfile.ZipFile(tmp_path / "zip" / "zipped.zip", "w") as archive:
        archive.writestr("a.txt", text.encode("utf-8"))
    return tmp_path


def _prepared(found: FoundFile, config: ScanConfig) -> list[tasks.PreparedInput]:
    return [item for item in tasks.prepare_file(found, config).inputs if item.entry]


def test_texts_by_bytes_are_the_texts_read_again(
    tmp_path: Path, seed_simplified: str, hongloumeng_simplified: str
) -> None:
    dump = _dump(tmp_path, seed_simplified, hongloumeng_simplified)
    config = ScanConfig(errors="replace")
    by_bytes = set()
    for found in discover_inputs([str(dump)])[0]:
        for item in _prepared(found, config):
            # a run of passages (a chapter's) at a time, from its first passage to its last
            firsts = item.passages.run_first.column()
            lasts = np.append(firsts[1:], len(item.passages)) - 1
            assert len(item.byte_spans) == len(firsts) > 0
            known = item.byte_spans[:, 0] != NOT_IN_BYTES
            assert known.all() or not known.any()
            if not known.any():
                continue
            by_bytes.add(found.source)
            runs = replace(item.passages.take(firsts), end=item.passages.end[lasts])
            lengths = (runs.end - runs.start).tolist()
            starts, ends = item.byte_spans[:, 0].tolist(), item.byte_spans[:, 1].tolist()
            texts = texts_at(found.fs_path, found.stamp, starts, ends, lengths)
            assert texts == member_texts.passage_texts(found, config, runs)
            assert all(texts) and sum(map(len, texts)) > 1000
    # Not by bytes: another encoding, compressed, inside an archive, decoded with replacements.
    assert by_bytes == {"plain", "crlf", "bom"}


def test_a_scan_reads_the_same_member_texts_either_way(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    seed_simplified: str,
    hongloumeng_simplified: str,
) -> None:
    dump = _dump(tmp_path, seed_simplified, hongloumeng_simplified)
    by_bytes = dedup.scan([str(dump)], errors="replace", jobs=2)
    members = {member.source for cluster in by_bytes.clusters for member in cluster.members}
    assert {"plain", "crlf", "bom", "gbk", "gz", "zip", "broken"} <= members

    def not_known(*args: Any) -> Any:
        return np.full((len(args[1].run_first), 2), NOT_IN_BYTES, dtype=np.int32)

    monkeypatch.setattr(tasks, "_byte_spans", not_known)
    for jobs in (1, 2):
        read_again = dedup.scan([str(dump)], errors="replace", jobs=jobs)
        assert read_again.to_json() == by_bytes.to_json()


def test_texts_at_a_file_that_changed_are_none(tmp_path: Path, seed_simplified: str) -> None:
    path = tmp_path / "a.txt"
    path.write_text(seed_simplified, "utf-8")
    stamp = (path.stat().st_size, path.stat().st_mtime_ns)
    start, end = 30, 90
    where = byte_offsets(seed_simplified, np.array([start, end], dtype=np.int64)).tolist()
    read = texts_at(str(path), stamp, [where[0]], [where[1]], [end - start])
    assert read == [seed_simplified[start:end]]
    # Rewritten with the same size and time, a Han character replaced by three ASCII letters:
    # the bytes decode, but not to a text of the passage's length.
    han = next(i for i in range(start, end) if len(seed_simplified[i].encode("utf-8")) == 3)
    path.write_text(seed_simplified[:han] + "abc" + seed_simplified[han + 1 :], "utf-8")
    os.utime(path, ns=(stamp[1], stamp[1]))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == stamp
    assert texts_at(str(path), stamp, [where[0]], [where[1]], [end - start]) is None
    path.write_text("改" + seed_simplified, "utf-8")  # a new size and time
    assert texts_at(str(path), stamp, [where[0]], [where[1]], [end - start]) is None
    path.unlink()
    assert texts_at(str(path), stamp, [where[0]], [where[1]], [end - start]) is None
