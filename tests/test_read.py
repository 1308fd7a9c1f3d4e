"""Discovery of inputs and the record formats, on real text."""

from __future__ import annotations

import gc
import gzip
import json
import os
import tempfile
import tracemalloc
from pathlib import Path, PurePath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dedup.config import ScanConfig
from dedup.display import shown
from dedup.errors import InputPathError
from dedup.read import FoundFile, FoundFiles, discover_inputs, read_file
from dedup.spool import RowSpool


def _dump(tmp_path: Path, seed_simplified: str) -> Path:
    (tmp_path / "site-a" / "book").mkdir(parents=True)
    (tmp_path / "site-b").mkdir()
    (tmp_path / "site-a" / "book" / "ch1.txt").write_text(seed_simplified, "utf-8")
    (tmp_path / "site-b" / "ch1.txt").write_bytes(seed_simplified.encode("gb18030"))
    (tmp_path / "loose.txt").write_text(seed_simplified[:500], "utf-8")
    return tmp_path


def test_source_is_first_folder_under_the_scanned_folder(
    tmp_path: Path, seed_simplified: str
) -> None:
    root = _dump(tmp_path, seed_simplified)
    found, skipped = discover_inputs([str(root)])
    assert skipped == []
    sources = {Path(file.path).relative_to(root).as_posix(): file.source for file in found}
    assert sources == {
        "site-a/book/ch1.txt": "site-a",
        "site-b/ch1.txt": "site-b",
        "loose.txt": root.name,
    }


def test_order_of_paths_does_not_matter(tmp_path: Path, seed_simplified: str) -> None:
    root = _dump(tmp_path, seed_simplified)
    one = discover_inputs([str(root / "site-b"), str(root / "site-a")])
    two = discover_inputs([str(root / "site-a"), str(root / "site-b")])
    assert one == two
    assert [file.path for file in one[0]] == sorted(file.path for file in one[0])


def test_files_come_in_the_order_of_their_paths_whatever_the_names_and_paths_given(
    tmp_path: Path, seed_simplified: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each given path's files are walked in the order of their paths and merged: names that
    sort on either side of a folder's (``a.txt``, ``a/``, ``a0.txt``, ``a-b.txt``), paths
    given twice or inside each other (the first given path's name kept), and a link to a
    file beside it (read under the file's own name, the link listed), give the files
    sorted by path, each once."""
    root = tmp_path / "站"
    names = ["a.txt", "a/b.txt", "a/c/d.txt", "a0.txt", "a-b.txt", "A/z.txt", "第一章.txt",
             "第一章/第二节.txt", "b/a.txt", "b.txt", "a/c.txt", "a/c0/e.txt"]  # fmt: skip
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(seed_simplified[:300], "utf-8")
    (root / "a" / "link.txt").symlink_to(root / "b.txt")
    monkeypatch.chdir(tmp_path)
    given = ["站/a", "站", str(root / "b"), "站/a/c", "站/b.txt"]
    found, skipped = discover_inputs(given)
    paths = [file.path for file in found]
    # 站/b/a.txt is read under the absolute path given, the first of the two in order.
    expected = [f"站/{name}" for name in names if name != "b/a.txt"] + [f"{root}/b/a.txt"]
    assert paths == sorted(expected)
    assert [(entry.path, entry.reason) for entry in skipped] == [
        ("站/a/link.txt", "the same file as 站/b.txt, read under that name"),
        ("站/b/a.txt", f"the same file as {root}/b/a.txt, read under that name"),
    ]


# Names whose paths sort on either side of a folder's ("." and "-" before "/", "0" after), and
# a control character, which a path shows escaped ("\\x01", after "/").
_NAMES = st.text(st.sampled_from("aA-.0章\\\x01"), min_size=1, max_size=3).filter(
    lambda name: name.strip(".") != ""
)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(_NAMES, min_size=1, max_size=3),
                min_size=1, max_size=12))  # fmt: skip
def test_the_walk_of_any_tree_gives_its_files_in_the_order_of_their_paths(
    tree: list[list[str]],
) -> None:
    """The files of folders named anyhow come sorted by path, every file once: discovery
    merges the given paths' files trusting each walk's order."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for parts in tree:
            path = root.joinpath(*parts[:-1], f"{parts[-1]}.txt")
            if any(parent.is_file() for parent in path.parents) or path.is_dir():
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("第一回", "utf-8")
        found, _skipped = discover_inputs([folder])
        paths = [file.path for file in found]
        walked = [Path(at, name) for at, _folders, names in os.walk(folder) for name in names]
        assert paths == sorted(shown(str(path)) for path in walked)


def test_a_crawl_of_many_files_is_found_holding_a_few_bytes_a_file(
    tmp_path: Path, seed_simplified: str
) -> None:
    """Discovery holds no record of each file found until the last (a crawl of a page a file
    finds millions): the files are rows on disk as they come, with a hash each."""
    page = seed_simplified[:200].encode("utf-8")
    for book in range(40):
        folder = tmp_path / f"site-{book % 4}" / f"第{book:03}本书"
        folder.mkdir(parents=True)
        for chapter in range(100):
            (folder / f"第{chapter:03}章.txt").write_bytes(page)
    discover_inputs([str(tmp_path)])  # what it imports, once
    tracemalloc.start()
    try:
        found, skipped = discover_inputs([str(tmp_path)])
        _held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(found) == 4000 and skipped == []
    # The spools' blocks being filled (two of 64 KiB a table), one folder's listing.
    assert peak < 4 * RowSpool.block_bytes + 40 * len(found)


def test_found_files_are_held_as_columns_and_read_back_as_found(
    tmp_path: Path, seed_simplified: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _dump(tmp_path, seed_simplified)
    (root / "site-b" / "ch2.txt.gz").write_bytes(gzip.compress(seed_simplified.encode("utf-8")))
    # A name that is not UTF-8 is shown otherwise than the filesystem's name of it.
    odd = os.path.join(os.fsencode(root / "site-b"), b"\xff\xfe.txt")
    with open(odd, "wb") as file:
        file.write(seed_simplified.encode("utf-8"))
    monkeypatch.chdir(root)

    def objects() -> int:
        gc.collect()
        return sum(type(held) is FoundFile for held in gc.get_objects())

    before = objects()
    found, skipped = discover_inputs(["."])
    assert skipped == [] and isinstance(found, FoundFiles)
    assert objects() == before  # a file is made when asked for, and let go of
    by_name = {Path(file.fs_path).name: file for file in found}
    assert len(found) == 5
    assert sorted(by_name) == ["ch1.txt", "ch2.txt.gz", "loose.txt", "\udcff\udcfe.txt"]
    assert (by_name["ch2.txt.gz"].format, by_name["ch2.txt.gz"].compression) == ("txt", ".gz")
    assert (by_name["loose.txt"].format, by_name["loose.txt"].compression) == ("txt", None)
    assert by_name["loose.txt"].source == root.name
    weird = by_name["\udcff\udcfe.txt"]
    assert weird.fs_path != weird.path and os.path.exists(weird.fs_path)
    for file in found:
        status = os.stat(file.fs_path)
        assert file.stamp == (status.st_size, status.st_mtime_ns)

    # Made of FoundFile records again (a cleaned copy's entries have no stamp, and no path on
    # the filesystem), it is those records, as a tuple of them would be.
    records = [*found, FoundFile("copy/a.zip!b.txt", "copy", "txt", "", None)]
    table = FoundFiles(records)
    assert table == tuple(records) and list(records) == list(table) and table == FoundFiles(table)
    assert table[-1] == records[-1] and table[-1].stamp is None and table[-1].fs_path == ""
    assert table[1:3] == tuple(records[1:3]) and table[::-1] == tuple(reversed(records))
    assert table != FoundFiles(records[:-1])
    with pytest.raises(IndexError):
        table[len(records)]


def test_missing_path_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InputPathError, match="no-such-dump"):
        discover_inputs([str(tmp_path / "no-such-dump")])


def test_bad_entries_are_listed_with_reasons(tmp_path: Path, seed_simplified: str) -> None:
    root = _dump(tmp_path, seed_simplified)
    os.symlink(root / "gone.txt", root / "site-a" / "dangling.txt")
    (root / "site-a" / "cover.jpg").write_bytes(b"\xff\xd8\xff\xe0")
    found, skipped = discover_inputs([str(root)])
    reasons = {Path(entry.path).name: entry.reason for entry in skipped}
    assert "broken symbolic link" in reasons["dangling.txt"]
    assert "not a supported format" in reasons["cover.jpg"]
    assert len(found) == 3


def test_unreadable_and_binary_files_are_skipped_with_a_reason(
    tmp_path: Path, seed_simplified: str
) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "renamed.txt").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4)
    (tmp_path / "s" / "empty.txt").write_bytes(b"")
    found, _ = discover_inputs([str(tmp_path)])
    results = {Path(file.path).name: next(read_file(file, ScanConfig())) for file in found}
    assert results["renamed.txt"].skipped is not None
    assert "binary" in results["renamed.txt"].skipped.reason
    assert results["empty.txt"].skipped is not None
    assert "empty" in results["empty.txt"].skipped.reason


def test_jsonl_keeps_good_records_and_reports_bad_lines(
    tmp_path: Path, seed_traditional: str
) -> None:
    lines = [
        json.dumps({"title": "第一章", "content": seed_traditional}, ensure_ascii=False),
        '{"title": "第二章", "content": "未完',
        json.dumps({"title": "第三章", "body": seed_traditional[:800]}, ensure_ascii=False),
        json.dumps({"title": "第四章"}, ensure_ascii=False),
    ]
    path = tmp_path / "site" / "dump.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join(lines) + "\n", "utf-8")
    (file,), _ = discover_inputs([str(path)])
    (result,) = list(read_file(file, ScanConfig()))
    assert [document.record for document in result.documents] == [0, 2]
    assert result.documents[0].text == seed_traditional
    assert result.documents[0].title == "第一章"
    assert any(
        warning.startswith("record 1 (line 2): not valid JSON") for warning in result.warnings
    )
    assert any(
        warning.startswith("record 3 (line 4): no text field") for warning in result.warnings
    )


def test_json_array_and_custom_text_field(tmp_path: Path, seed_simplified: str) -> None:
    path = tmp_path / "dump.json"
    path.write_text(json.dumps([{"正文": seed_simplified}], ensure_ascii=False), "utf-8")
    (file,), _ = discover_inputs([str(path)])
    (result,) = list(read_file(file, ScanConfig(text_fields=("正文",))))
    assert result.skipped is None
    assert result.documents[0].text == seed_simplified


def test_broken_json_file_is_skipped_with_position(tmp_path: Path) -> None:
    path = tmp_path / "dump.json"
    path.write_text('[{"content": "话说天下大势', "utf-8")
    (file,), _ = discover_inputs([str(path)])
    (result,) = list(read_file(file, ScanConfig()))
    assert result.skipped is not None
    assert "not valid JSON" in result.skipped.reason
    assert "line 1" in result.skipped.reason


def test_symlink_loops_are_skipped(tmp_path: Path, seed_simplified: str) -> None:
    root = _dump(tmp_path, seed_simplified)
    os.symlink(root / "site-a" / "loop-b.txt", root / "site-a" / "loop-a.txt")
    os.symlink(root / "site-a" / "loop-a.txt", root / "site-a" / "loop-b.txt")
    found, skipped = discover_inputs([str(root)])
    reasons = {Path(entry.path).name: entry.reason for entry in skipped}
    assert "link loop" in reasons["loop-a.txt"] and "link loop" in reasons["loop-b.txt"]
    assert len(found) == 3


@given(st.text(st.sampled_from("a.b/章 \\x"), max_size=12))
def test_a_name_s_suffixes_are_as_pathlib_finds_them(name: str) -> None:
    """What format a file is, is read from its suffixes as pathlib finds them, for any name
    (or a URL's last part), with dots anywhere."""
    from dedup.read.discover import _suffixes

    assert _suffixes(name) == PurePath(name).suffixes
