"""dedup clean on real text: what it removes has a kept partner in the copy, the copy keeps
formats and encodings, a second clean removes nothing, the copy is the same whatever the
jobs or path order, and an interrupted clean never leaves a copy that looks complete."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import dedup
from dedup.clean import clean
from dedup.cli import cli
from dedup.errors import ConfigError, ReportFolderError
from dedup.read.decode import decode_bytes
from tests.reports import folder_files


@pytest.fixture
def collection(samples: Path, tmp_path: Path) -> Path:
    """The sample sites (三国演义 apart), and a site that mixes a copy of 红楼梦's first two
    chapters with a chapter of 三国演义 (found nowhere else) in one GB18030 file (CRLF, as the
    original), a JSON Lines file whose records carry other fields, and a gzipped copy of a
    seed chapter."""
    folder = tmp_path / "dump"
    for site in ("site-classic", "site-qidian", "site-tw", "site-gbk", "site-mirror"):
        shutil.copytree(samples / site, folder / site)
    (folder / "site-classic/sanguo.txt").unlink()
    (folder / "README.md").write_text("not a novel\n", "utf-8")
    book = (samples / "site-qidian/hongloumeng.txt").read_bytes().decode("utf-8")
    third = book.index("第三回")
    journey = (samples / "site-classic/sanguo.txt").read_text("utf-8")
    own = "第九回 除暴兇呂布助司徒\r\n" + journey[200:2600].replace("\n", "\r\n")
    mixed = folder / "site-mixed"
    mixed.mkdir()
    (mixed / "book.txt").write_bytes((book[:third] + own).encode("gb18030"))
    seed = (samples / "site-qidian/000.txt").read_text("utf-8")
    records = [
        {"id": "r1", "url": "https://example.com/1", "title": "第一章", "content": seed},
        {
            "id": "r2",
            "url": "https://example.com/2",
            "title": "第二章",
            "content": journey[2800:3900],
        },
    ]
    (mixed / "feed.jsonl").write_text(
        "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records), "utf-8"
    )
    (mixed / "seed.txt.gz").write_bytes(gzip.compress(seed.encode("utf-8"), mtime=0))
    return folder


def _text(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return decode_bytes(data).text


def test_every_removed_document_has_its_kept_copy_in_the_output(
    collection: Path, tmp_path: Path
) -> None:
    out = tmp_path / "clean"
    result = clean([collection], out, keep="source:site-qidian,site-classic")
    assert len(result.removed) >= 7
    listed = [json.loads(line) for line in (out / "removed.jsonl").read_text("utf-8").splitlines()]
    assert len(listed) == len(result.removed)
    originals = {d.id: d for d in result.report.documents}
    for entry in listed:
        removed, kept = entry["removed"], entry["kept"]
        assert entry["coverage"] >= 0.8
        kept_file = out / Path(kept["path"]).relative_to(collection)
        assert originals[kept["id"]].text in _text(kept_file)  # the kept copy is in the copy
        removed_file = out / Path(removed["path"]).relative_to(collection)
        if removed_file.exists():
            assert originals[removed["id"]].text not in _text(removed_file)
    # the mixed file lost the copied chapters and kept its own, in GB18030 with its CRLF
    book = (out / "site-mixed/book.txt").read_bytes()
    with pytest.raises(UnicodeDecodeError):
        book.decode("utf-8")
    text = book.decode("gb18030")
    assert text.startswith("第九回 除暴兇呂布助司徒\r\n") and "\r\n" in text[30:]
    assert "甄士隐" not in text and "甄士隱" not in text
    # the copied record is gone; the other keeps every field, byte for byte
    feed = (out / "site-mixed/feed.jsonl").read_text("utf-8").splitlines()
    assert feed == [(collection / "site-mixed/feed.jsonl").read_text("utf-8").splitlines()[1]]
    # the gzipped seed copy is gone whole; unchanged files are copied byte for byte
    assert not (out / "site-mixed/seed.txt.gz").exists()
    for name in ("site-classic/xiyouji.txt", "README.md"):
        assert (out / name).read_bytes() == (collection / name).read_bytes()
    tally = {t.source: t for t in result.sources}
    assert tally["site-qidian"].documents_removed == 0
    assert tally["site-tw"].bytes_out < tally["site-tw"].bytes_in


def test_a_second_clean_removes_nothing(collection: Path, tmp_path: Path) -> None:
    once = tmp_path / "once"
    clean([collection], once)
    twice = clean([once], tmp_path / "twice")
    assert twice.removed == ()
    again = dedup.scan([once])
    assert not any(min(m.coverage_a, m.coverage_b) >= 0.8 for m in again.matches)
    # no passage cluster joins two documents of the copy (here every copy was a whole one)
    assert not [
        c for c in again.clusters if len({(m.path, m.record, m.chapter) for m in c.members}) > 1
    ]
    assert all(".dedup-clean" not in e.path and "removed." not in e.path for e in again.skipped)


def test_the_copy_is_the_same_whatever_the_jobs_and_the_path_order(
    collection: Path, tmp_path: Path
) -> None:
    sites = sorted(path for path in collection.iterdir() if path.is_dir())
    one = tmp_path / "one"
    clean(sites, one, dedup.ScanConfig(jobs=1))
    two = tmp_path / "two"
    clean(list(reversed(sites)), two, dedup.ScanConfig(jobs=2))
    assert folder_files(one) == folder_files(two)
    assert sorted(p.name for p in one.iterdir() if p.is_dir()) == [s.name for s in sites]


def test_dry_run_writes_only_the_lists(collection: Path, tmp_path: Path) -> None:
    out = tmp_path / "lists"
    result = CliRunner().invoke(cli, ["clean", str(collection), "-o", str(out), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "would leave out" in result.output and "site-tw" in result.output
    assert sorted(p.name for p in out.iterdir()) == [".dedup-clean", "removed.csv", "removed.jsonl"]
    assert len((out / "removed.csv").read_text("utf-8-sig").splitlines()) > 7


def test_it_never_writes_into_its_input_nor_over_other_files(
    collection: Path, tmp_path: Path
) -> None:
    with pytest.raises(ReportFolderError, match="inside"):
        clean([collection], collection / "clean")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine", "utf-8")
    with pytest.raises(ReportFolderError, match="not empty"):
        clean([collection], busy)
    assert (busy / "notes.txt").read_text("utf-8") == "mine"
    clean([collection], busy, force=True)
    assert not (busy / "notes.txt").exists() and (busy / "removed.jsonl").exists()
    other = tmp_path / "elsewhere" / collection.name
    shutil.copytree(collection / "site-tw", other / "site-tw")
    with pytest.raises(ConfigError, match="named"):  # both would go to one place in the copy
        clean([collection, other], tmp_path / "both")


def test_unreadable_inputs_are_copied_with_a_warning_or_left_out(
    collection: Path, tmp_path: Path
) -> None:
    (collection / "site-mixed" / "junk.txt").write_bytes(bytes(range(256)) * 40)
    runner = CliRunner()
    kept = runner.invoke(cli, ["clean", str(collection), "-o", str(tmp_path / "a"), "-q"])
    assert kept.exit_code == 0 and "junk.txt" in kept.stderr
    assert (tmp_path / "a/site-mixed/junk.txt").read_bytes() == bytes(range(256)) * 40
    left = runner.invoke(
        cli, ["clean", str(collection), "-o", str(tmp_path / "b"), "-q", "--skip-bad"]
    )
    assert left.exit_code == 0 and not (tmp_path / "b/site-mixed/junk.txt").exists()


def test_links_are_said_not_copied_and_what_they_name_is_in_the_copy(
    collection: Path, tmp_path: Path
) -> None:
    """A link to a file of the collection is that file, read and copied once; the link and a
    broken one are said to be left out of the copy, not said to be copied (as they were)."""
    site = collection / "site-mixed"
    (site / "again.txt").symlink_to(site / "book.txt")
    (site / "gone.txt").symlink_to(site / "nothing.txt")
    done = CliRunner().invoke(cli, ["clean", str(collection), "-o", str(tmp_path / "a"), "-q"])
    assert done.exit_code == 0, done.output
    said = {line.split(": ")[1]: line for line in done.stderr.splitlines()}
    for name in ("again.txt", "gone.txt"):
        assert said[str(site / name)].endswith("; not copied")
        assert not os.path.lexists(tmp_path / "a/site-mixed" / name)
    assert (tmp_path / "a/site-mixed/book.txt").is_file()


def test_tables_lose_their_copied_rows_and_keep_the_others_byte_for_byte(
    collection: Path, tmp_path: Path, samples: Path
) -> None:
    seed = (samples / "site-qidian/000.txt").read_text("utf-8")
    own = (samples / "site-classic/sanguo.txt").read_text("utf-8")[4000:4952]  # nowhere else
    assert len(own) > 900
    table = collection / "site-mixed" / "table.csv"
    quoted = [text.replace('"', '""') for text in (seed, own)]
    rows = [f'a1,第一章,"{quoted[0]}"\r\n', f'a2,第二章,"{quoted[1]}"\r\n']
    table.write_text("id,title,content\r\n" + "".join(rows), "utf-8")
    result = clean([collection], tmp_path / "out", keep="source:site-qidian")
    assert any(r.removed.path == str(table) for r in result.removed)
    written = (tmp_path / "out/site-mixed/table.csv").read_bytes().decode("utf-8")
    assert written == "id,title,content\r\n" + rows[1]
    # a JSON array loses the copied record, the other keeps all its fields
    listing = collection / "site-mixed" / "list.json"
    records = [{"title": "第一章", "content": seed}, {"title": "第二章", "content": own, "n": 2}]
    listing.write_text(json.dumps(records, ensure_ascii=False, indent=2) + "\n", "utf-8")
    again = clean([collection], tmp_path / "again", keep="source:site-qidian")
    assert not again.not_rewritten
    written = (tmp_path / "again/site-mixed/list.json").read_text("utf-8")
    assert json.loads(written) == records[1:] and written.endswith("}\n]\n")
    # a format it does not rewrite is copied unchanged, and said so
    page = collection / "site-mixed" / "page.html"
    page.write_text(f"<html><body><p>{seed}</p></body></html>", "utf-8")
    third = clean([collection], tmp_path / "third", keep="source:site-qidian")
    assert any(e.path == str(page) and "html" in e.reason for e in third.not_rewritten)
    assert (tmp_path / "third/site-mixed/page.html").read_bytes() == page.read_bytes()
    assert all(r.removed.path != str(page) for r in third.removed)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL])
def test_an_interrupted_clean_leaves_no_copy_that_looks_complete(
    collection: Path, tmp_path: Path, how: signal.Signals
) -> None:
    out = tmp_path / "clean"
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    command = [sys.executable, "-m", "dedup", "clean", str(collection), "-o", str(out), "-q"]
    started = time.perf_counter()
    subprocess.run(command, env=environment, check=True)
    whole = time.perf_counter() - started
    shutil.rmtree(out)
    process = subprocess.Popen(command, env=environment)
    time.sleep(whole * 0.6)
    process.send_signal(how)
    process.wait()
    if out.exists():  # it had finished: then it is whole
        assert (out / "removed.jsonl").exists() and not (out / ".dedup-writing").exists()
    else:
        partial = list(tmp_path.glob("clean.partial-*"))
        assert how == signal.SIGKILL or not partial  # Ctrl-C cleans up after itself
        assert all((p / ".dedup-writing").exists() for p in partial)


def test_a_full_disk_names_the_file_says_what_to_do_and_leaves_no_copy(
    collection: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills while the copy is written (ENOSPC raised by the second file's copy, as
    a tmpfs of 20 MB did when tried by hand): the error names the file and says to free space
    or choose another --out; no copy, and no partial one, is left."""
    import errno

    import dedup.clean

    copied = 0
    real = shutil.copyfileobj

    def filling(reading: object, writing: object, length: int = 0) -> None:
        nonlocal copied
        copied += 1
        if copied == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(reading, writing, length)  # type: ignore[arg-type]

    monkeypatch.setattr(dedup.clean.shutil, "copyfileobj", filling)
    out = tmp_path / "clean"
    result = CliRunner().invoke(cli, ["clean", str(collection), "-o", str(out), "-q"])
    assert result.exit_code == 1
    written = result.stderr.split("cannot write ", 1)[1].split(" (", 1)[0]
    assert Path(written).parent.name.startswith("site-") and Path(written).suffix
    assert "No space left on device); free some space, or choose another --out" in (result.stderr)
    assert f"Nothing was written to {out}" in result.stderr
    assert copied == 2 and not out.exists() and not list(tmp_path.glob("clean.partial-*"))


def test_from_a_reviewed_report_it_writes_the_same_copy(collection: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    report = tmp_path / "report"
    command = ["scan", str(collection), "-o", str(report), "-q", "--every-pair"]
    scanned = runner.invoke(cli, command)
    assert scanned.exit_code == 0, scanned.output
    reviewed = runner.invoke(cli, ["report", str(report), "--threshold", "0.9", "-q"])
    assert reviewed.exit_code == 0, reviewed.output
    direct = tmp_path / "direct"
    clean([collection], direct)
    acted = runner.invoke(cli, ["clean", "--from-report", str(report), "-o", str(tmp_path / "r")])
    assert acted.exit_code == 0, acted.output
    assert folder_files(tmp_path / "r") == folder_files(direct)
    # a file changed since the report is copied as it is now, not cut where it used to be
    changed = collection / "site-tw" / "000.txt"
    changed.write_bytes(b"\n" * 5 + changed.read_bytes())
    again = runner.invoke(cli, ["clean", "--from-report", str(report), "-o", str(tmp_path / "c")])
    assert again.exit_code == 0 and "changed since" in again.stderr
    assert (tmp_path / "c/site-tw/000.txt").read_bytes() == changed.read_bytes()
    both = runner.invoke(cli, ["clean", str(collection), "--from-report", str(report), "-o", "x"])
    assert both.exit_code == 2 and "not both" in both.stderr


def test_by_passage_strikes_a_copied_scene_and_keeps_the_prose_around_it(
    samples: Path, tmp_path: Path
) -> None:
    novel = (samples / "site-qidian/001.txt").read_text("utf-8")
    host = (samples / "site-classic/sanguo.txt").read_text("utf-8")[200:3200]
    start = novel.index("。", 600) + 1
    scene = novel[start : novel.index("。", start + 450) + 1]  # whole sentences, ~450 characters
    dump = tmp_path / "dump"
    (dump / "site-a").mkdir(parents=True)
    (dump / "site-b").mkdir()
    (dump / "site-a/novel.txt").write_text(novel, "utf-8")
    middle = host.index("。", 1400) + 1
    (dump / "site-b/host.txt").write_text(host[:middle] + scene + host[middle:], "utf-8")
    out = tmp_path / "clean"
    result = clean([dump], out, keep="source:site-a", by="passage")
    assert len(result.removed) == 1
    (struck,) = result.removed
    assert struck.removed.path.endswith("host.txt") and struck.span is not None
    assert (out / "site-a/novel.txt").read_bytes() == (dump / "site-a/novel.txt").read_bytes()
    left = (out / "site-b/host.txt").read_text("utf-8")
    assert left == host  # the scene gone to the character, the prose on both sides kept
    listed = json.loads((out / "removed.jsonl").read_text("utf-8"))
    kept_start, kept_end = listed["kept_span"]
    assert novel[kept_start:kept_end] in scene or scene in novel[kept_start - 5 : kept_end + 5]


def test_a_zip_is_written_back_as_a_zip_without_its_copied_entries(
    samples: Path, tmp_path: Path
) -> None:
    import zipfile

    dump = tmp_path / "dump"
    shutil.copytree(samples / "site-qidian", dump / "site-qidian")
    archive = dump / "mirrors.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        for site in ("site-tw", "site-classic"):
            for file in sorted((samples / site).iterdir()):
                out.write(file, f"{site}/{file.name}")
    result = clean([dump], tmp_path / "out", keep="source:site-qidian")
    assert {r.removed.path.split("!/")[1] for r in result.removed} >= {"site-tw/000.txt"}
    with zipfile.ZipFile(tmp_path / "out/mirrors.zip") as copy:
        names = copy.namelist()
        assert "site-tw/000.txt" not in names  # its one document was a copy
        assert (
            copy.read("site-classic/sanguo.txt")
            == (samples / "site-classic/sanguo.txt").read_bytes()
        )
        assert all(info.compress_type == zipfile.ZIP_DEFLATED for info in copy.infolist())
    clean([dump], tmp_path / "again", keep="source:site-qidian")  # the same bytes again
    assert (tmp_path / "again/mirrors.zip").read_bytes() == (
        tmp_path / "out/mirrors.zip"
    ).read_bytes()


def test_parquet_and_zstd_files_are_written_back_in_their_formats(
    samples: Path, tmp_path: Path
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    seed = (samples / "site-qidian/000.txt").read_text("utf-8")
    journey = (samples / "site-classic/xiyouji.txt").read_text("utf-8")  # not in this dump
    own, other = journey[500:2500], journey[3000:5000]
    assert len(own) == len(other) == 2000
    dump = tmp_path / "dump"
    shutil.copytree(samples / "site-qidian", dump / "site-qidian")
    (dump / "site-b").mkdir()
    table = pa.table({"id": [1, 2], "content": [seed, own], "url": ["u1", "u2"]})
    pq.write_table(table, dump / "site-b/rows.parquet", compression="zstd")
    book = "第一章 渡江\n" + seed + "\n第二章 别处\n" + other
    packed = zstandard.ZstdCompressor().compress(book.encode("gb18030"))
    (dump / "site-b/seed.txt.zst").write_bytes(packed)
    result = clean([dump], tmp_path / "out", keep="source:site-qidian")
    assert not result.not_rewritten
    rows = pq.read_table(tmp_path / "out/site-b/rows.parquet")
    assert rows.to_pylist() == [{"id": 2, "content": own, "url": "u2"}]
    written = pq.ParquetFile(tmp_path / "out/site-b/rows.parquet")
    assert written.metadata.row_group(0).column(0).compression == "ZSTD"
    left = (tmp_path / "out/site-b/seed.txt.zst").read_bytes()
    with zstandard.ZstdDecompressor().stream_reader(left) as reader:
        text = reader.read().decode("gb18030")
    assert text == "第二章 别处\n" + other  # the copied chapter gone, heading and all


def test_a_report_of_copies_matched_with_their_kept_one_is_refused_saying_what_serves(
    mirror_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    for name, extra in (("report", []), ("every", ["--every-pair"])):
        command = ["scan", str(mirror_dump), "-o", str(tmp_path / name), "-q", *extra]
        scanned = runner.invoke(cli, command)
        assert scanned.exit_code == 0, scanned.output
    # the scan's own report aligns two groups of copies once: it cannot serve a clean
    command = ["clean", "--from-report", str(tmp_path / "report"), "-o", str(tmp_path / "f")]
    with monkeypatch.context() as patched:  # refused before the report is read
        patched.setattr("dedup.report.record.load_report", lambda *_a, **_k: pytest.fail())
        refused = runner.invoke(cli, command)
    assert refused.exit_code == 2 and not (tmp_path / "f").exists()
    assert "--every-pair" in refused.stderr and "dedup clean DUMP" in refused.stderr
    for by, keep in (("document", "longest"), ("passage", "longest"), ("document", "first")):
        direct = tmp_path / f"direct-{by}-{keep}"
        clean([mirror_dump], direct, by=by, keep=keep)  # aligns every pair
        out = tmp_path / f"{by}-{keep}"
        command = ["clean", "--from-report", str(tmp_path / "every"), "-o", str(out)]
        acted = runner.invoke(cli, [*command, "--by", by, "--keep", keep])
        assert acted.exit_code == 0, acted.output
        assert folder_files(out) == folder_files(direct)
        assert len(folder_files(direct)) < sum(1 for path in mirror_dump.rglob("*.txt"))


def test_a_stretch_is_cut_back_to_the_sentences_that_start_and_end_in_it(
    hongloumeng_simplified: str, seed_traditional: str
) -> None:
    """whole_sentences takes the first sentence start from the stretch's start and the first
    sentence end from its end; against every boundary of the stretch listed (as it was first
    written), on stretches of real text in both scripts at every offset of a stride."""
    from dedup.clean.choose import _SNAP_CHARS, _no_story, _sentence_boundary, whole_sentences
    from dedup.models import MatchedDocument

    def listed(text: str, base: int, start: int, end: int) -> tuple[int, int]:
        low, high = start - base, end - base
        starts = [
            p
            for p in range(max(0, low - _SNAP_CHARS), high + 1)
            if _sentence_boundary(text, p) and (p >= low or _no_story(text[p:low]))
        ]
        ends = [
            p
            for p in range(min(len(text), high + _SNAP_CHARS), low - 1, -1)
            if _sentence_boundary(text, p) and (p <= high or _no_story(text[high:p]))
        ]
        first = starts[0] if starts else high
        last = ends[0] if ends else first
        return (start, start) if last <= first else (base + first, base + last)

    cut = 0
    for text in (hongloumeng_simplified[:6000], seed_traditional[:6000]):
        base = 100
        document = MatchedDocument(
            "d", "s", "p", None, None, 0, None, base, base + len(text), 0, text
        )
        for start in range(base, base + len(text), 37):
            for length in (0, 5, 40, 333, 2000):
                end = min(start + length, base + len(text))
                expected = listed(text, base, start, end)
                assert whole_sentences(document, start, end) == expected
                cut += expected[0] != expected[1]
    assert cut > 500  # most of them hold a whole sentence


def test_file_names_that_are_not_utf8_keep_their_bytes_in_the_copy(
    seed_simplified: str, tmp_path: Path
) -> None:
    """Names written in GBK (as a Chinese Windows zip tool leaves them): the copy's files
    are named with the same bytes, cleaning the dump or a report of it, whether the file is
    rewritten, copied, or not a format dedup reads; the report shows them escaped (\\xb5)."""
    site = os.fsencode(tmp_path / "dump" / "site")
    os.makedirs(site)
    chapter = "第一章".encode("gbk") + b".txt"
    for name in (chapter, b"copy-" + chapter):
        with open(os.path.join(site, name), "wb") as handle:
            handle.write(seed_simplified.encode("utf-8"))
    notes = "说明".encode("gbk") + b".md"
    with open(os.path.join(site, notes), "wb") as handle:
        handle.write(b"scraped with a GBK tool\n")
    report = tmp_path / "report"
    scanned = CliRunner().invoke(
        cli, ["scan", str(tmp_path / "dump"), "-o", str(report), "--every-pair", "-q"]
    )
    assert scanned.exit_code == 0, scanned.output
    inputs = json.loads((report / "report.json").read_text("utf-8"))["inputs"]
    assert any("\\xb5\\xda" in entry["path"] for entry in inputs)
    from_dump = tmp_path / "clean"
    from_report = tmp_path / "clean-from-report"
    for arguments in (
        [str(tmp_path / "dump"), "-o", str(from_dump)],
        ["--from-report", str(report), "-o", str(from_report)],
    ):
        result = CliRunner().invoke(cli, ["clean", *arguments, "-q"])
        assert result.exit_code == 0, result.output
    for copy in (os.fsencode(from_dump / "site"), os.fsencode(from_report)):
        names = sorted(name for name in os.listdir(copy) if not name.startswith((b".", b"removed")))
        assert names == sorted([chapter, notes])  # the copy of the chapter left out
        for name in names:
            with (
                open(os.path.join(copy, name), "rb") as kept,
                open(os.path.join(site, name), "rb") as original,
            ):
                assert kept.read() == original.read()
