"""A large JSON Lines file read in slices, a task each (dedup.read.slices): the report is the
one reading the file as one stream gives, byte for byte, whatever the encoding, the broken
lines, the bytes replaced or the number of workers; a file that cannot be sliced safely is
read whole."""

from __future__ import annotations

import bisect
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

import dedup
from dedup.config import ScanConfig
from dedup.read import discover_inputs, streams
from dedup.read import slices as slicing
from dedup.read.decode import SAMPLE_BYTES
from dedup.read.slices import FileSlice

SLICE = 64 << 10
BROKEN = '{"text": "broken'


def mirror_records(mirror_dump: Path) -> list[str]:
    """The mirror sites' pages as JSON Lines records naming their site, with 25 broken lines
    among them (more than a file's warnings list)."""
    lines = [
        json.dumps(
            {"site": page.parent.name, "title": page.stem, "text": page.read_text()},
            ensure_ascii=False,
        )
        for page in sorted(mirror_dump.glob("*/*.txt"))
    ]
    for number in range(25):
        lines.insert(7 + number * 31, BROKEN)
    return lines


@pytest.fixture()
def streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files past 4 KB read as streams, as a file past 64 MB is."""
    monkeypatch.setattr(streams, "STREAM_BYTES", 4096)


def _scan_both(
    path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any
) -> tuple[dedup.Report, dedup.Report, tuple[FileSlice, ...]]:
    """The scan of ``path`` read whole as one stream, and in slices; the slices, counted."""
    monkeypatch.setattr(slicing, "SLICE_BYTES", 1 << 40)
    whole = dedup.scan([str(path)], **options)
    monkeypatch.setattr(slicing, "SLICE_BYTES", SLICE)
    sliced = dedup.scan([str(path)], **options)
    config = ScanConfig(**options)
    (found,), _ = discover_inputs([str(path)])
    parts = slicing.planned_slices(found, config)
    counts = [slicing.count_lines(found, part, config) for part in parts]
    return whole, sliced, slicing.counted(parts, counts) or parts


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_jsonl_file_in_slices_gives_the_report_of_one_read(
    mirror_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: None, jobs: int
) -> None:
    path = tmp_path / "dump.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(mirror_records(mirror_dump)).encode())
    whole, sliced, parts = _scan_both(path, monkeypatch, jobs=jobs, source_fields=("site",))
    assert len(parts) >= 10
    assert sliced.to_json() == whole.to_json()
    (entry,) = sliced.inputs
    assert entry.encoding == "utf-8-sig"
    assert entry.records == len(mirror_records(mirror_dump)) - 25
    assert entry.warnings[0].startswith("record 7 (line 8): not valid JSON")
    assert entry.warnings[-1] == "... and 5 more like these"
    # Not a scan of nothing: the sites' copies of a page are found across the slices.
    assert len(sliced.document_groups) >= 40
    firsts = [part.first_line for part in parts]
    records = {m.record for c in sliced.clusters for m in c.members if m.record is not None}
    assert len({bisect.bisect(firsts, record) for record in records}) >= 0.8 * len(parts)


def test_slices_in_gb18030_with_bytes_replaced_say_where_the_first_one_is(
    mirror_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: None
) -> None:
    lines = [line.encode("gb18030") for line in mirror_records(mirror_dump)]
    # Past the bytes the encoding is judged from, and the first slices.
    after = next(n for n in range(len(lines)) if sum(map(len, lines[:n])) > SAMPLE_BYTES)
    for number in range(after, len(lines), 20):
        lines[number] = lines[number].replace(b'"text": "', b'"text": "\xff', 1)
    data = b"\n".join(lines)
    path = tmp_path / "dump.jsonl"
    path.write_bytes(data)
    whole, sliced, parts = _scan_both(path, monkeypatch, jobs=2, errors="replace")
    assert len(parts) >= 8
    assert sliced.to_json() == whole.to_json()
    (entry,) = sliced.inputs
    assert entry.encoding == "gb18030"
    replaced, first = len(range(after, len(lines), 20)), data.index(b"\xff")
    assert entry.warnings[-1] == (
        f"{replaced} invalid byte sequences replaced with U+FFFD (--errors replace), the first "
        f"at byte offset {first:,}"
    )
    assert sliced.clusters


def test_a_slice_that_does_not_decode_skips_the_file_as_one_read_does(
    mirror_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: None
) -> None:
    data = "\n".join(mirror_records(mirror_dump)).encode()
    bad = data.index(b"\n", len(data) // 2) + 12
    path = tmp_path / "dump.jsonl"
    path.write_bytes(data[:bad] + b"\xff" + data[bad:])
    whole, sliced, parts = _scan_both(path, monkeypatch, jobs=2)
    assert len(parts) >= 10
    assert sliced.to_json() == whole.to_json()
    (skipped,) = sliced.skipped
    assert skipped.reason.startswith(f"invalid utf-8 byte sequence at byte offset {bad};")


def test_a_line_end_taken_into_an_invalid_sequence_leaves_the_file_whole(
    mirror_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: None
) -> None:
    """In GB18030, 0x81 0x30 starts a four-byte character. At the end of a slice, replaced,
    it takes the slice's last line end along (as the end of a file would); read on, as the
    whole file is, it does not. So the slice's lines cannot be counted, and the file is read
    whole."""
    config = ScanConfig(errors="replace", encoding="gb18030")
    monkeypatch.setattr(slicing, "SLICE_BYTES", SLICE)
    lines = [line.encode("gb18030") for line in mirror_records(mirror_dump)]
    path = tmp_path / "dump.jsonl"
    path.write_bytes(b"\n".join(lines))
    (found,), _ = discover_inputs([str(path)])
    end = slicing.planned_slices(found, config)[3].end
    ends = list(itertools.accumulate(len(line) + 1 for line in lines))
    lines[ends.index(end)] += b"\x81\x30"
    path.write_bytes(b"\n".join(lines))
    (found,), _ = discover_inputs([str(path)])
    parts = slicing.planned_slices(found, config)
    assert path.read_bytes()[parts[3].end - 3 : parts[3].end] == b"\x81\x30\n"
    counts = [slicing.count_lines(found, part, config) for part in parts]
    assert counts[3] is None and None not in counts[:3] + counts[4:]
    assert slicing.counted(parts, counts) == ()
    whole, sliced, _parts = _scan_both(
        path, monkeypatch, jobs=2, errors="replace", encoding="gb18030"
    )
    assert sliced.to_json() == whole.to_json()
    assert sliced.inputs[0].records == len(lines) - 25 - 1  # the line made invalid JSON


def test_only_large_plain_jsonl_in_a_line_safe_encoding_is_sliced(
    mirror_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: None
) -> None:
    monkeypatch.setattr(slicing, "SLICE_BYTES", SLICE)
    text = "\n".join(mirror_records(mirror_dump))
    (tmp_path / "a.jsonl").write_text(text, "utf-8")
    (tmp_path / "b.jsonl").write_text(text, "utf-16")
    (tmp_path / "c.txt").write_text(text, "utf-8")
    (tmp_path / "d.jsonl").write_text(text[: 4096 - 100], "utf-8")
    found, _ = discover_inputs([str(tmp_path)])
    planned = {
        file.path.rsplit("/", 1)[1]: slicing.planned_slices(file, ScanConfig()) for file in found
    }
    assert len(planned.pop("a.jsonl")) >= 10
    assert planned == {"b.jsonl": (), "c.txt": (), "d.jsonl": ()}
    parts = slicing.planned_slices(found[0], ScanConfig())
    assert parts[0].start == 0 and parts[-1].end == len(text.encode())
    for before, after in itertools.pairwise(parts):
        assert before.end == after.start and text.encode()[after.start - 1] == ord("\n")


def test_an_index_stores_a_file_read_in_slices_as_one_read_in_one_go(
    mirror_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: None
) -> None:
    from dedup import index

    path = tmp_path / "dump.jsonl"
    path.write_text("\n".join(mirror_records(mirror_dump)), "utf-8")
    reports = []
    for slice_bytes in (1 << 40, SLICE):
        monkeypatch.setattr(slicing, "SLICE_BYTES", slice_bytes)
        store = tmp_path / f"{slice_bytes}.dedup"
        index.add(store, [path], ScanConfig(source_fields=("site",), jobs=2))
        reports.append(index.report(store).to_json())
    assert reports[0] == reports[1]
    assert json.loads(reports[1])["clusters"]


def test_a_cleaned_copy_of_a_file_read_in_slices_is_the_same(
    mirror_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: None
) -> None:
    from dedup.clean import clean

    dump = tmp_path / "dump"
    dump.mkdir()
    (dump / "crawl.jsonl").write_text("\n".join(mirror_records(mirror_dump)), "utf-8")
    copies = []
    for slice_bytes in (1 << 40, SLICE):
        monkeypatch.setattr(slicing, "SLICE_BYTES", slice_bytes)
        out = tmp_path / f"clean-{slice_bytes}"
        clean([dump], out, ScanConfig(source_fields=("site",), jobs=2))
        copies.append({p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()})
    assert copies[0] == copies[1]
    kept = copies[1]["crawl.jsonl"].decode().splitlines()
    assert 0 < len(kept) < len(mirror_records(mirror_dump)) - 25  # copies left out


def test_found_files_none_of_them_json_lines_are_not_each_looked_at_for_slices(
    mirror_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: None
) -> None:
    """A crawl's found files are rows on disk: where none is JSON Lines, none is cut, and
    the tasks and slices are known without making each file's record again; with a large
    JSON Lines file among them, it is cut as before."""
    from dedup.engine.gather import file_slices
    from dedup.read.discover import FoundFiles

    monkeypatch.setattr(slicing, "SLICE_BYTES", SLICE)
    text = "\n".join(mirror_records(mirror_dump))
    for name in ("a.txt", "b.txt", "c.json"):
        (tmp_path / name).write_text(text, "utf-8")
    found, _ = discover_inputs([str(tmp_path)])
    assert found.formats == {"txt", "json"}
    config = ScanConfig()

    def no_look(self: FoundFiles, row: int) -> None:
        raise AssertionError(f"file {row} made again")

    with monkeypatch.context() as looks:
        looks.setattr(FoundFiles, "_row", no_look)
        assert slicing.most_tasks(found, config) == 3
        assert list(file_slices(found, config, engine=None)) == [(), (), ()]  # type: ignore[arg-type]

    (tmp_path / "d.jsonl").write_text(text, "utf-8")
    found, _ = discover_inputs([str(tmp_path)])
    assert "jsonl" in found.formats
    assert slicing.most_tasks(found, config) > 4
    assert slicing.most_tasks(list(found), config) == slicing.most_tasks(found, config)
