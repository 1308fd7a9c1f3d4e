"""Hostile and damaged inputs: each costs only itself, is named with a reason, and never
crashes the scan or truncates the report."""

from __future__ import annotations

import gzip
import io
import json
import os
import pickle
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

import dedup
from dedup.cli import cli
from dedup.config import ScanConfig
from dedup.errors import InputPathError
from dedup.read import discover_inputs, read_file
from tests.reports import report_json, with_member_texts


def _read(path: Path, **options: object) -> list:  # type: ignore[type-arg]
    (found,), skipped = discover_inputs([str(path)])
    assert skipped == []
    return list(read_file(found, ScanConfig(**options)))  # type: ignore[arg-type]


def _site(tmp_path: Path, text: str, name: str = "site-a") -> Path:
    """A dump with one other site carrying ``text``, so that a scan has something to match."""
    (tmp_path / name).mkdir(parents=True, exist_ok=True)
    (tmp_path / name / "000.txt").write_text(text, "utf-8")
    return tmp_path


def test_lone_surrogates_in_json_fields_become_replacement_characters(
    tmp_path: Path, seed_simplified: str
) -> None:
    dump = _site(tmp_path / "dump", seed_simplified)
    (dump / "site-b").mkdir()
    record = {"title": "x\ud800", "source": "y\udfff", "text": seed_simplified[:1500] + "\udc00"}
    (dump / "site-b" / "dump.jsonl").write_text(json.dumps(record) + "\n", "utf-8")
    out = tmp_path / "out"
    every = ["--format", "html,csv,jsonl"]
    result = CliRunner().invoke(cli, ["scan", str(dump), "-o", str(out), "-q", "-j", "1", *every])
    assert result.exit_code == 0, result.output
    report = report_json(out)
    assert report["clusters"], "the record's text still matches the other site"
    (entry,) = [e for e in report["inputs"] if e["path"].endswith("dump.jsonl")]
    assert any("lone surrogates" in warning for warning in entry["warnings"])
    titles = {
        m["title"] for c in with_member_texts(report, out / "report.json") for m in c["members"]
    }
    assert "x\ufffd" in titles
    for name in ("clusters.csv", "clusters.jsonl", "index.html"):
        (out / name).read_text("utf-8")  # valid UTF-8 throughout


def test_file_and_folder_names_that_are_not_utf8_are_read_and_shown_escaped(
    tmp_path: Path, seed_simplified: str
) -> None:
    dump = tmp_path / "dump"
    folder = dump / os.fsdecode(b"site-\xff")
    folder.mkdir(parents=True)
    (folder / os.fsdecode(b"ch\xfe.txt")).write_text(seed_simplified, "utf-8")
    (folder / os.fsdecode(b"notes\xfe.md")).write_text("笔记", "utf-8")
    _site(dump, seed_simplified)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["scan", str(dump), "-o", str(out), "-q", "-j", "1"])
    assert result.exit_code == 0, result.output
    report = report_json(out)
    paths = {
        m["path"] for c in with_member_texts(report, out / "report.json") for m in c["members"]
    }
    assert f"{dump.as_posix()}/site-\\xff/ch\\xfe.txt" in paths
    assert {m["source"] for c in report["clusters"] for m in c["members"]} == {
        "site-a",
        "site-\\xff",
    }
    assert [s["path"].rsplit("/", 1)[1] for s in report["skipped"]] == ["notes\\xfe.md"]
    assert "notes\\xfe.md" in result.stderr


def test_paths_on_standard_input_need_not_be_utf8(tmp_path: Path, seed_simplified: str) -> None:
    name = tmp_path / os.fsdecode(b"ch\xff.txt")
    name.write_text(seed_simplified, "utf-8")
    (tmp_path / "ch2.txt").write_text(seed_simplified, "utf-8")
    listing = os.fsencode(str(name)) + b"\n" + os.fsencode(str(tmp_path / "ch2.txt")) + b"\n"
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["scan", "-", "-o", str(out), "-q", "-j", "1"], input=listing)
    assert result.exit_code == 0, result.output
    report = report_json(out)
    assert [e["path"].rsplit("/", 1)[1] for e in report["inputs"]] == ["ch2.txt", "ch\\xff.txt"]


def test_escape_sequences_in_names_never_reach_the_terminal(
    tmp_path: Path, seed_simplified: str
) -> None:
    (tmp_path / "evil\x1b]0;owned\x07.md").write_text("x", "utf-8")
    (tmp_path / "ch.txt").write_text(seed_simplified, "utf-8")
    result = CliRunner().invoke(cli, ["scan", str(tmp_path), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert "evil\\x1b]0;owned\\x07.md" in result.stderr


@pytest.fixture
def zstandard():  # type: ignore[no-untyped-def]
    return pytest.importorskip("zstandard")


def test_corrupt_zstd_is_skipped_with_a_reason(tmp_path: Path, zstandard) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "ch.txt.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"not zstd at all" * 50)
    (result,) = _read(tmp_path / "ch.txt.zst")
    assert result.skipped is not None and "damaged" in result.skipped.reason


def test_truncated_zstd_keeps_its_intact_lines_and_warns(
    tmp_path: Path,
    hongloumeng_simplified: str,
    zstandard,  # type: ignore[no-untyped-def]
) -> None:
    # Three frames, as parallel or streaming writers (pzstd, zstd --rsyncable) make them,
    # the file cut inside the third: the first two are intact.
    third = len(hongloumeng_simplified) // 3
    chapters = [
        hongloumeng_simplified[:third],
        hongloumeng_simplified[third : 2 * third],
        hongloumeng_simplified[2 * third :],
    ]
    frames = [zstandard.ZstdCompressor().compress(part.encode("utf-8")) for part in chapters]
    (tmp_path / "book.txt.zst").write_bytes(frames[0] + frames[1] + frames[2][:-100])
    (result,) = _read(tmp_path / "book.txt.zst")
    assert result.skipped is None
    (document,) = result.documents
    kept = chapters[0] + chapters[1]
    assert document.text == kept[: kept.rindex("\n") + 1]
    assert document.text.endswith("\n"), "cut at the last complete line"
    assert any("truncated" in warning for warning in result.warnings)


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
def test_trailing_garbage_after_compressed_data_keeps_the_content(
    tmp_path: Path, hongloumeng_simplified: str, suffix: str
) -> None:
    data = hongloumeng_simplified.encode("utf-8")
    if suffix == ".zst":
        packed = pytest.importorskip("zstandard").ZstdCompressor().compress(data)
    else:
        packed = gzip.compress(data)
    (tmp_path / f"book.txt{suffix}").write_bytes(packed + b"GARBAGE after the data\n" * 3)
    (result,) = _read(tmp_path / f"book.txt{suffix}")
    assert result.skipped is None
    assert result.documents[0].text == hongloumeng_simplified
    assert any("ignored" in warning for warning in result.warnings)


def test_truncated_zip_keeps_its_intact_entries(
    tmp_path: Path, seed_simplified: str, seed_with_ads: str, hongloumeng_simplified: str
) -> None:
    archive = tmp_path / "dump.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as out:
        out.writestr("site/a.txt", seed_simplified)
        out.writestr("site/b.txt", seed_with_ads)
        out.writestr("site/c.txt", hongloumeng_simplified)
    whole = archive.read_bytes()
    third_starts = whole.index(b"site/c.txt")
    archive.write_bytes(whole[: third_starts + 2000])
    results = {r.path.split("!/")[1]: r for r in _read(archive)}
    assert results["site/a.txt"].documents[0].text == seed_simplified
    assert results["site/b.txt"].documents[0].text == seed_with_ads
    assert "truncated" in results["site/c.txt"].skipped.reason
    assert any("index is missing" in w for w in results["site/a.txt"].warnings)


def test_two_zip_entries_with_one_name_are_not_mixed_up(
    tmp_path: Path, seed_simplified: str, seed_with_ads: str
) -> None:
    archive = tmp_path / "dump.zip"
    with zipfile.ZipFile(archive, "w") as out, pytest.warns(UserWarning, match="Duplicate"):
        out.writestr("site/x.txt", seed_simplified)
        out.writestr("site/x.txt", seed_with_ads)
    results = _read(archive)
    read = [r for r in results if r.skipped is None]
    skipped = [r for r in results if r.skipped is not None]
    assert [r.documents[0].text for r in read] == [seed_simplified]
    assert len(skipped) == 1 and "second entry with this name" in skipped[0].skipped.reason
    assert skipped[0].path != read[0].path


def test_a_null_text_field_gives_way_to_the_next_that_holds_a_string(
    tmp_path: Path, seed_simplified: str
) -> None:
    path = tmp_path / "dump.jsonl"
    path.write_text(json.dumps({"content": None, "text": seed_simplified}) + "\n", "utf-8")
    (result,) = _read(path)
    assert result.skipped is None
    assert result.documents[0].text == seed_simplified


def test_inputs_parsed_whole_have_a_cap_well_below_memory(
    tmp_path: Path, seed_simplified: str
) -> None:
    records = json.dumps([{"text": seed_simplified}] * 200)
    (tmp_path / "dump.json.gz").write_bytes(gzip.compress(records.encode()))
    (tmp_path / "page.html").write_text(f"<p>{seed_simplified}</p>" * 200, "utf-8")
    (tmp_path / "big.txt").write_text(seed_simplified * 200, "utf-8")
    report = dedup.scan(tmp_path, max_whole_file_mb=1, jobs=1)
    reasons = {entry.path.rsplit("/", 1)[1]: entry.reason for entry in report.skipped}
    assert set(reasons) == {"dump.json.gz", "page.html"}
    assert all("--max-whole-file-mb" in reason for reason in reasons.values())
    assert [entry.path.rsplit("/", 1)[1] for entry in report.inputs] == ["big.txt"]
    assert ScanConfig().max_whole_file_mb * 8 <= 4096, "a laptop has a few GB to spare"


def test_nul_bytes_are_named_as_such(tmp_path: Path, seed_simplified: str) -> None:
    text = seed_simplified.encode("utf-8")
    (tmp_path / "ch.txt").write_bytes(text[:900] + b"\x00\x00" + text[900:])
    (result,) = _read(tmp_path / "ch.txt")
    assert result.skipped is not None
    assert "NUL bytes (the first at byte offset 900)" in result.skipped.reason
    assert "offset -1" not in result.skipped.reason


def test_replaced_bytes_are_counted_in_a_warning(tmp_path: Path, seed_simplified: str) -> None:
    first, second, rest = (
        part.encode("utf-8")
        for part in (seed_simplified[:100], seed_simplified[100:200], seed_simplified[200:])
    )
    (tmp_path / "ch.txt").write_bytes(first + b"\xff" + second + b"\xfe\xfe" + rest)
    (result,) = _read(tmp_path / "ch.txt", errors="replace")
    assert result.skipped is None
    assert result.documents[0].text.count("\ufffd") == 3
    assert list(result.warnings) == [
        "3 invalid byte sequences replaced with U+FFFD (--errors replace), the first at byte "
        f"offset {len(first)}"
    ]


def _as_a_user(work: Callable[[], object]) -> object:
    """``work()``'s result (or the error it raised) as a user other than root would get it:
    run in a forked process that becomes ``nobody`` when this one is root, so the system
    itself refuses what a user may not do (root reaches into every folder)."""
    if os.geteuid() != 0:
        try:
            return work()
        except Exception as error:  # handed back as the child hands back its own
            return error
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(reading)
        try:
            os.setgid(65534)
            os.setuid(65534)
            try:
                result: object = work()
            except Exception as error:  # handed back to the parent
                result = error
            os.write(writing, pickle.dumps(result))
        finally:
            os._exit(0)
    os.close(writing)
    with os.fdopen(reading, "rb") as handed:
        data = handed.read()
    os.waitpid(child, 0)
    return pickle.loads(data)


def test_a_folder_without_search_permission_is_named_as_such(seed_simplified: str) -> None:
    """A folder that can be listed but not searched (chmod -x), as a user meets it: each of
    its files is skipped, saying to make the folder searchable; the files beside it are
    read; a file in it given by name says the same rather than 'no such file'."""
    work = Path(tempfile.mkdtemp(prefix="dedup-permissions-"))  # a user's folder, not root's
    try:
        work.chmod(0o755)
        site = work / "site"
        locked = site / "locked"
        locked.mkdir(parents=True)
        (locked / "ch.txt").write_text(seed_simplified, "utf-8")
        (site / "open.txt").write_text(seed_simplified, "utf-8")
        for folder in (site, locked):
            folder.chmod(0o755)
        (locked / "ch.txt").chmod(0o644)
        (site / "open.txt").chmod(0o644)
        locked.chmod(0o644)  # readable (listed), not searchable
        found = _as_a_user(lambda: discover_inputs([str(work)]))
        given = _as_a_user(lambda: discover_inputs([str(locked / "ch.txt")]))
        locked.chmod(0o755)
    finally:
        shutil.rmtree(work)
    assert isinstance(found, tuple), found
    files, skipped = found
    assert [Path(file.path).name for file in files] == ["open.txt"]
    assert [(Path(entry.path).name, "chmod +x" in entry.reason) for entry in skipped] == [
        ("ch.txt", True)
    ]
    assert isinstance(given, InputPathError) and "chmod +x" in str(given)


def test_links_out_of_the_scanned_folder_are_followed_only_when_asked(
    tmp_path: Path, seed_simplified: str
) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text(seed_simplified, "utf-8")
    dump = tmp_path / "dump" / "site"
    dump.mkdir(parents=True)
    (dump / "ch.txt").write_text(seed_simplified, "utf-8")
    (dump / "inside.txt").symlink_to(dump / "ch.txt")
    (dump / "passwd.txt").symlink_to(outside)
    found, skipped = discover_inputs([str(tmp_path / "dump")])
    assert [file.path.rsplit("/", 1)[1] for file in found] == ["ch.txt"]
    # A link to a file of the folder is that file: read once, and the other name is listed.
    assert [entry.path.rsplit("/", 1)[1] for entry in skipped] == ["inside.txt", "passwd.txt"]
    assert skipped[0].reason == f"the same file as {dump / 'ch.txt'}, read under that name"
    assert "--follow-links" in skipped[1].reason
    found, skipped = discover_inputs([str(tmp_path / "dump")], follow_links=True)
    assert sorted(file.path.rsplit("/", 1)[1] for file in found) == ["ch.txt", "passwd.txt"]
    assert [entry.path.rsplit("/", 1)[1] for entry in skipped] == ["inside.txt"]


def test_a_file_given_by_two_names_is_read_once_and_the_other_name_listed(
    tmp_path: Path, seed_simplified: str
) -> None:
    """Whatever order the names come in, the file's own name is read rather than a link's
    (the first in order comes after it), and the other is listed as skipped with the reason:
    nothing given is dropped without a word."""
    dump = tmp_path / "dump" / "site"
    dump.mkdir(parents=True)
    (dump / "b.txt").write_text(seed_simplified, "utf-8")
    (tmp_path / "a.txt").symlink_to(dump / "b.txt")
    names = [str(dump / "b.txt"), str(tmp_path / "a.txt"), str(tmp_path / "dump")]
    for given in (names, names[::-1]):
        found, skipped = discover_inputs(given)
        assert [file.path for file in found] == [str(dump / "b.txt")]
        assert [(entry.path, entry.reason) for entry in skipped] == [
            (str(tmp_path / "a.txt"), f"the same file as {dump / 'b.txt'}, read under that name")
        ]


def test_an_empty_folder_gives_a_warning_with_its_empty_report(tmp_path: Path) -> None:
    """An empty report alone does not say why it is empty."""
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(cli, ["scan", str(tmp_path / "empty"), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert f"dedup: warning: no files found under {tmp_path / 'empty'}" in result.stderr
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "x.txt").write_bytes(b"\0" * 100)
    result = CliRunner().invoke(cli, ["scan", str(junk), "-o", str(tmp_path / "out2"), "-q"])
    assert result.exit_code == 0, result.output
    assert "dedup: warning: none of the 1 inputs could be read" in result.stderr
    # The same from clean and from a query of an index, which lists what it skipped too.
    result = CliRunner().invoke(cli, ["clean", str(junk), "-o", str(tmp_path / "copy"), "-q"])
    assert result.exit_code == 0, result.output
    assert "dedup: warning: none of the 1 inputs could be read" in result.stderr
    index = str(tmp_path / "index.db")
    stored = _site(tmp_path / "stored", "天下大事，分久必合，合久必分。" * 40)
    assert CliRunner().invoke(cli, ["index", "add", index, str(stored), "-q"]).exit_code == 0
    result = CliRunner().invoke(
        cli, ["index", "query", index, str(junk), "-o", str(tmp_path / "q")]
    )
    assert result.exit_code == 0, result.output
    assert f"dedup: skipped {junk / 'x.txt'}: binary data" in result.stderr
    assert "dedup: warning: none of the 1 inputs could be read" in result.stderr
    read = _site(tmp_path / "read", "天下大事，分久必合，合久必分。" * 40)
    result = CliRunner().invoke(cli, ["scan", str(read), "-o", str(tmp_path / "out3"), "-q"])
    assert result.exit_code == 0 and "warning" not in result.stderr, result.output


def test_csv_cells_are_never_spreadsheet_formulas(tmp_path: Path, seed_simplified: str) -> None:
    dump = tmp_path / "dump"
    for site, record_id, title in (
        ("a", "@SUM(1+1)", '=HYPERLINK("http://x")'),
        ("-b", "+1", "-2"),
    ):
        (dump / site).mkdir(parents=True)
        record = {"id": record_id, "title": title, "text": seed_simplified}
        (dump / site / "d.jsonl").write_text(json.dumps(record) + "\n", "utf-8")
    out = tmp_path / "out"
    scan = ["scan", str(dump), "-o", str(out), "-q", "--format", "csv,pairs"]
    assert CliRunner().invoke(cli, scan).exit_code == 0
    import csv

    tables = {
        name: list(csv.DictReader((out / name).read_text("utf-8-sig").splitlines()))
        for name in ("clusters.csv", "matches.csv", "pairs.csv")
    }
    for name, rows in tables.items():
        assert rows, name
        for row in rows:
            for value in row.values():
                assert not value.startswith(("=", "+", "-", "@")), (name, value)
    rows = tables["clusters.csv"]
    assert {row["record_id"] for row in rows} == {"'@SUM(1+1)", "'+1"}
    assert {row["source"] for row in rows} == {"a", "'-b"}
    assert {row["title"] for row in rows} == {'\'=HYPERLINK("http://x")', "'-2"}
    (match,) = tables["matches.csv"]
    assert {match["a_title"], match["b_title"]} == {'\'=HYPERLINK("http://x")', "'-2"}
    report = report_json(out)
    members = [m for c in with_member_texts(report, out / "report.json") for m in c["members"]]
    assert {m["record_id"] for m in members} == {"@SUM(1+1)", "+1"}


def test_a_streamed_jsonl_says_how_many_warnings_it_did_not_list(
    tmp_path: Path, seed_simplified: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dedup.read import streams

    monkeypatch.setattr(streams, "STREAM_BYTES", 4096)  # read as a stream past 4 KB
    lines = [json.dumps({"text": seed_simplified})] + ['{"text": "broken'] * 25
    (tmp_path / "dump.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    (found,), _ = discover_inputs([str(tmp_path / "dump.jsonl")])
    results = read_file(found, ScanConfig())
    result = next(results)  # a stream is read while its file is open: before the next input
    assert not isinstance(result.documents, tuple), "read as a stream"
    assert len(list(result.documents)) == 1
    warnings = list(result.warnings)
    assert len(warnings) == 21
    assert (
        warnings[0]
        == "record 1 (line 2): not valid JSON (Unterminated string starting at), skipped"
    )
    assert warnings[-1] == "... and 5 more like these"


def test_a_report_folder_inside_a_scanned_folder_is_left_out_once(
    samples: Path, tmp_path: Path
) -> None:
    dump = tmp_path / "dump"
    shutil.copytree(samples, dump)
    first = CliRunner().invoke(cli, ["scan", str(dump), "-o", str(dump / "dedup-report"), "-q"])
    assert first.exit_code == 0
    again = CliRunner().invoke(cli, ["scan", str(dump), "-o", str(dump / "dedup-report"), "-q"])
    assert again.exit_code == 0
    report = report_json(dump / "dedup-report")
    skipped = {s["path"]: s["reason"] for s in report["skipped"]}
    assert sorted(skipped) == [f"{dump.as_posix()}/README.md", f"{dump.as_posix()}/dedup-report"]
    assert skipped[f"{dump.as_posix()}/dedup-report"].startswith("a report dedup wrote")
    assert not any("dedup-report" in entry["path"] for entry in report["inputs"])
    assert again.stderr.count("dedup-report") == 1


def test_escape_sequences_in_titles_and_texts_never_reach_the_terminal(
    tmp_path: Path, seed_simplified: str
) -> None:
    hostile = "\x1b]0;owned\x07\x1b[2J"
    for site in ("a", "b"):
        (tmp_path / site).mkdir()
        record = {"title": f"第一章{hostile}", "text": hostile + seed_simplified}
        (tmp_path / site / "d.jsonl").write_text(json.dumps(record) + "\n", "utf-8")
    scanned = CliRunner().invoke(cli, ["scan", str(tmp_path), "-o", str(tmp_path.parent / "o")])
    assert scanned.exit_code == 0 and "第一章" in scanned.stdout
    member = f"{tmp_path}/a/d.jsonl#0"
    explained = CliRunner().invoke(cli, ["explain", member, f"{tmp_path}/b/d.jsonl#0"])
    assert explained.exit_code == 0
    normalized = CliRunner().invoke(cli, ["normalize", f"{tmp_path}/a/d.jsonl"])
    for result in (scanned, explained, normalized):
        assert "\x1b" not in result.output and "\x07" not in result.output
    assert "\\x1b" in scanned.stdout and "\\x1b" in explained.stdout


class _Unseekable(io.RawIOBase):
    """A stream zipfile cannot seek back in: it writes each entry's sizes after its data."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, chunk: bytes) -> int:  # type: ignore[override]
        self.data += chunk
        return len(chunk)


def test_a_truncated_zip_written_as_a_stream_keeps_its_intact_entries(
    tmp_path: Path, seed_simplified: str, seed_with_ads: str, hongloumeng_simplified: str
) -> None:
    stream = _Unseekable()
    with zipfile.ZipFile(stream, "w", compression=zipfile.ZIP_DEFLATED) as out:
        out.writestr("site/a.txt", seed_simplified)
        out.writestr("site/b.txt", seed_with_ads)
        out.writestr("site/c.txt", hongloumeng_simplified)
    whole = bytes(stream.data)
    assert whole[6] & 0x08, "sizes after the data"
    archive = tmp_path / "dump.zip"
    archive.write_bytes(whole[: whole.index(b"site/c.txt") + 2000])
    results = {r.path.split("!/")[1]: r for r in _read(archive)}
    assert results["site/a.txt"].documents[0].text == seed_simplified
    assert results["site/b.txt"].documents[0].text == seed_with_ads
    assert results["site/c.txt"].skipped is not None


def test_a_file_deleted_after_it_was_found_is_skipped_as_gone(
    tmp_path: Path, seed_simplified: str
) -> None:
    """Found, then deleted or moved before it is read (a dump still being written): listed
    as gone, with what to do, not as a damaged file; the rest are read."""
    from dedup.read.containers import FILE_GONE

    (tmp_path / "kept.txt").write_text(seed_simplified, encoding="utf-8")
    (tmp_path / "gone.txt").write_text(seed_simplified, encoding="utf-8")
    files, _skipped = discover_inputs([str(tmp_path)])
    (tmp_path / "gone.txt").unlink()
    config = ScanConfig()
    ((gone,), (kept,)) = [list(read_file(file, config)) for file in files]
    assert gone.skipped is not None and gone.skipped.reason == FILE_GONE
    assert not gone.documents and kept.skipped is None and kept.documents


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_page_too_short_for_a_passage_is_listed_and_counted(
    tmp_path: Path, seed_simplified: str, jobs: int
) -> None:
    """A site that pages its chapters leaves last pages of a line (「本章完」) or a bracket: a
    UTF-8 file whose one document holds no passage. It is listed with none and counted as
    too short, and the scan goes on (it stopped the scan with an IndexError, placing the
    bytes of its passages' runs: there are none)."""
    dump = _site(tmp_path, seed_simplified)
    (tmp_path / "site-b").mkdir()
    (tmp_path / "site-b" / "000.txt").write_text(seed_simplified, "utf-8")
    (tmp_path / "site-b" / "001.txt").write_text("本章完\n", "utf-8")
    (tmp_path / "site-b" / "002.txt").write_text("    ]\n  }\n]", "utf-8")
    report = dedup.scan([dump], jobs=jobs)
    passages = {Path(i.path).relative_to(tmp_path).as_posix(): i.passages for i in report.inputs}
    assert passages["site-b/001.txt"] == passages["site-b/002.txt"] == 0
    assert passages["site-a/000.txt"] == passages["site-b/000.txt"] > 0
    assert report.summary.passages_too_short == 1  # the brackets hold no story character
    assert report.skipped == ()
    assert [(m.a.path, m.b.path) for m in report.matches] == [
        (str(tmp_path / "site-a/000.txt"), str(tmp_path / "site-b/000.txt"))
    ]


def test_a_linked_folder_inside_the_scanned_one_is_listed_not_read_twice(
    tmp_path: Path, seed_simplified: str
) -> None:
    """With --follow-links, a link to a folder of the dump itself is left out (its files are
    read under their own names, whichever name comes first in order) and said so."""
    dump = tmp_path / "dump"
    (dump / "site").mkdir(parents=True)
    (dump / "site" / "ch.txt").write_text(seed_simplified, "utf-8")
    (dump / "alias").symlink_to(dump / "site")
    found, skipped = discover_inputs([str(dump)], follow_links=True)
    assert [file.path for file in found] == [str(dump / "site" / "ch.txt")]
    assert [(entry.path, "inside the scanned folder" in entry.reason) for entry in skipped] == [
        (str(dump / "alias"), True)
    ]
