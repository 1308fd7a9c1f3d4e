"""The Dask engine on a real cluster of processes: a ``dask scheduler`` and two ``dask worker``
processes started here (random ports, torn down after), scans through ``--scheduler`` and
``--engine dask-local`` compared byte for byte with the local engine's, one worker killed part
way, a scheduler out of reach, and a path the workers cannot see."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gc
import json
import os
import pty
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import dedup
from dedup import pipeline
from dedup.cli import cli
from dedup.errors import DedupError
from tests.processes import alive, descendants
from tests.test_slices import mirror_records

distributed = pytest.importorskip("distributed")

SCHEDULER = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
WORKER = [sys.executable, "-m", "distributed.cli.dask_worker"]
STARTUP_SECONDS = 60


@dataclass
class Cluster:
    address: str
    scheduler: subprocess.Popen[bytes]
    workers: list[subprocess.Popen[bytes]]
    log: Path

    def client(self) -> distributed.Client:
        return distributed.Client(self.address, timeout="20s", set_as_default=False)


def _start_cluster(
    folder: Path,
    workers: int,
    worker_prefix: list[str] | None = None,
    worker_environment: dict[str, str] | None = None,
) -> Cluster:
    """``dask scheduler`` and ``workers`` ``dask worker --nworkers 1 --nthreads 1`` processes,
    each in a session of its own (so that teardown stops a worker's nanny and its child)."""
    folder.mkdir(parents=True, exist_ok=True)
    scheduler_file = folder / "scheduler.json"
    log = folder / "cluster.log"
    # Dask's own files of the scheduler and each worker here, not in the system's temporary
    # folder, where the processes killed at teardown would leave them.
    environment = {**os.environ, "DASK_TEMPORARY_DIRECTORY": str(folder)}
    with open(log, "ab") as out:
        scheduler = subprocess.Popen(
            [*SCHEDULER, "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)],
            stdout=out,
            stderr=out,
            start_new_session=True,
            env=environment,
        )
        deadline = time.monotonic() + STARTUP_SECONDS
        while not scheduler_file.exists() or not scheduler_file.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        worker_command = [*WORKER, address]
        worker_command += ["--nworkers", "1", "--nthreads", "1", "--no-dashboard"]
        started = [
            subprocess.Popen(
                [*(worker_prefix or []), *worker_command],
                stdout=out,
                stderr=out,
                start_new_session=True,
                cwd=folder,
                env={**environment, **(worker_environment or {})},
            )
            for _ in range(workers)
        ]
    cluster = Cluster(address, scheduler, started, log)
    if workers:
        with cluster.client() as client:
            client.wait_for_workers(workers, timeout=STARTUP_SECONDS)
    return cluster


def _stop_cluster(cluster: Cluster) -> None:
    for process in [*cluster.workers, cluster.scheduler]:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    started = _start_cluster(tmp_path_factory.mktemp("cluster"), workers=2)
    try:
        yield started
    finally:
        _stop_cluster(started)


@pytest.fixture(scope="module")
def local_reports(samples: Path, mirror_dump: Path) -> dict[str, str]:
    return {
        "samples": dedup.scan([samples], jobs=1).to_json(),
        "mirror": dedup.scan([mirror_dump], jobs=2).to_json(),
    }


def test_a_scan_through_the_scheduler_gives_the_local_engines_report(
    cluster: Cluster, samples: Path, mirror_dump: Path, local_reports: dict[str, str]
) -> None:
    on_samples = dedup.scan([samples], scheduler=cluster.address)
    assert on_samples.to_json() == local_reports["samples"]
    assert on_samples.engine == f"Dask at {cluster.address}, 2 workers (2 threads)"
    on_mirror = dedup.scan([mirror_dump], scheduler=cluster.address)
    assert on_mirror.to_json() == local_reports["mirror"]
    # Not a scan of nothing: the sites' near copies are found, page by page.
    assert on_mirror.summary.files > 200 and len(on_mirror.document_groups) >= 40


def test_batches_taken_a_piece_at_a_time_give_the_local_engines_report(
    cluster: Cluster,
    mirror_dump: Path,
    local_reports: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The passes whose workers keep what they make run in larger batches than what this
    process takes back at once: here every batch of the mirror dump is cut into pieces."""
    from dedup.engine import batches, dask_cluster

    monkeypatch.setattr(dask_cluster, "_BATCH_BYTES", 8_000)
    monkeypatch.setattr(dask_cluster, "_KEPT_BATCH_BYTES", 40_000)
    monkeypatch.setattr(dask_cluster, "_BATCHES_PER_THREAD", 1)
    cut = []

    def noted(*arguments: Any) -> Any:
        made = batches.batches_in_pieces(*arguments)
        cut.append(made[1])
        return made

    monkeypatch.setattr(dask_cluster, "batches_in_pieces", noted)
    taken = []  # as each batch's results are taken: the batches, those handed over, its own
    through = dask_cluster._Ahead.through

    def noted_through(self: Any, number: int) -> None:
        through(self, number)
        taken.append((self.count, self.handed, number))

    monkeypatch.setattr(dask_cluster._Ahead, "through", noted_through)
    report = dedup.scan([mirror_dump], scheduler=cluster.address)
    assert report.to_json() == local_reports["mirror"]
    kept = [pieces for pieces in cut if max(map(len, pieces)) > 1]
    assert len(kept) == 2  # the learn pass and the main pass
    assert all(len(piece) >= 3 for pieces in kept for piece in pieces[:-1])
    # The batches handed to the scheduler a few ahead of the one taken (two a worker
    # thread), not all at once: their calls and messages are made as they go.
    ahead = dask_cluster._BATCHES_AHEAD_PER_THREAD * 2
    assert all(number < handed <= number + ahead for _count, handed, number in taken)
    assert sum(count > handed for count, handed, _number in taken) > 20


def test_with_a_scratch_folder_this_process_holds_no_future_a_batch(
    cluster: Cluster, mirror_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kept under Dask's keys, each part of each batch the workers make is a future this
    process holds to the end of the scan, so its memory grew with the dump (issue 21). Kept
    in a scratch folder, none is: the futures held once the files are in are as few however
    many batches there are (here every batch of the mirror dump is made small)."""
    from dedup.config import ScanConfig
    from dedup.engine import dask_cluster
    from dedup.engine.base import engine_for
    from dedup.engine.gather import prepare_all
    from dedup.read import discover_inputs
    from dedup.timing import StageTimer

    monkeypatch.setattr(dask_cluster, "_BATCH_BYTES", 8_000)
    monkeypatch.setattr(dask_cluster, "_KEPT_BATCH_BYTES", 40_000)
    monkeypatch.setattr(dask_cluster, "_BATCHES_PER_THREAD", 1)
    files, _skipped = discover_inputs([str(mirror_dump)], False)
    held, runs = {}, {}
    for scratch in (None, str(tmp_path)):
        config = ScanConfig(scheduler=cluster.address, scratch=scratch)
        with engine_for(config, len(files)) as engine:
            prepared = prepare_all(files, config, StageTimer(), engine)
            assert prepared.kept is not None
            runs[scratch] = prepared.kept.run_count
            held[scratch] = len(engine.client_for_tasks().futures)
    assert runs[None] == runs[str(tmp_path)] > 20
    assert held[None] >= 6 * runs[None]  # the six parts of each run
    assert held[str(tmp_path)] <= 4, held  # the config and the lines each site repeats


def test_a_scratch_folder_is_checked_before_any_work(
    cluster: Cluster, samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One that does not exist is an error naming it (as is --scratch without a cluster),
    and so is one the workers do not see (each is asked); one given is left as it was, the
    scan's own folder in it removed."""
    from dedup.engine import dask_cluster

    report = tmp_path / "r"
    missing = tmp_path / "missing"
    given = [str(samples), "--scheduler", cluster.address, "-o", str(report)]
    result = CliRunner().invoke(cli, ["scan", *given, "--scratch", str(missing)])
    assert result.exit_code == 1
    assert f"{missing}: the scratch folder does not exist: make it on a filesystem" in (
        result.stderr
    )
    assert not report.exists()
    result = CliRunner().invoke(cli, ["scan", str(samples), "--scratch", str(tmp_path)])
    assert result.exit_code == 2
    assert "--scratch is where a Dask cluster's workers keep what they make" in result.stderr
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    def blind(folder: str) -> bool:  # a worker on another machine, the folder its own
        return False

    with monkeypatch.context() as patched:
        patched.setattr(dask_cluster, "sees_folder", blind)
        result = CliRunner().invoke(cli, ["scan", *given, "--scratch", str(scratch)])
    assert result.exit_code == 1
    with cluster.client() as client:
        first = min(client.scheduler_info(n_workers=-1)["workers"])
    assert f"the Dask worker {first} cannot see the scratch folder {scratch}/dedup-" in (
        result.stderr
    )
    assert not report.exists() and list(scratch.iterdir()) == []
    result = CliRunner().invoke(cli, ["scan", *given, "--scratch", str(scratch), "-q"])
    assert result.exit_code == 0, result.stderr
    assert (report / "report.json").exists() and list(scratch.iterdir()) == []
    engine = json.loads((report / "run.json").read_text("utf-8"))["engine"]
    assert (
        engine == f"Dask at {cluster.address}, 2 workers (2 threads), their parts kept in {scratch}"
    )


def test_passages_that_overlap_are_aligned_and_mapped_back_on_the_workers_as_here(
    cluster: Cluster, samples: Path
) -> None:
    """With --passage-overlap each passage leads with the end of the one before, which this
    process then holds (it holds none of the leads when all are 0)."""
    here = dedup.scan([samples], jobs=1, passage_overlap=100)
    there = dedup.scan([samples], scheduler=cluster.address, passage_overlap=100)
    assert here.summary.document_matches > 5 and len(here.clusters) > 5
    assert there.to_json() == here.to_json()


def test_ideographs_past_u_ffff_align_on_the_workers_as_here(
    cluster: Cluster, rare_ideographs_dump: Path
) -> None:
    """Align tasks take their texts in UTF-16 from what the workers keep (two code units for
    each of these ideographs): the same report as the local engine's, its match found."""
    on_cluster = dedup.scan([rare_ideographs_dump], scheduler=cluster.address)
    assert on_cluster.to_json() == dedup.scan([rare_ideographs_dump], jobs=2).to_json()
    assert len(on_cluster.matches) == 1


def test_the_workers_keep_what_they_make_and_the_stages_run_there(
    cluster: Cluster, mirror_dump: Path, tmp_path: Path
) -> None:
    """This process gets no signature, normalized text, offset step, seed or passage length:
    the candidate pairs (band keys shuffled by partition), their MinHash estimates, their
    verification, the documents' lengths, the pairs of documents sharing seeds (seeds
    shuffled by partition), their alignment and the spans mapped back to the original text
    are made on the workers, and are the local engine's: with what they keep under Dask's
    keys, and in a scratch folder."""
    from dedup.candidates import find_candidates
    from dedup.config import ScanConfig
    from dedup.documents import candidate_documents, document_runs
    from dedup.engine.base import engine_for
    from dedup.engine.gather import prepare_all
    from dedup.engine.scratch import StoredParts
    from dedup.engine.shuffle import LengthsOnWorkers, SignaturesOnWorkers, TextsOnWorkers
    from dedup.matches import align_pairs, original_spans, texts_to_align
    from dedup.read import discover_inputs
    from dedup.timing import StageTimer
    from dedup.verify import minhash_estimates, verify_candidates

    files, _skipped = discover_inputs([str(mirror_dump)], False)
    found = {}
    for name, config in [
        ("local", ScanConfig(jobs=1)),
        ("dask", ScanConfig(scheduler=cluster.address)),
        ("scratch", ScanConfig(scheduler=cluster.address, scratch=str(tmp_path))),
    ]:
        with engine_for(config, len(files)) as engine:
            prepared = prepare_all(files, config, StageTimer(), engine)
            kept = prepared.kept
            if name != "local":  # none came here
                assert len(prepared.signatures) == 0 and not prepared.normalized
                # each kept run holds a batch of files' passages, not a file's
                assert kept is not None and kept.run_count < len(files) / 2
            if name == "scratch":  # a file a part of each run
                assert kept is not None and isinstance(kept.text_parts, StoredParts)
                assert all(Path(part.path).stat().st_size for part in kept.text_parts)
                assert len(kept.seed_parts) == len(kept.span_parts) == kept.run_count
                # the learn pass's parts are gone: the main pass read its chapters last
                assert engine.scratch is not None
                stored = {path.name.split("-")[0] for path in Path(engine.scratch.folder).iterdir()}
                assert "chapters_of" not in stored and "texts_of" in stored
            passages = prepared.passages()
            if name != "local":
                assert isinstance(passages.signatures, SignaturesOnWorkers)
                assert isinstance(passages.texts, TextsOnWorkers)
                # the offset steps and the winnowed seeds: kept there too
                assert not len(passages.alignment.steps) and not len(passages.alignment.seeds)
                # and each passage's length and lead, looked up there
                alignment = passages.alignment
                assert not len(alignment.lengths) and not len(alignment.leads)
                assert isinstance(alignment.held_lengths, LengthsOnWorkers)
                assert len(alignment) == len(passages.spans) > 500
            candidates = find_candidates(
                passages.alignment.lengths_of,
                passages.hashes,
                passages.signatures,
                passages.spans,
                config.threshold,
                config.num_perm,
                engine,
            )
            estimates = minhash_estimates(candidates.pairs, passages.signatures, engine)
            verified = verify_candidates(
                candidates.copies,
                candidates.pairs,
                passages.texts,
                estimates,
                config.ngram,
                config.threshold,
                config.containment,
                engine,
            )
            leader = candidates.leaders(len(passages.spans))
            documents = document_runs(passages.spans, passages.runs, passages.alignment)
            document_pairs = candidate_documents(
                documents, leader, passages.alignment, verified, engine
            )
            texts = texts_to_align(passages.texts, leader, passages.alignment)
            aligned = align_pairs(document_pairs, documents, texts, config.align, engine)
            shared = original_spans(aligned, documents, passages.spans, passages.alignment)
            found[name] = (
                candidates.pairs,
                estimates,
                verified,
                aligned.spans,
                shared,
                document_pairs,
                documents.story_chars,
            )
    local = found["local"]
    assert len(local[0]) > 300 and len(local[2]) > 300  # the sites' near copies
    assert len(local[3]) > 100  # and the pages' shared spans
    assert len(local[5]) > 100 and len(local[6]) > 100  # the pairs of documents, their lengths
    for dask in (found["dask"], found["scratch"]):
        assert np.array_equal(dask[0], local[0])
        assert np.array_equal(dask[1], local[1])
        assert list(dask[2]) == list(local[2])
        assert np.array_equal(dask[3], local[3])
        assert np.array_equal(dask[4], local[4])
        assert np.array_equal(dask[5], local[5])
        assert np.array_equal(dask[6], local[6])
    assert list(tmp_path.iterdir()) == []  # the scan's folder removed with the engine


def test_a_task_is_given_only_the_texts_of_its_passages(
    cluster: Cluster, mirror_dump: Path
) -> None:
    """A task of some passages' texts gets each distinct text of them once, taken where its
    run is kept, not the whole runs they are in, and reads them in its passages' order (out
    of the scan's order and repeated), as it would from the whole runs."""
    from dedup.config import ScanConfig
    from dedup.engine.base import engine_for
    from dedup.engine.gather import prepare_all
    from dedup.engine.shuffle import TextsOnWorkers
    from dedup.read import discover_inputs
    from dedup.timing import StageTimer

    files, _skipped = discover_inputs([str(mirror_dump)], False)
    config = ScanConfig(scheduler=cluster.address)
    with engine_for(config, len(files)) as engine:
        prepared = prepare_all(files, config, StageTimer(), engine)
        kept = prepared.kept
        assert kept is not None and kept.run_count >= 3
        texts = prepared.passages().texts
        assert isinstance(texts, TextsOnWorkers)
        firsts = kept.firsts()
        first_size, last_size = int(firsts[1]), kept.count - int(firsts[-1])
        assert first_size > 5 and last_size > 5
        # the passages of the last run backwards, of the first but two, and three of those
        # again; none of the runs between
        last = np.arange(last_size)[::-1]
        first, again = np.arange(2, first_size), np.arange(2, 5)
        wanted = np.concatenate([firsts[-1] + last, first, again]).astype(np.int64)
        client = engine.client_for_tasks()
        taken, _starts, _numbered = texts._taken(wanted)
        given = client.gather(taken)
        assert [len(run) for run in given] == [first_size - 2, last_size]
        whole = client.gather([kept.text_parts[0], kept.text_parts[-1]])
        expected = np.concatenate(
            [whole[1].code_points(last), whole[0].code_points(first),
             whole[0].code_points(again)]
        )  # fmt: skip
        (codes,) = texts.map(np.copy, [wanted])
    assert len(expected) > 1000 and np.array_equal(codes, expected)


def test_a_shuffles_batches_are_of_runs_kept_on_one_worker(cluster: Cluster) -> None:
    """A shuffle's task that splits runs into partitions is given runs one worker keeps, so
    none moves to it, in the scan's order (the partitions come out in the scan's order
    whatever the batches: the reports' equality tests)."""
    from dedup.config import ScanConfig
    from dedup.engine.dask_cluster import DaskEngine
    from dedup.engine.shuffle import _batches_by_worker

    with DaskEngine(ScanConfig(scheduler=cluster.address)) as engine:
        client = engine.client_for_tasks()
        one, other = sorted(client.scheduler_info(n_workers=-1)["workers"])
        # runs kept on one worker and the other in turn, as a pass leaves them
        kept = [
            client.scatter(np.arange(run), workers=[(one, other)[run % 2]], hash=False)
            for run in range(7)
        ]
        client.gather(kept)
        batches = _batches_by_worker(engine, kept, 3)
    assert batches == [[0, 2, 4], [6], [1, 3, 5]]


def test_the_workers_learn_the_lines_each_site_repeats_keeping_their_keys(
    cluster: Cluster, slogan_sites: Path
) -> None:
    """The learn pass's line keys and chapters (which grow with the dump) stay on the
    workers, the keys counted there by partition: this process gets the repeated lines, the
    local engine's, and each file's chapters are the local engine's where the main pass
    finds them."""
    from distributed import Future

    from dedup.config import ScanConfig
    from dedup.engine.base import engine_for
    from dedup.engine.gather import learned_lines
    from dedup.normalize.line_keys import line_key
    from dedup.read import discover_inputs
    from tests.conftest import SLOGAN

    def tables(chapters: Any) -> list[Any]:
        return [[(t.text_length, t.bounds.tolist(), t.titles) for t in d] for d in chapters]

    files, _skipped = discover_inputs([str(slogan_sites)], False)
    found, chapters = {}, {}
    for name, config in [
        ("local", ScanConfig(jobs=1)),
        ("dask", ScanConfig(scheduler=cluster.address)),
    ]:
        with engine_for(config, len(files)) as engine:
            kept = engine.kept_on_workers(False)
            assert (kept is None) == (name == "local")
            found[name] = learned_lines(engine, kept, files, config, [None] * len(files))
            chapters[name] = [
                tables(held.result()[within] if isinstance(held, Future) else held)
                for held, within in found[name].chapters
            ]
            assert all(
                isinstance(held, Future) == (name == "dask") for held, _ in found[name].chapters
            )
            if kept is not None:  # the sources of the chapters come back, not their keys
                back = list(kept.learn_tasks(files, config, [None] * len(files)))
                assert sum(piece.files for piece, _kept in back) == len(files)
                sources = [source for piece, _kept in back for source in piece.sources]
                assert sorted(set(sources)) == ["a", "b"]
                for piece, _kept in back:  # nor the chapters: each file's inputs counted
                    assert piece.inputs.tolist() == [1] * piece.files
    here, there = found["local"], found["dask"]
    assert (
        there.repeated
        == here.repeated
        == {
            "a": frozenset({line_key(SLOGAN)}),
            "b": frozenset({line_key(SLOGAN)}),
        }
    )
    assert chapters["dask"] == chapters["local"] and len(chapters["local"][0][0][0][1]) == 6
    assert there.seconds > 0 and here.seconds > 0


def test_the_stages_on_the_workers_show_their_tasks(
    cluster: Cluster, samples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dedup.scan([samples], scheduler=cluster.address, show_progress=True)
    shown = capsys.readouterr().err
    for stage, unit in (
        ("read+fingerprint", "file"),
        ("candidates", "partition"),
        ("estimates", "chunk"),
        ("verify", "task"),
        ("document pairs", "partition"),
        ("align", "task"),
        ("spans mapped", "task"),
    ):
        assert f"{stage}: " in shown and f"{unit}/s" in shown, stage


def test_a_first_dask_local_scan_compiles_no_loop_on_the_workers(
    samples: Path, tmp_path: Path
) -> None:
    """The workers' tasks (the alignment's chunks among them) call the loops with arrays of
    the kinds the shipped ones were built for: a fresh install's cluster compiles none (a
    read-only array would make numba compile a loop again, seconds on each worker)."""
    from dedup.kernels import jit

    if not jit.shipped_fit():
        pytest.skip("the shipped loops are for another processor level or numba")
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    environment.pop("DEDUP_IGNORE_SHIPPED_KERNELS", None)
    command = [sys.executable, "-m", "dedup", "scan", str(samples), "-q"]
    command += ["--engine", "dask-local", "-j", "2", "-o", str(tmp_path / "out")]
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))["matches"]
    assert not list((tmp_path / "cache").rglob("*.nbi"))


def test_a_large_array_goes_to_the_workers_apart_from_its_task(cluster: Cluster) -> None:
    """An array of megabytes that a stage's task takes (a chunk of pairs, of a 1 GB dump's)
    goes to a worker on its own, in a list too, not in the task's graph through the
    scheduler, which had distributed warn the user of a large graph."""
    from dedup.config import ScanConfig
    from dedup.engine.dask_cluster import DaskEngine

    pairs = np.arange(3_000_000, dtype=np.int64).reshape(-1, 2)  # 24 MB
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*large graph")
        with DaskEngine(ScanConfig(scheduler=cluster.address)) as engine:
            assert engine.submit(np.sum, pairs).result() == pairs.sum()
            assert engine.submit(len, [pairs, (pairs, 1)]).result() == 2
            assert engine.submit(np.sum, pairs).key.startswith("sum-")


def test_the_config_and_a_files_absolute_path_are_not_made_again_for_each_call(
    cluster: Cluster, samples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass's calls share one config made for the workers (one a file, held while the
    pass runs, was most of what a dump of a page a file cost this process then), and a
    file found by its absolute path goes as it is; one found by a relative path goes by
    its absolute path, which the workers can open from their own folders. Once handed
    over, the calls are let go of (held until the pass's end, they cost some 400 B a
    file)."""
    from itertools import repeat

    from dedup.config import ScanConfig
    from dedup.engine.dask_cluster import DaskEngine
    from dedup.read import FoundFile, discover_inputs
    from dedup.read.slices import planned_slices

    absolute = list(discover_inputs([str(samples)])[0])
    monkeypatch.chdir(samples.parent)
    relative = list(discover_inputs([samples.name])[0])
    config = ScanConfig(scheduler=cluster.address)
    with DaskEngine(config) as engine:
        calls = engine._calls([absolute + relative, repeat(config)])

        # A pass handed to the workers holds none of its calls, nor the files made for them.
        def files_held() -> int:
            gc.collect()
            return sum(type(held) is FoundFile for held in gc.get_objects())

        held = files_held()
        results = engine.map(planned_slices, relative, repeat(config))
        assert files_held() == held
        assert list(results) == [()] * len(relative)
    sent_files = [file for file, _config in calls]
    assert sent_files[: len(absolute)] == absolute
    assert all(
        sent.fs_path is file.fs_path for sent, file in zip(sent_files, absolute, strict=False)
    )
    assert [file.fs_path for file in sent_files[len(absolute) :]] == [
        file.fs_path for file in absolute
    ]
    assert not any(os.path.isabs(file.fs_path) for file in relative)
    configs = {id(sent_config) for _file, sent_config in calls}
    assert len(configs) == 1 and calls[0][1].scheduler is None and config.scheduler


def test_a_batchs_calls_go_as_one_object_with_each_future_once_beside_it(
    cluster: Cluster,
) -> None:
    """A batch's calls are sent as one object Dask leaves as it is, its futures (a value
    scattered to every call, a value some calls share) once each beside it: each call
    still gets the values of its own futures, in their places."""
    from itertools import repeat

    from dedup.config import ScanConfig
    from dedup.engine.dask_cluster import DaskEngine, _batch_task, _BatchCalls

    def arguments(number: int, lines: object, chapters: object, sent: object) -> tuple[object, ...]:
        return number, lines, chapters, getattr(sent, "scheduler", sent)  # (sent by value)

    config = ScanConfig(scheduler=cluster.address)
    with DaskEngine(config) as engine:
        client = engine.client_for_tasks()
        chapters = [client.scatter(f"chapters {n}", hash=False) for n in range(3)]
        per_call = [chapters[n % 3] if n % 4 else () for n in range(10)]
        calls = engine._calls([list(range(10)), repeat({"line": 1}), per_call, repeat(config)])
        futures, sent = calls.batch_sent(range(2, 9))
        assert isinstance(sent, _BatchCalls) and len(futures) == len(set(futures)) == 4
        assert futures[1:] == [chapters[2], chapters[0], chapters[1]]  # as first met
        done = client.submit(_batch_task, arguments, futures, sent, pure=False).result()
    expected = [(n, {"line": 1}, f"chapters {n % 3}" if n % 4 else (), None) for n in range(2, 9)]
    assert done == expected


def test_a_file_handed_to_the_workers_leaves_its_path_as_it_was(
    cluster: Cluster, samples: Path, tmp_path: Path
) -> None:
    """Pickling a string that is not all ASCII stores its UTF-8 in it for as long as it
    lives; a caller's found file (a list of them, held for the whole scan) keeps its path,
    so the workers get a copy."""
    from itertools import repeat

    from dedup.config import ScanConfig
    from dedup.engine.dask_cluster import DaskEngine
    from dedup.read import discover_inputs
    from dedup.read.slices import planned_slices

    folder = tmp_path / "起点"
    folder.mkdir()
    (folder / "第一章.txt").write_bytes((samples / "site-qidian/000.txt").read_bytes())
    found = list(discover_inputs([str(tmp_path)])[0])
    path = found[0].path
    size = sys.getsizeof(path)
    config = ScanConfig(scheduler=cluster.address)
    with DaskEngine(config) as engine:
        assert list(engine.map(planned_slices, found, repeat(config))) == [()]
    assert not path.isascii() and found[0].path is path and sys.getsizeof(path) == size


def test_workers_read_fsspec_urls(cluster: Cluster, samples: Path) -> None:
    url = f"file://{samples}"
    report = dedup.scan([url], scheduler=cluster.address)
    assert report.inputs[0].path.startswith(f"{url}/") and report.matches
    assert report.to_json() == dedup.scan([url], jobs=1).to_json()


def test_the_api_takes_a_client_and_leaves_it_open(
    cluster: Cluster, samples: Path, local_reports: dict[str, str]
) -> None:
    with cluster.client() as client:
        report = dedup.scan([samples], scheduler=client)
        assert report.to_json() == local_reports["samples"]
        assert report.engine.startswith(f"Dask at {cluster.address}, 2 workers")
        assert client.status == "running"
        # The scan's tasks and what it sent are let go of as it returns.
        deadline = time.monotonic() + 10
        while client.run_on_scheduler(_tasks_held):
            assert time.monotonic() < deadline, "the scan left tasks on the cluster"
            time.sleep(0.05)


def test_the_cycles_the_clients_event_loop_makes_are_collected_as_the_scan_runs(
    cluster: Cluster, samples: Path, mirror_dump: Path
) -> None:
    # The client's event loop runs in this process and makes reference cycles all the scan
    # long (an exception a tornado timeout, with its traceback and frames): with the
    # collector paused, as the local engine's scan has it, they were held to the end.
    dedup.scan([samples], scheduler=cluster.address)  # what a first scan imports, imported
    freed: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            freed.append(info["collected"])

    thresholds = gc.get_threshold()
    gc.callbacks.append(count)
    try:
        report = dedup.scan([mirror_dump], scheduler=cluster.address)
    finally:
        gc.callbacks.remove(count)
    assert report.document_groups
    assert sum(freed) > 0
    # and the collector given back as it was found
    assert gc.isenabled() and gc.get_threshold() == thresholds


@pytest.mark.parametrize("engine", ["dask", "dask-local"])
def test_the_clients_made_for_a_scan_keep_no_log_of_the_messages_sent(
    cluster: Cluster, engine: str
) -> None:
    """distributed keeps the last 1,000 messages a connection sent and the last 1,000
    transitions of a scheduler, which on a scan's driver are its task graphs, every file
    named in them: the client a scan makes (and a dask-local scheduler) keep none; the
    default is left as it was."""
    import dask

    from dedup.config import ScanConfig
    from dedup.engine.dask_cluster import DaskEngine

    default = dask.config.get("distributed.admin.low-level-log-length")
    assert default > 0
    options = {"scheduler": cluster.address} if engine == "dask" else {"engine": engine}
    with DaskEngine(ScanConfig(jobs=1, **options)) as scan:  # type: ignore[arg-type]
        assert scan.client is not None
        assert scan.client.scheduler_comm.recent_message_log.maxlen == 0
        if engine == "dask-local":
            assert scan.client.run_on_scheduler(_transition_log_length) == 0
        assert dask.config.get("distributed.admin.low-level-log-length") == default


def _transition_log_length(dask_scheduler: distributed.Scheduler) -> int | None:
    return dask_scheduler.transition_log.maxlen


def test_a_scan_that_fails_after_the_files_leaves_the_callers_client_working(
    cluster: Cluster, samples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails(*_arguments: object, **_options: object) -> None:
        raise DedupError("the candidates stage failed")

    monkeypatch.setattr(pipeline, "find_candidates", fails)
    log_before = cluster.log.read_text("utf-8", "replace")
    with cluster.client() as client:
        # The files are prepared, the workers keep what they made, and the scan stops.
        with pytest.raises(DedupError, match="the candidates stage failed") as failure:
            dedup.scan([samples], scheduler=client)
        assert client.submit(sum, [1, 2], pure=False).result(timeout=20) == 3
        # Its tasks are let go of though the error (and the scan's frames) is kept, as a
        # notebook keeps the last one.
        deadline = time.monotonic() + 10
        while client.run_on_scheduler(_tasks_held):
            assert time.monotonic() < deadline, "the scan left tasks on the cluster"
            time.sleep(0.05)
        assert failure.traceback
    # Cancelling finished tasks made the scheduler assert on their dependents (a traceback in
    # its log, the caller's stream handler gone).
    assert "AssertionError" not in cluster.log.read_text("utf-8", "replace")[len(log_before) :]


@pytest.mark.parametrize("in_scratch", [False, True])
def test_a_worker_killed_part_way_has_its_tasks_run_again(
    cluster: Cluster,
    mirror_dump: Path,
    local_reports: dict[str, str],
    tmp_path: Path,
    in_scratch: bool,
) -> None:
    """A worker killed once it has made some batches: Dask runs its tasks again elsewhere
    (what it kept under Dask's keys made again; what it stored in the scratch folder is
    there, whole, and a part it was writing is written again)."""
    result: dict[str, object] = {}
    scratch = str(tmp_path) if in_scratch else None

    def scan() -> None:
        try:
            result["report"] = dedup.scan([mirror_dump], scheduler=cluster.address, scratch=scratch)
        except BaseException as error:  # handed to the test's thread
            result["error"] = error

    with cluster.client() as client:
        running = threading.Thread(target=scan)
        running.start()
        # Once the workers have finished some files, kill the one busiest with the rest.
        deadline = time.monotonic() + STARTUP_SECONDS
        while not client.run_on_scheduler(_files_done):
            assert running.is_alive() and time.monotonic() < deadline
            time.sleep(0.02)
        busiest = max(client.processing().items(), key=lambda item: len(item[1]))[0]
        pid = client.run(os.getpid, workers=[busiest])[busiest]
        os.kill(pid, signal.SIGKILL)
        killed_while_scanning = running.is_alive()
        running.join(timeout=300)
        client.wait_for_workers(2, timeout=STARTUP_SECONDS)  # its nanny starts a new one
    assert killed_while_scanning, "the scan ended before the worker was killed"
    assert "error" not in result, result.get("error")
    report = result["report"]
    assert isinstance(report, dedup.Report)
    assert report.to_json() == local_reports["mirror"]
    assert list(tmp_path.iterdir()) == []


def _tasks_held(dask_scheduler: distributed.Scheduler) -> int:
    return len(dask_scheduler.tasks)


def _files_done(dask_scheduler: distributed.Scheduler) -> int:
    """Batches of files prepared: their results, or what the workers keep of them."""
    return sum(
        1
        for task in dask_scheduler.tasks.values()
        if str(task.key).startswith(("_batch_task", "_of_merged", "_stored"))
        and task.state == "memory"
    )


def test_a_large_jsonl_file_is_shared_by_the_workers_in_slices(
    cluster: Cluster, mirror_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The slices are planned here, where the scan runs (the sizes patched here are all the
    workers need: each is given its byte range)."""
    from dedup.read import slices, streams

    monkeypatch.setattr(streams, "STREAM_BYTES", 4096)
    monkeypatch.setattr(slices, "SLICE_BYTES", 64 << 10)
    path = tmp_path / "dump.jsonl"
    path.write_text("\n".join(mirror_records(mirror_dump)), "utf-8")
    local = dedup.scan([path], jobs=2, source_fields=("site",))
    with cluster.client() as client, distributed.get_task_stream(client) as tasks:
        on_cluster = dedup.scan([path], scheduler=cluster.address, source_fields=("site",))
    assert on_cluster.to_json() == local.to_json()
    assert len(on_cluster.document_groups) >= 40
    # Counting the slices' lines, then learning and preparing them: three tasks a slice (a
    # slice is a batch alone), on both workers.
    ran = [task for task in tasks.data if task["key"].startswith("_batch_task")]
    assert len(ran) >= 3 * 10
    assert len({task["worker"] for task in ran}) == 2


def test_a_scheduler_lost_part_way_is_an_error_and_no_report(
    mirror_dump: Path, tmp_path: Path
) -> None:
    doomed = _start_cluster(tmp_path / "cluster", workers=2)
    out = tmp_path / "report"
    command = [sys.executable, "-m", "dedup", "scan", str(mirror_dump), "-o", str(out), "-q"]
    try:
        with open(tmp_path / "stderr.txt", "wb") as log:
            scan = subprocess.Popen(
                [*command, "--scheduler", doomed.address],
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        with doomed.client() as client:
            deadline = time.monotonic() + STARTUP_SECONDS
            while not client.run_on_scheduler(_files_done):
                assert scan.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
        doomed.scheduler.kill()
        code = scan.wait(timeout=120)
    finally:
        _stop_cluster(doomed)
    errors = (tmp_path / "stderr.txt").read_text()
    assert code == 1, errors
    assert f"dedup: error: lost the Dask scheduler at {doomed.address} during the scan" in errors
    assert "Traceback" not in errors and errors.count("\n") == 1, errors
    assert not out.exists()


def test_dask_local_on_the_command_line(
    samples: Path, tmp_path: Path, local_reports: dict[str, str]
) -> None:
    out = tmp_path / "report"
    result = CliRunner().invoke(
        cli, ["scan", str(samples), "--engine", "dask-local", "-j", "2", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "on local Dask cluster, 2 workers (2 threads)" in result.stdout
    assert (out / "report.json").read_text("utf-8") == local_reports["samples"]
    assert json.loads((out / "run.json").read_text("utf-8"))["engine"].startswith("local Dask")


def test_dask_local_runs_from_a_running_event_loop(
    samples: Path, local_reports: dict[str, str]
) -> None:
    """As from a notebook, whose cells run inside an event loop: the workers (copies of this
    process where it forks) start loops of their own, and the report is the local one's."""

    async def scan_in_a_loop() -> dedup.Report:
        return dedup.scan([samples], engine="dask-local", jobs=2, show_progress=False)

    report = asyncio.run(scan_in_a_loop())
    assert report.engine == "local Dask cluster, 2 workers (2 threads)"
    assert report.to_json() == local_reports["samples"]


def test_clean_and_index_run_on_the_cluster_too(
    cluster: Cluster, samples: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    engines = {
        "local": ["-j", "1"],
        "dask": ["--scheduler", cluster.address],
        "scratch": ["--scheduler", cluster.address, "--scratch", str(scratch)],
    }
    for name, engine in engines.items():
        store = tmp_path / f"{name}.dedup"
        added = runner.invoke(
            cli, ["index", "add", str(store), str(samples / "site-qidian"), *engine, "-q"]
        )
        assert added.exit_code == 0, added.output
        out = str(tmp_path / f"{name}-query")
        query = runner.invoke(
            cli,
            ["index", "query", str(store), str(samples / "site-tw"), *engine, "-q", "-o", out],
        )
        assert query.exit_code == 0, query.output
        cleaned = runner.invoke(
            cli, ["clean", str(samples), "-o", str(tmp_path / f"{name}-clean"), *engine, "-q"]
        )
        assert cleaned.exit_code == 0, cleaned.output
    local_query = (tmp_path / "local-query" / "report.json").read_text("utf-8")
    assert json.loads(local_query)["matches"], "the query found nothing to compare"
    local_files = sorted(
        p.relative_to(tmp_path / "local-clean") for p in _files(tmp_path / "local-clean")
    )
    for name in ("dask", "scratch"):
        assert (tmp_path / f"{name}-query" / "report.json").read_text("utf-8") == local_query
        clean = tmp_path / f"{name}-clean"
        assert sorted(p.relative_to(clean) for p in _files(clean)) == local_files
        for relative in local_files:
            local_bytes = (tmp_path / "local-clean" / relative).read_bytes()
            assert (clean / relative).read_bytes() == local_bytes, relative
    assert list(scratch.iterdir()) == []


def _files(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()]


def test_an_unreachable_scheduler_is_named_before_any_work(samples: Path, tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # free once closed: nothing listens there
    address = f"tcp://127.0.0.1:{port}"
    out = tmp_path / "report"
    result = CliRunner().invoke(cli, ["scan", str(samples), "--scheduler", address, "-o", str(out)])
    assert result.exit_code == 1
    assert f"dedup: error: cannot reach the Dask scheduler at {address}" in result.stderr
    assert "Connection refused" in result.stderr
    assert not out.exists()


def test_a_scheduler_without_workers_is_an_error_saying_to_start_some(
    samples: Path, tmp_path: Path
) -> None:
    alone = _start_cluster(tmp_path / "cluster", workers=0)
    try:
        result = CliRunner().invoke(
            cli, ["scan", str(samples), "--scheduler", alone.address, "-o", str(tmp_path / "r")]
        )
    finally:
        _stop_cluster(alone)
    assert result.exit_code == 1
    assert f"no Dask workers joined the scheduler at {alone.address}" in result.stderr
    assert f"start some (dask worker {alone.address})" in result.stderr
    assert not (tmp_path / "r").exists()


def test_workers_running_another_dedup_are_refused(samples: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(
        Path(dedup.__file__).parent, other / "dedup", ignore=shutil.ignore_patterns("__pycache__")
    )
    with open(other / "dedup" / "version.py", "a", encoding="utf-8") as version:
        version.write("# a later change\n")
    mixed = _start_cluster(
        tmp_path / "cluster", workers=1, worker_environment={"PYTHONPATH": str(other)}
    )
    try:
        with mixed.client() as client:
            (worker,) = client.scheduler_info(n_workers=-1)["workers"]
            imported = client.run(lambda: __import__("dedup").__file__)[worker]
        result = CliRunner().invoke(
            cli, ["scan", str(samples), "--scheduler", mixed.address, "-o", str(tmp_path / "r")]
        )
    finally:
        _stop_cluster(mixed)
    assert imported.startswith(str(other))  # the worker does run the other copy
    assert result.exit_code == 1
    assert f"the Dask workers {worker} run another dedup than this one" in result.stderr
    assert not (tmp_path / "r").exists()


def test_the_dask_engine_needs_a_scheduler_to_be_named(samples: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["scan", str(samples), "--engine", "dask"])
    assert result.exit_code == 2
    assert "give its scheduler's address (--scheduler tcp://HOST:8786)" in result.stderr


def test_a_file_the_workers_cannot_see_is_named_with_the_worker(
    samples: Path, tmp_path: Path
) -> None:
    """A worker in a mount namespace of its own, where an empty filesystem covers the
    folder the dump is in: the driver sees the files, the worker does not."""
    hidden = tmp_path / "driver-only"
    shutil.copytree(samples / "site-qidian", hidden / "dump" / "site-qidian")
    cover = ["unshare", "--mount", "--propagation", "private", "sh", "-c"]
    test = subprocess.run(
        [*cover, f"mount -t tmpfs none {hidden} && test ! -e {hidden}/dump"], check=False
    )
    if test.returncode != 0 or shutil.which("unshare") is None:
        pytest.skip("this machine cannot give a process a mount namespace of its own (unshare)")
    prefix = [*cover, f'mount -t tmpfs none {hidden} && exec "$0" "$@"']
    hiding = _start_cluster(tmp_path / "cluster", workers=1, worker_prefix=prefix)
    try:
        out = tmp_path / "report"
        result = CliRunner().invoke(
            cli, ["scan", str(hidden / "dump"), "--scheduler", hiding.address, "-o", str(out)]
        )
        with hiding.client() as client:
            (worker,) = client.scheduler_info(n_workers=-1)["workers"]
    finally:
        _stop_cluster(hiding)
    assert result.exit_code == 1, result.output
    assert f"the Dask worker {worker} cannot see {hidden}/dump/site-qidian/" in result.stderr
    assert "dedup: error: " in result.stderr and "every worker mounts" in result.stderr
    assert not out.exists()


def test_a_killed_dask_local_scans_folder_is_removed_by_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dask-local's temporary folder (the scheduler's file, the workers' folders) is removed
    when the engine closes; one a killed scan left behind (its process gone) goes at the next
    start, and a running one's stays."""
    from dedup.config import ScanConfig
    from dedup.engine.dask_cluster import DaskEngine

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    stale = tmp_path / f"dedup-dask-{ended.pid}-abc"
    running = tmp_path / f"dedup-dask-{os.getpid()}-abc"
    for folder in (stale, running):
        (folder / "worker-1").mkdir(parents=True)
        (folder / "scheduler.json").write_text("{}")
    with DaskEngine(ScanConfig(engine="dask-local", jobs=1)) as engine:
        assert not stale.exists() and running.exists()
        ours = [f for f in tmp_path.iterdir() if f not in (stale, running)]
        assert [f.name.startswith(f"dedup-dask-{os.getpid()}-") for f in ours] == [True], ours
        # where its workers keep what they make, unless given a scratch folder
        assert engine.scratch is not None
        assert Path(engine.scratch.folder).parent == ours[0]
    assert sorted(tmp_path.iterdir()) == [running]


def test_an_interrupt_while_dask_local_loads_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C in the seconds this process loads what its workers need, before any starts:
    the folder made for them goes with the interrupt, not at the next start."""
    from dedup.config import ScanConfig
    from dedup.engine import dask_cluster

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(dask_cluster, "_ready_to_prepare", interrupted)
    monkeypatch.setattr(dask_cluster.lifetime, "can_fork", lambda: True)
    with pytest.raises(KeyboardInterrupt), dask_cluster.DaskEngine(ScanConfig(engine="dask-local")):
        pass
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("forked", [True, False])
def test_a_dask_local_worker_that_ends_before_it_joins_is_named_with_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: bool
) -> None:
    """A dask-local worker is waited for as long as it runs (a first run's compiles its loops
    before it joins); one that ends first stops the start with its status and its log, not
    after a timeout: a forked copy of this process (where the system forks) and a Python of
    its own (elsewhere) alike."""
    import distributed.cli.dask_worker

    from dedup.config import ScanConfig
    from dedup.engine import lifetime
    from dedup.engine.dask_cluster import DaskEngine

    if forked:
        if not lifetime.can_fork():
            pytest.skip("this system does not fork")

        def broken_worker() -> None:
            print("ModuleNotFoundError: no dedup here", file=sys.stderr, flush=True)
            sys.exit(3)

        monkeypatch.setattr(distributed.cli.dask_worker, "main", broken_worker)
    else:
        broken = tmp_path / "python"
        broken.write_text("#!/bin/sh\necho 'ModuleNotFoundError: no dedup here' >&2\nexit 3\n")
        broken.chmod(0o755)
        monkeypatch.setattr(sys, "executable", str(broken))
        monkeypatch.setattr(lifetime, "can_fork", lambda: False)
    expected = r"ended before it joined \(status 3\).*no dedup here"
    with pytest.raises(DedupError, match=expected), DaskEngine(ScanConfig(engine="dask-local")):
        pass


class _Terminal:
    """A pseudo-terminal 120 columns wide for a command's standard error, read as it is
    written: the command then draws its progress bars there (tqdm draws nothing on a terminal
    0 columns wide), which tell how far it has got."""

    def __init__(self) -> None:
        self.reading_end, self.writing_end = pty.openpty()
        fcntl.ioctl(self.writing_end, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
        self._chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)

    def start_reading(self) -> None:
        """Read what is written, once the command holds the writing end (closed here)."""
        os.close(self.writing_end)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.reading_end, 4096)
            except OSError:  # EIO: every process writing there has ended
                return
            if not chunk:
                return
            self._chunks.append(chunk)

    def text(self) -> str:
        return b"".join(self._chunks).decode("utf-8", "replace")

    def close(self) -> None:
        self._reader.join(timeout=10)
        os.close(self.reading_end)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL])
def test_a_stopped_dask_local_scan_leaves_no_worker_behind(
    mirror_dump: Path, tmp_path: Path, stop: signal.Signals
) -> None:
    out = tmp_path / "report"
    command = [sys.executable, "-m", "dedup", "scan", str(mirror_dump), "-o", str(out)]
    terminal = _Terminal()
    temporary = tmp_path / "tmp"  # where dask-local makes its folder, not the system's
    temporary.mkdir()
    scan = subprocess.Popen(
        [*command, "--engine", "dask-local", "-j", "2"],
        stdout=subprocess.DEVNULL,
        stderr=terminal.writing_end,
        start_new_session=True,
        env={**os.environ, "TMPDIR": str(temporary)},
    )
    terminal.start_reading()
    # Once both workers run and have started on the files of the main pass (its bar is
    # drawn), stop the scan: the stages after it leave time enough. The workers are the
    # scan's processes out of its process group, each in its own (forked copies of the scan,
    # so its command line is theirs): a Ctrl-C while a worker starts would kill it with a
    # traceback; the scan stops them.
    deadline = time.monotonic() + STARTUP_SECONDS
    workers: set[int] = set()
    while len(workers) < 2 or "read+fingerprint" not in terminal.text():
        assert scan.poll() is None and time.monotonic() < deadline, terminal.text()
        if len(workers) < 2:
            workers = {pid for pid in descendants(scan.pid) if _group_of(pid) == pid}
        time.sleep(0.02)
    assert scan.poll() is None, "the scan ended before it was stopped"
    if stop == signal.SIGINT:
        os.killpg(scan.pid, stop)  # Ctrl-C reaches the whole process group
    else:
        scan.send_signal(stop)
    code = scan.wait(timeout=60)
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in workers if alive(pid)] == []
    terminal.close()
    assert not out.exists()
    if stop == signal.SIGINT:
        errors = terminal.text()
        assert code == 130, errors
        assert "dedup: interrupted" in errors and "Traceback" not in errors, errors
        assert [p for p in tmp_path.iterdir() if ".partial-" in p.name] == []
    # A Ctrl-C removes the cluster's folder (its workers' files, the scratch folder); a
    # killed scan's is left to the next scan started on this machine.
    left = [p.name for p in temporary.iterdir() if p.name.startswith("dedup-dask-")]
    assert len(left) == (0 if stop == signal.SIGINT else 1), left


def _group_of(pid: int) -> int | None:
    """The process group of ``pid``, or None once it has ended."""
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


@pytest.mark.parametrize("in_scratch", [False, True])
def test_a_file_gone_after_the_learn_pass_is_skipped_its_chapters_taken_from_a_worker(
    cluster: Cluster,
    slogan_sites: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    in_scratch: bool,
) -> None:
    """A file deleted between the learn pass and the main pass: neither the worker nor this
    process sees it, so its main-pass call runs here, given the chapters a worker kept for it
    (a future, whose result it takes, or a part in the scratch folder, which it opens), and
    its batch's parts are kept from here: the file is listed as skipped, the rest scanned."""
    import dedup
    from dedup.engine import gather
    from dedup.read.containers import FILE_GONE

    dump = tmp_path / "dump"
    shutil.copytree(slogan_sites, dump)
    gone = dump / "a" / "2.txt"
    learned_lines = gather.learned_lines

    def then_deleted(*arguments: Any, **options: Any) -> Any:
        found = learned_lines(*arguments, **options)
        gone.unlink()
        return found

    monkeypatch.setattr(gather, "learned_lines", then_deleted)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    report = dedup.scan(
        [str(dump)],
        scheduler=cluster.address,
        scratch=str(scratch) if in_scratch else None,
        show_progress=False,
    )
    (skipped,) = report.skipped
    assert Path(skipped.path) == gone and skipped.reason == FILE_GONE
    assert report.summary.files == 2
