"""Inputs at fsspec URLs (dedup.read.location): memory:// and file:// dumps give the report a
scan of the same files on disk gives (their paths apart), and URLs that cannot be read stop the
scan with a message naming them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import dedup
from dedup.cli import cli

fsspec = pytest.importorskip("fsspec")


@pytest.fixture
def memory_dump(samples: Path) -> str:
    """The sample sites in fsspec's in-process memory filesystem (the local engine's workers
    are forked after discovery, so they see it too)."""
    memory = fsspec.filesystem("memory")
    for path in sorted(samples.rglob("*")):
        if path.is_file():
            memory.pipe(f"/samples/{path.relative_to(samples).as_posix()}", path.read_bytes())
    yield "memory://samples"
    memory.rm("/samples", recursive=True)


def _on_disk(samples: Path) -> str:
    return dedup.scan([samples], jobs=1).to_json().replace(f"{samples}/", "SAMPLES/")


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_memory_url_is_scanned_as_the_same_files_on_disk(
    memory_dump: str, samples: Path, jobs: int
) -> None:
    report = dedup.scan([memory_dump], jobs=jobs)
    assert report.summary.files == 9 and report.matches
    assert {entry.source for entry in report.inputs} == {
        path.name for path in samples.iterdir() if path.is_dir()
    }
    assert report.to_json().replace("memory:///samples/", "SAMPLES/") == _on_disk(samples)


def test_a_file_url_is_scanned_as_its_path(samples: Path) -> None:
    report = dedup.scan([f"file://{samples}"], jobs=2)
    assert report.inputs[0].path.startswith(f"file://{samples}/")
    assert report.to_json().replace(f"file://{samples}/", "SAMPLES/") == _on_disk(samples)


def test_a_pipe_or_device_in_a_file_url_dump_is_skipped_not_waited_on(
    samples: Path, tmp_path: Path
) -> None:
    """Under a file:// URL, a named pipe (opening it would wait for a writer for ever) and a
    link to a device are listed as not regular files, as under a path; a link to a file of
    the dump is read."""
    import os
    import subprocess
    import sys

    site = tmp_path / "dump" / "site"
    site.mkdir(parents=True)
    (site / "000.txt").write_bytes((samples / "site-qidian" / "000.txt").read_bytes())
    os.mkfifo(site / "pipe.txt")
    (site / "zero.txt").symlink_to("/dev/zero")
    (site / "link.txt").symlink_to(site / "000.txt")
    given = f"file://{tmp_path / 'dump'}"
    # a process of its own, so that a wait on the pipe fails the test rather than hangs it
    code = (
        "import json, dedup\n"
        f"report = dedup.scan([{given!r}], jobs=1)\n"
        "print(json.dumps([[i.path for i in report.inputs], "
        "[[s.path, s.reason] for s in report.skipped]]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    read, skipped = json.loads(done.stdout)
    assert read == [f"{given}/site/000.txt", f"{given}/site/link.txt"]
    assert skipped == [
        [f"{given}/site/{name}", "not a regular file"] for name in ("pipe.txt", "zero.txt")
    ]
    pipe = f"{given}/site/pipe.txt"  # given by itself
    code = f"import dedup\nprint(dedup.scan([{pipe!r}], jobs=1).skipped[0].reason)"
    alone = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert alone.stdout.strip() == "not a regular file"


def test_clean_writes_a_copy_of_a_url_dump(memory_dump: str, samples: Path, tmp_path: Path) -> None:
    from_url, from_disk = tmp_path / "url", tmp_path / "disk"
    for given, out in ((memory_dump, from_url), (str(samples), from_disk)):
        result = CliRunner().invoke(cli, ["clean", given, "-o", str(out), "-q", "-j", "1"])
        assert result.exit_code == 0, result.output
    written = sorted(p.relative_to(from_disk) for p in from_disk.rglob("*") if p.is_file())
    assert written == sorted(p.relative_to(from_url) for p in from_url.rglob("*") if p.is_file())
    for relative in written:
        if relative.name.startswith("removed."):  # they name the files by their URLs
            continue
        assert (from_url / relative).read_bytes() == (from_disk / relative).read_bytes()
    assert "memory:///samples/" in (from_url / "removed.jsonl").read_text("utf-8")


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("memory://no-such-dump", "no such file or folder; check the URL"),
        ("nosuchprotocol://dump", "check the URL (fsspec names its protocols"),
    ],
)
def test_a_url_that_cannot_be_read_is_named(url: str, says: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["scan", url, "-o", str(tmp_path / "report")])
    assert result.exit_code == 1
    assert f"dedup: error: {url}: " in result.stderr and says in result.stderr
    assert not (tmp_path / "report").exists()


def test_a_url_file_changed_while_it_is_scanned_is_left_out(
    memory_dump: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dedup import pipeline
    from dedup.engine import gather, member_texts
    from dedup.read.location import url_stamp

    changing = f"{memory_dump}/site-qidian/hongloumeng.txt"
    memory = fsspec.filesystem("memory")
    before = url_stamp(changing)
    assert before is not None and before[0] == memory.size("/samples/site-qidian/hongloumeng.txt")
    assert url_stamp(f"{memory_dump}/no-such-file.txt") is None
    first_pass = gather.prepare_all

    def then_edit(*args: object, **kwargs: object) -> object:
        prepared = first_pass(*args, **kwargs)  # type: ignore[arg-type]
        text = memory.cat("/samples/site-qidian/hongloumeng.txt").decode("utf-8")
        memory.pipe("/samples/site-qidian/hongloumeng.txt", ("（作者修改）" + text).encode("utf-8"))
        return prepared

    monkeypatch.setattr(pipeline, "prepare_all", then_edit)
    report = dedup.scan([memory_dump], jobs=1)
    assert url_stamp(changing) != before
    changed = [e.path for e in report.skipped if e.reason == member_texts.CHANGED_WHILE_SCANNING]
    assert changed == ["memory:///samples/site-qidian/hongloumeng.txt"]
    assert report.clusters and all(
        member.path != changed[0] for cluster in report.clusters for member in cluster.members
    )


def test_a_report_inside_a_url_dump_is_left_out(
    memory_dump: str, samples: Path, tmp_path: Path
) -> None:
    without = dedup.scan([memory_dump], jobs=1)
    written = tmp_path / "report"
    dedup.report.write_report(without, written)
    memory = fsspec.filesystem("memory")
    for path in sorted(written.rglob("*")):
        if path.is_file():
            relative = path.relative_to(written).as_posix()
            memory.pipe(f"/samples/site-qidian/last-scan/{relative}", path.read_bytes())
    memory.pipe("/samples/site-tw/.dedup-clean", b"")
    memory.pipe("/samples/site-tw/removed.jsonl", b'{"removed": "x"}\n')
    again = dedup.scan([memory_dump], jobs=1)
    left_out = [(entry.path, entry.reason) for entry in again.skipped]
    assert ("memory:///samples/site-qidian/last-scan", "a report dedup wrote: left out (its "
            "tables are not a source)") in left_out  # fmt: skip
    assert not any("removed.jsonl" in path or "index_data" in path for path, _ in left_out)
    assert again.inputs == without.inputs and again.clusters == without.clusters
    assert again.matches == without.matches


def test_member_texts_of_a_url_file_are_read_back_by_their_bytes(
    memory_dump: str, samples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dedup.engine import member_texts

    on_disk = _on_disk(samples)
    read_again: list[str] = []
    whole_file = member_texts.passage_texts

    def counted(file: object, *args: object) -> object:
        read_again.append(file.path)  # type: ignore[attr-defined]
        return whole_file(file, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(member_texts, "passage_texts", counted)
    report = dedup.scan([memory_dump], jobs=1)
    assert report.to_json().replace("memory:///samples/", "SAMPLES/") == on_disk
    # the plain UTF-8 text files are read by their bytes; the JSON Lines dump and the files in
    # other encodings are read again whole
    assert sorted(read_again) == [
        "memory:///samples/site-gbk/002.txt",
        "memory:///samples/site-mirror/dump.jsonl",
        "memory:///samples/site-tw/hongloumeng-big5.txt",
    ]
