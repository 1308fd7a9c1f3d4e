"""The persistent index, on a real SQLite file: add, query, report, info, remove; changed and
unchanged files; options that differ; foreign files; and kill -9 in the middle of an add."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import dedup
from dedup import index
from dedup.cli import cli
from dedup.errors import IndexFileError
from dedup.index import store as index_store

STORED = ["site-classic", "site-qidian", "site-mirror"]
QUERIED = "site-tw"


@pytest.fixture
def sites(samples: Path, tmp_path: Path) -> Path:
    """A copy of the sample sites, which the tests may change."""
    folder = tmp_path / "sites"
    for site in [*STORED, QUERIED, "site-gbk"]:
        shutil.copytree(samples / site, folder / site)
    return folder


def _pairs_with(report: dedup.Report, source: str) -> set[tuple[str, str, float, float, int]]:
    """Every verified pair with exactly one side in ``source``."""
    found = set()
    for cluster in report.clusters:
        where = {member.id: member.source for member in cluster.members}
        for pair in cluster.pairs:
            if (where[pair.a] == source) != (where[pair.b] == source):
                found.add((pair.a, pair.b, pair.jaccard, pair.containment, pair.identical_chars))
    return found


def _matches_with(report: dedup.Report, source: str) -> list[dict[str, object]]:
    return [
        match.to_dict()
        for match in report.matches
        if (match.a.source == source) != (match.b.source == source)
    ]


def test_a_query_finds_what_a_scan_of_everything_finds_with_it(sites: Path, tmp_path: Path) -> None:
    store = tmp_path / "collection.dedup"
    added = index.add(store, [sites / STORED[0], sites / STORED[1]])
    assert len(added.added) == 5 and not added.unchanged
    index.add(store, [sites / STORED[2]])  # a second site, added later
    found = index.query(store, [sites / QUERIED])
    everything = dedup.scan([sites / name for name in [*STORED, QUERIED]])
    expected = _pairs_with(everything, QUERIED)
    assert len(expected) > 30
    assert _pairs_with(found, QUERIED) == expected
    # every pair is between the query and a stored file: none within the stored ones
    assert all(
        len({member.source == QUERIED for member in cluster.members}) == 2
        for cluster in found.clusters
    )
    assert _matches_with(found, QUERIED) == _matches_with(everything, QUERIED)
    # each match names the stored document, with its text, from the index
    stored = [d for m in found.matches for d in (m.a, m.b) if d.source != QUERIED]
    assert len(stored) > 3
    for document in (d for d in stored if d.path.endswith(".txt")):
        original = Path(document.path).read_bytes().decode("utf-8")
        assert document.text == original[document.start : document.end]


def test_within_also_reports_duplicates_among_the_queried_files(
    sites: Path, tmp_path: Path
) -> None:
    store = tmp_path / "collection.dedup"
    index.add(store, [sites / "site-classic"])
    queried = [sites / "site-qidian", sites / "site-tw"]
    against = index.query(store, queried)
    within = index.query(store, queried, within=True)
    assert not any(
        {m.source for m in c.members} == {"site-qidian", "site-tw"} for c in against.clusters
    )
    assert any({m.source for m in c.members} == {"site-qidian", "site-tw"} for c in within.clusters)


def test_the_report_of_an_index_is_the_scan_of_its_files(sites: Path, tmp_path: Path) -> None:
    store = tmp_path / "collection.dedup"
    index.add(store, [sites / name for name in STORED])
    index.add(store, [sites / QUERIED])
    scanned = dedup.scan([sites / name for name in [*STORED, QUERIED]])
    shutil.rmtree(sites)  # from the index alone
    assert index.report(store).to_json() == scanned.to_json()


def test_an_unchanged_file_adds_nothing_and_a_changed_one_replaces_its_rows(
    sites: Path, tmp_path: Path
) -> None:
    store = tmp_path / "collection.dedup"
    index.add(store, [sites / "site-qidian", sites / "site-tw"])
    before = index.info(store)
    again = index.add(store, [sites / "site-qidian"])
    assert again.added == () and len(again.unchanged) == 3 and again.prepared_again == ()
    assert index.info(store) == before
    # a site rewrites a chapter: half of the seed chapter replaced by other prose
    chapter = sites / "site-qidian" / "000.txt"
    text = chapter.read_text("utf-8")
    other = (sites / "site-classic" / "xiyouji.txt").read_text("utf-8")
    chapter.write_text(text[: len(text) // 2] + other[: len(text) // 2], "utf-8")
    changed = index.add(store, [sites / "site-qidian"])
    assert changed.added == (str(chapter),)
    assert set(changed.prepared_again) == {
        str(sites / "site-qidian" / name) for name in ("001.txt", "hongloumeng.txt")
    }
    scanned = dedup.scan([sites / "site-qidian", sites / "site-tw"])
    assert index.report(store).to_json() == scanned.to_json()
    stored = sqlite3.connect(store).execute("SELECT count(*) FROM files").fetchone()[0]
    assert stored == 5  # replaced, not added beside the old rows


def test_band_rows_written_a_batch_at_a_time_are_the_rows_of_each_file(
    sites: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An add holds its files' band rows back and writes them sorted across files, a batch
    at a time (store.BAND_ROWS_AT_ONCE): batches of a hundred rows, with a file replaced
    between them, leave the table each file's rows, as one batch does."""
    whole, pieces = tmp_path / "whole.dedup", tmp_path / "pieces.dedup"
    chapter = sites / "site-qidian" / "000.txt"
    text = chapter.read_text("utf-8")
    for made in (whole, pieces):
        chapter.write_text(text, "utf-8")
        index.add(made, [sites / "site-qidian", sites / "site-tw"])
        chapter.write_text(text[: len(text) // 2], "utf-8")
        index.add(made, [sites / "site-qidian"])
        monkeypatch.setattr(index_store, "BAND_ROWS_AT_ONCE", 100)

    def rows(path: Path) -> list[tuple[int, ...]]:
        with sqlite3.connect(path) as db:
            return db.execute(
                "SELECT band, key, file, passage FROM bands ORDER BY 1, 2, 3, 4"
            ).fetchall()

    def expected(path: Path) -> list[tuple[int, ...]]:
        """Each stored file's band keys, as its own row keeps them."""
        found = set()
        with sqlite3.connect(path) as db:
            for file, blob in db.execute("SELECT id, band_keys FROM files"):
                keys = index_store._keys_of(blob)
                found |= {
                    (band, int(key), file, passage) for (passage, band), key in np.ndenumerate(keys)
                }
        return sorted(found)

    assert len(rows(whole)) > 1000
    assert rows(pieces) == rows(whole) == expected(whole)
    queried = [sites / "site-mirror"]
    assert _pairs_with(index.query(pieces, queried), "site-mirror") == _pairs_with(
        index.query(whole, queried), "site-mirror"
    )


def test_files_sharing_a_band_are_those_holding_one_of_its_keys(tmp_path: Path) -> None:
    """Against the stored keys compared in Python: a file shares a band only where the band
    and the key are both the same; keys at the ends of int64 are looked up as they are."""
    low, high = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    stored = {
        "a": np.array([[1, 2, 3], [low, 5, 6]], dtype=np.int64),
        "b": np.array([[7, 8, high]], dtype=np.int64),
        "c": np.array([[2, 1, 9]], dtype=np.int64),  # a's keys, in other bands
    }
    with index_store.IndexStore(tmp_path / "keys.dedup", create=True) as store:
        with store.transaction():
            ids = {
                name: store.add(
                    index_store.NewFile(
                        name, name, "txt", None, 0, 0, "0" * 64, 0, b"", keys, frozenset()
                    )
                )
                for name, keys in stored.items()
            }
        for query in ([[1, 0, 0]], [[0, 0, 6]], [[low, 0, high]], [[2, 1, 0]], [[0, 0, 0]]):
            keys = np.array(query, dtype=np.int64)
            expected = sorted(
                ids[name]
                for name, held in stored.items()
                if any((held[:, band] == keys[:, band][:, None]).any() for band in range(3))
            )
            assert store.files_sharing(keys) == expected, query


def test_a_full_disk_is_said_to_be_full_and_leaves_the_index_as_it_was(
    sites: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's "database or disk is full" (here its page limit, which fails as a full disk
    does; a tmpfs of 20 MB, tried by hand, gives the same): the message says so and what to
    do, not that the index is damaged; a new index is not left behind, an old one is as it
    was."""
    store = tmp_path / "collection.dedup"
    index.add(store, [sites / "site-qidian"])
    before = index.info(store)
    opened = index_store.IndexStore.__init__

    def with_no_room(self: index_store.IndexStore, *args: object, **options: object) -> None:
        opened(self, *args, **options)  # type: ignore[arg-type]
        (pages,) = self._db.execute("PRAGMA page_count").fetchone()
        self._db.execute(f"PRAGMA max_page_count = {pages + 2}")

    monkeypatch.setattr(index_store.IndexStore, "__init__", with_no_room)
    for made in (store, tmp_path / "new.dedup"):
        result = CliRunner().invoke(cli, ["index", "add", str(made), str(sites / "site-classic")])
        assert result.exit_code == 1, result.output
        assert "its disk is full" in result.stderr and "Free some space" in result.stderr
        assert "damaged" not in result.stderr
    monkeypatch.undo()
    assert not (tmp_path / "new.dedup").exists()
    assert index.info(store) == before


def test_no_room_for_the_stored_files_of_a_query_says_where_and_what_to_do(
    sites: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query writes the stored files it touches into a temporary folder: a full disk there
    (ENOSPC raised by that write, as a full TMPDIR did when tried by hand) is named as such,
    with TMPDIR to set; not said as the index's."""
    import errno

    store = tmp_path / "collection.dedup"
    index.add(store, [sites / "site-qidian"])
    real = Path.write_bytes

    def full(self: Path, data: bytes) -> int:
        if self.parent.name.startswith("dedup-index-"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", full)
    out = tmp_path / "q"
    result = CliRunner().invoke(
        cli, ["index", "query", str(store), str(sites / QUERIED), "-o", str(out)]
    )
    assert result.exit_code == 1
    assert "cannot write its stored files into the temporary folder" in result.stderr
    assert "No space left on device); free some space there, or set TMPDIR" in result.stderr
    assert "damaged" not in result.stderr and not out.exists()


def test_other_fingerprint_options_are_refused(sites: Path, tmp_path: Path) -> None:
    store = tmp_path / "collection.dedup"
    index.add(store, [sites / "site-qidian"])
    with pytest.raises(IndexFileError, match=r"ngram = 3, not 5.*--ngram"):
        index.query(store, [sites / QUERIED], dedup.ScanConfig(ngram=5))
    with pytest.raises(IndexFileError, match="script"):
        index.add(store, [sites / QUERIED], dedup.ScanConfig(script="traditional"))
    # what applies at query time may differ
    strict = index.query(store, [sites / QUERIED], dedup.ScanConfig(threshold=0.9))
    assert strict.options["threshold"] == 0.9
    result = CliRunner().invoke(cli, ["index", "query", str(store), str(sites / QUERIED),
                                      "--ngram", "4", "-o", str(tmp_path / "q")])  # fmt: skip
    assert result.exit_code == 1 and "--ngram" in result.stderr
    assert not (tmp_path / "q").exists()
    # The index remembers what it was built with: a report or a query need not repeat it,
    # and an option given once a value is named as the command line takes it.
    fields = tmp_path / "fields.dedup"
    index.add(fields, [sites / "site-qidian"], dedup.ScanConfig(source_fields=("site",)))
    result = CliRunner().invoke(cli, ["index", "report", str(fields), "-o", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    options = json.loads((tmp_path / "r" / "report.json").read_text("utf-8"))["options"]
    assert options["source_fields"] == ["site"]
    query = ["index", "query", str(fields), str(sites / QUERIED), "-o", str(tmp_path / "q2")]
    result = CliRunner().invoke(cli, [*query, "--source-field", "book"])
    assert result.exit_code == 1
    assert "source_fields = ['site'], not ['book']; give --source-field as it was built" in (
        result.stderr
    )
    assert CliRunner().invoke(cli, query).exit_code == 0


def test_the_command_line_adds_queries_reports_and_removes(sites: Path, tmp_path: Path) -> None:
    store = tmp_path / "collection.dedup"
    runner = CliRunner()
    added = runner.invoke(cli, ["index", "add", str(store), str(sites / "site-qidian"),
                                "--source", "qidian-2026", "-q"])  # fmt: skip
    assert added.exit_code == 0, added.output
    shown = runner.invoke(cli, ["index", "info", str(store)])
    assert shown.exit_code == 0 and "qidian-2026: 3 files" in shown.output
    assert "ngram=3" in shown.output
    out = tmp_path / "query"
    queried = runner.invoke(cli, ["index", "query", str(store), str(sites / QUERIED),
                                  "-o", str(out), "-q"])  # fmt: skip
    assert queried.exit_code == 0, queried.output
    report = dedup.load_report(out / "report.json")
    # the stored files' texts come from the index, not from the paths the report names
    assert report.texts_held
    assert report.matches and all(
        {m.a.source, m.b.source} == {"qidian-2026", QUERIED} for m in report.matches
    )
    whole = runner.invoke(cli, ["index", "report", str(store), "-o", str(tmp_path / "all"), "-q"])
    assert whole.exit_code == 0 and (tmp_path / "all" / "index.html").exists()
    removed = runner.invoke(cli, ["index", "remove", str(store), "--source", "qidian-2026"])
    assert removed.exit_code == 0 and "3 files of qidian-2026 removed" in removed.output
    missing = runner.invoke(cli, ["index", "remove", str(store), "--source", "qidian-2026"])
    assert missing.exit_code == 1 and "no source 'qidian-2026'" in missing.stderr
    assert index.info(store).files == 0


@pytest.mark.parametrize("kind", ["text", "sqlite", "folder", "missing"])
def test_a_foreign_or_missing_index_gets_a_clear_error_and_is_left_alone(
    sites: Path, tmp_path: Path, kind: str
) -> None:
    given = tmp_path / "given.dedup"
    if kind == "text":
        given.write_bytes("不是索引\n".encode() * 100)
    elif kind == "sqlite":
        connection = sqlite3.connect(given)
        connection.execute("CREATE TABLE notes (body TEXT)")
        connection.commit()
        connection.close()
    elif kind == "folder":
        given.mkdir()
    before = given.read_bytes() if given.is_file() else None
    runner = CliRunner()
    for arguments in (
        ["index", "info", str(given)],
        ["index", "query", str(given), str(sites / QUERIED), "-o", str(tmp_path / "q")],
        *([["index", "add", str(given), str(sites / QUERIED)]] if kind != "missing" else []),
    ):
        result = runner.invoke(cli, arguments)
        assert result.exit_code in (1, 2), (arguments, result.output)
        assert "Traceback" not in result.output
        assert str(given.name) in result.stderr and "dedup: error:" in result.stderr
    if before is not None:
        assert given.read_bytes() == before
    assert not (tmp_path / "q").exists()


def test_kill_9_during_add_leaves_an_index_that_holds_each_source_whole_or_not_at_all(
    sites: Path, tmp_path: Path
) -> None:
    store = tmp_path / "collection.dedup"
    index.add(store, [sites / "site-tw"])  # what was there before the interrupted adds
    first = index.info(store)
    adding = [str(sites / name) for name in [*STORED, "site-gbk"]]
    command = [sys.executable, "-m", "dedup", "index", "add", str(store), *adding, "-q", "-j", "1"]
    # a killed add cannot remove its temporary folder: in tmp_path, not the machine's /tmp
    (scratch := tmp_path / "tmp").mkdir()
    repo = str(Path(__file__).resolve().parents[1])
    environment = {**os.environ, "PYTHONPATH": repo, "TMPDIR": str(scratch)}
    started = time.perf_counter()
    subprocess.run(command, check=True, env=environment)  # how long an add takes
    whole = time.perf_counter() - started
    complete = index.info(store)
    files_of = {entry.name: entry.files for entry in complete.sources}
    chance = random.Random(17)
    for _attempt in range(5):
        for entry in index.info(store).sources:
            if entry.name != "site-tw":
                index.remove(store, entry.name)
        process = subprocess.Popen(command, env=environment)
        time.sleep(chance.uniform(0.1, whole))
        process.send_signal(signal.SIGKILL)
        process.wait()
        after = index.info(store)  # opens, and answers
        for entry in after.sources:
            assert entry.files == files_of[entry.name], entry  # each source whole
        connection = sqlite3.connect(store)
        bands = dict(connection.execute("SELECT file, count(*) FROM bands GROUP BY file"))
        for file, passages in connection.execute("SELECT id, passages FROM files"):
            assert bands.get(file, 0) == passages * complete.options["bands"]
        connection.close()
        assert index.query(store, [sites / QUERIED]).summary.files >= 1
    assert {entry.name for entry in first.sources} <= {entry.name for entry in after.sources}


def test_readers_query_while_one_writer_adds(sites: Path, tmp_path: Path) -> None:
    store = tmp_path / "collection.dedup"
    index.add(store, [sites / "site-qidian"])
    asked = [sites / "site-classic"]
    before = _pairs_with(index.query(store, asked), "site-classic")
    adding = [str(sites / name) for name in ["site-tw", "site-mirror", "site-gbk"]]
    command = [sys.executable, "-m", "dedup", "index", "add", str(store), *adding, "-q", "-j", "1"]
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    writer = subprocess.Popen(command, env=environment)
    seen = []
    while writer.poll() is None:  # meanwhile, a reader asks again and again
        seen.append(_pairs_with(index.query(store, asked), "site-classic"))
    after = _pairs_with(index.query(store, asked), "site-classic")
    assert writer.returncode == 0 and seen and after > before  # site-mirror carries 西游记
    # each answer is the index before the add or after it, never a part of it
    assert all(answer in (before, after) for answer in seen)
    assert {entry.name for entry in index.info(store).sources} == {
        "site-qidian", "site-tw", "site-mirror", "site-gbk",
    }  # fmt: skip
    assert not Path(f"{store}-wal").exists() or Path(f"{store}-wal").stat().st_size == 0


def test_a_damaged_index_is_said_to_be_damaged(sites: Path, tmp_path: Path) -> None:
    store = tmp_path / "collection.dedup"
    index.add(store, [sites / "site-qidian", sites / "site-classic"])
    data = store.read_bytes()
    store.write_bytes(data[: len(data) // 2])  # cut short, as by a full disk or a bad copy
    runner = CliRunner()
    for arguments in (
        ["index", "info", str(store)],
        ["index", "query", str(store), str(sites / QUERIED), "-o", str(tmp_path / "q")],
        ["index", "report", str(store), "-o", str(tmp_path / "r")],
    ):
        result = runner.invoke(cli, arguments)
        assert result.exit_code == 1, (arguments, result.output)
        assert "dedup: error:" in result.stderr and "Traceback" not in result.output
        assert "damaged" in result.stderr or "not a dedup index" in result.stderr
    assert store.read_bytes() == data[: len(data) // 2]


def test_an_add_that_makes_the_index_and_stops_leaves_no_index(
    sites: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dedup.index import collection

    def interrupted(*arguments: object) -> None:
        raise KeyboardInterrupt

    store = tmp_path / "new.dedup"
    monkeypatch.setattr(collection, "_prepare_into", interrupted)
    with pytest.raises(KeyboardInterrupt):
        index.add(store, [sites / "site-qidian"])
    assert list(tmp_path.glob("new.dedup*")) == []
    monkeypatch.undo()
    index.add(store, [sites / "site-qidian"])  # an index there already is left as it was
    before = store.read_bytes()
    monkeypatch.setattr(collection, "_prepare_into", interrupted)
    with pytest.raises(KeyboardInterrupt):
        index.add(store, [sites / "site-tw"])
    assert store.read_bytes() == before
