"""The report folder: complete or visibly absent after an interrupt, a kill or a full disk;
locked against a second writer; checked before any work; no process outlives the command."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dedup.cli import cli
from dedup.report import tables
from dedup.report.folder import ReportFolder
from tests.processes import alive, children, wait_until_loaded
from tests.reports import folder_files, report_json


def _scan(*arguments: str) -> Any:
    return CliRunner().invoke(cli, ["scan", *arguments])


def _leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name != out.name and out.name in p.name)


def test_an_interrupt_while_writing_leaves_the_previous_report_whole(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "report"
    tables_too = ("--format", "html,csv,jsonl")
    assert _scan(str(samples), "-o", str(out), "-q", "-j", "1", *tables_too).exit_code == 0
    before = folder_files(out)
    assert "clusters.csv" in before

    def interrupted(report: Any, handle: Any, full_text: bool) -> None:
        handle.write("cluster,size\r\nc1,2\r\n")
        raise KeyboardInterrupt

    monkeypatch.setattr(tables, "write_clusters_csv", interrupted)
    result = _scan(str(samples), "-o", str(out), "-q", "-j", "1", "--threshold", "0.9", *tables_too)
    assert result.exit_code != 0
    assert folder_files(out) == before
    assert _leftovers(out) == []
    # The first report into a new folder: absent, not half there.
    fresh = tmp_path / "fresh"
    assert _scan(str(samples), "-o", str(fresh), "-q", "-j", "1", *tables_too).exit_code != 0
    assert not fresh.exists() and _leftovers(fresh) == []


def test_a_narrower_format_leaves_no_stalefolder_files(samples: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert _scan(str(samples), "-o", str(out), "-q", "--format", "html,jsonl").exit_code == 0
    assert {"index.html", "clusters.jsonl"} <= set(folder_files(out))
    assert _scan(str(samples), "-o", str(out), "-q", "--format", "csv,pairs").exit_code == 0
    assert set(folder_files(out)) == {
        "report.json",
        "run.json",
        "matches.csv",
        "clusters.csv",
        "pairs.csv",
    }
    assert _scan(str(samples), "-o", str(out), "-q", "--format", "csv").exit_code == 0
    assert set(folder_files(out)) == {"report.json", "run.json", "matches.csv", "clusters.csv"}


def test_a_folder_of_other_files_is_never_replaced(samples: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes", "utf-8")
    result = _scan(str(samples), "-o", str(out), "-q")
    assert result.exit_code == 1
    assert "not a dedup report (notes.txt)" in result.stderr
    assert folder_files(out) == {"notes.txt": b"my notes"}


def test_a_second_writer_to_the_same_folder_fails_at_once(samples: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    with ReportFolder(out):
        result = _scan(str(samples), "-o", str(out), "-q")
    assert result.exit_code == 1
    assert f"another dedup (process {os.getpid()}) is writing a report" in result.stderr
    assert not out.exists()
    assert _scan(str(samples), "-o", str(out), "-q").exit_code == 0  # free again
    assert _leftovers(out) == []


@pytest.mark.parametrize("where", ["under-a-file", "read-only", "proc"])
def test_an_unwritable_out_fails_before_the_scan(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    import dedup.pipeline

    def no_scan(*arguments: Any, **options: Any) -> None:
        raise AssertionError("the scan ran before --out was checked")

    monkeypatch.setattr(dedup.pipeline, "scan_to", no_scan)
    if where == "under-a-file":
        (tmp_path / "a-file").write_text("x", "utf-8")
        out = tmp_path / "a-file" / "report"
    elif where == "read-only":
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only folders")
        (tmp_path / "ro").mkdir(mode=0o500)
        out = tmp_path / "ro" / "report"
    else:
        out = Path("/proc/dedup-report")
    result = _scan(str(samples), "-o", str(out), "-q")
    assert result.exit_code == 1, result.output
    assert "dedup: error: cannot write" in result.stderr and "choose another --out" in result.stderr


@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {mounted.stderr.decode().strip()}")
    yield disk
    subprocess.run(["umount", str(disk)], check=True)


def test_an_interrupt_while_the_folder_is_made_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C between making the partial folder and marking it as being written (CI caught
    one a second into a scan) leaves no folder: unmarked, no later run would remove it."""
    out = tmp_path / "report"
    touch = Path.touch

    def interrupted(path: Path, *arguments: Any, **options: Any) -> None:
        touch(path, *arguments, **options)  # the marker is made, the interrupt comes after
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "touch", interrupted)
    with pytest.raises(KeyboardInterrupt), ReportFolder(out):
        pytest.fail("entered")
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    with ReportFolder(out) as folder:  # the lock was let go
        (folder.path / "report.json").write_text("{}", "utf-8")
        folder.commit()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


# SIGTERM at each line, in turn, of taking the lock, putting the report in place of the last
# one, and letting the lock go: a trace function sends it as the line starts. Each run prints
# whether it was interrupted, what it left beside OUT, and which run's report is at OUT.
LOCK_SCRIPT = """
import json, os, shutil, signal, sys, time
from pathlib import Path
from dedup.engine.lifetime import terminate_as_interrupt
from dedup.report.folder import ReportFolder

out = Path(sys.argv[1])
watched = {
    function.__code__
    for function in (
        ReportFolder._acquire_lock,
        ReportFolder._put_in_place,
        ReportFolder.__exit__,
        ReportFolder._release_lock,
    )
}


def report(moment):
    with ReportFolder(out) as folder:
        (folder.path / "report.json").write_text(f'{{"report_format": {moment}}}', "utf-8")
        folder.commit()
        time.sleep(0.1)
    time.sleep(0.1)


report(0)
for moment in range(1, 200):
    lines = 0

    def at_each_line(frame, event, argument):
        global lines
        if event == "line":
            lines += 1
            if lines == moment:
                os.kill(os.getpid(), signal.SIGTERM)
        return at_each_line

    def traced(frame, event, argument):
        return at_each_line if frame.f_code in watched else None

    sys.settrace(traced)
    try:
        with terminate_as_interrupt():
            report(moment)
        outcome = "finished"
    except KeyboardInterrupt:
        outcome = "interrupted"
    except Exception as error:  # the lock still held by this process
        outcome = type(error).__name__
    sys.settrace(None)
    if lines < moment:  # every line has had its turn
        break
    left = sorted(out.parent.iterdir())
    at_out = "absent"
    if (out / "report.json").exists():
        at_out = json.loads((out / "report.json").read_text("utf-8"))["report_format"]
    print(moment, outcome, at_out, *(p.name for p in left))
    for path in left:  # so that each run starts afresh
        if path != out:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
"""


def test_a_stop_while_the_lock_is_taken_or_let_go_leaves_no_lock(tmp_path: Path) -> None:
    """CI once found ``.report.dedup-lock`` left after a SIGTERM: the interrupt came between
    making the lock file and holding it, or between holding it and removing it. Nor may it
    come between moving the last report aside and putting the new one in its place."""
    out = tmp_path / "report"
    done = subprocess.run(
        [sys.executable, "-c", LOCK_SCRIPT, str(out)],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    runs = [line.split() for line in done.stdout.splitlines()]
    assert len(runs) > 20, done.stdout  # the four functions' lines, each once
    previous = "0"
    for moment, outcome, at_out, *left in runs:
        assert (outcome, left) == ("interrupted", ["report"]), done.stdout
        assert at_out in (previous, moment), done.stdout  # the last report, or this one
        previous = at_out
    assert previous != "0"  # some runs put theirs in place


def test_a_full_disk_names_the_file_and_leaves_no_partial_report(
    samples: Path, small_disk: Path
) -> None:
    out = small_disk / "report"
    result = _scan(str(samples), "-o", str(out), "-q", "-j", "1")
    assert result.exit_code == 1
    assert "No space left on device" in result.stderr
    assert "cannot write " + str(out) + "/" in result.stderr
    assert "free some space" in result.stderr
    assert list(small_disk.iterdir()) == []


def _dump(tmp_path: Path, samples: Path, copies: int) -> Path:
    """Sites that carry the sample chapters, each its own copy: a scan with some work in it."""
    dump = tmp_path / "dump"
    for number in range(copies):
        for site in sorted(samples.iterdir()):
            if site.is_dir():
                shutil.copytree(site, dump / f"{site.name}-{number}")
    return dump


def _run(dump: Path, out: Path) -> subprocess.Popen[bytes]:
    scan = ["scan", str(dump), "-o", str(out), "-q", "-j", "2", "--format", "html,csv,jsonl"]
    with open(out.with_name("stderr.txt"), "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "dedup", *scan], stdout=subprocess.DEVNULL, stderr=log
        )


def _complete(out: Path) -> None:
    report = report_json(out)
    assert report["clusters"]
    assert {"run.json", "index.html", "clusters.csv", "clusters.jsonl"} <= set(folder_files(out))
    lines = (out / "clusters.jsonl").read_text("utf-8").splitlines()
    assert len(lines) == len(report["clusters"])


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_scan_leaves_no_process_and_no_report_that_looks_complete(
    samples: Path, tmp_path: Path, stop: signal.Signals
) -> None:
    dump = _dump(tmp_path, samples, 6)
    out = tmp_path / "report"
    timing = _run(dump, out)
    started = time.monotonic()
    assert timing.wait(timeout=120) == 0
    whole = time.monotonic() - started
    shutil.rmtree(out)
    chance = random.Random(stop)
    for _ in range(4):
        scan = _run(dump, out)
        seen: set[int] = set()
        deadline = time.monotonic() + chance.uniform(0.3, 1.0) * whole
        while time.monotonic() < deadline and scan.poll() is None:
            seen |= children(scan.pid)
            time.sleep(0.01)
        seen |= children(scan.pid)
        scan.send_signal(stop)
        code = scan.wait(timeout=60)
        if stop == signal.SIGTERM:
            # 130 as for Ctrl-C; 0 when it had finished, or -15 when the signal came as
            # Python was ending (its handlers are gone then): the report was complete.
            assert code in (0, 130, -signal.SIGTERM), (tmp_path / "stderr.txt").read_text()
            if code != 130:
                _complete(out)
        time.sleep(0.5)
        assert [pid for pid in seen if alive(pid)] == []
        if out.exists():  # finished before the signal, or a complete report
            _complete(out)
            shutil.rmtree(out)
        partial = [p for p in tmp_path.iterdir() if ".partial-" in p.name]
        if stop == signal.SIGTERM:
            assert partial == [] and not (tmp_path / ".report.dedup-lock").exists()
        else:  # killed outright: what it left is named as partial, and is removed next time
            assert all((p / ".dedup-writing").exists() for p in partial)
    assert _scan(str(dump), "-o", str(out), "-q", "--format", "html,csv,jsonl").exit_code == 0
    _complete(out)
    assert [p.name for p in tmp_path.iterdir() if "report" in p.name] == ["report"]
    # CPython prints "Exception ignored" when a signal lands in a callback it called from C
    # (the interrupt is lost, and the scan ends normally, its report complete); nothing else.
    errors = (tmp_path / "stderr.txt").read_text()
    assert "Traceback" not in errors or "Exception ignored" in errors, errors


def test_out_may_name_the_current_folder_but_not_the_root(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "empty"
    here.mkdir()
    monkeypatch.chdir(here)
    assert _scan(str(samples), "-o", ".", "-q").exit_code == 0
    assert (here / "report.json").exists()
    assert _leftovers(here) == []
    root = _scan(str(samples), "-o", "/", "-q")
    assert root.exit_code == 1 and "root of the file system" in root.stderr


def test_ctrl_c_while_the_first_run_compiles_is_a_clean_interrupt(
    samples: Path, tmp_path: Path
) -> None:
    """With a fresh numba cache the scan spends its first seconds compiling; an interrupt
    then must neither be lost in the compiler's callbacks nor leave it broken. The moments
    count from numba's compiler being loaded, not from the start: on a loaded machine
    Python's own start took longer than the first of them, where an interrupt is Python's
    to lose (an "Exception ignored" in importlib's callbacks, seen in CI)."""
    for moment in (0.2, 0.6, 1.0, 1.4):
        cache = tmp_path / f"cache-{moment}"
        environment = {
            **os.environ,
            "NUMBA_CACHE_DIR": str(cache),
            "DEDUP_IGNORE_SHIPPED_KERNELS": "1",  # compiled, not loaded from the shipped
        }
        out = tmp_path / f"report-{moment}"
        with open(tmp_path / "stderr.txt", "wb") as log:
            scan = subprocess.Popen(
                [sys.executable, "-m", "dedup", "scan", str(samples), "-o", str(out), "-q"],
                stderr=log,
                env=environment,
            )
        wait_until_loaded(scan.pid, "llvmlite")
        time.sleep(moment)
        scan.send_signal(signal.SIGINT)
        code = scan.wait(timeout=120)
        errors = (tmp_path / "stderr.txt").read_text()
        assert code == 130, errors
        assert "Traceback" not in errors and "dedup: interrupted" in errors, errors
        assert not out.exists() and _leftovers(out) == []
