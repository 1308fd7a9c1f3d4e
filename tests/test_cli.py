"""The command line: happy path and every error path, with exit codes."""

from __future__ import annotations

import csv
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dedup import __version__
from dedup.cli import cli, main
from dedup.report import load_report
from tests.reports import report_json, with_member_texts
from tests.test_scan import EXPECTED_FILE_PAIRS


def test_scan_writes_report_and_prints_summary(samples: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = CliRunner().invoke(cli, ["scan", str(samples), "--out", str(out), "--jobs", "1"])
    assert result.exit_code == 0, result.output
    assert "site-qidian" in result.stdout
    assert "README.md: not a supported format" in result.stderr
    report = report_json(out)
    linked = {
        pair
        for cluster in with_member_texts(report, out / "report.json")
        for pair in itertools.combinations(
            sorted({m["path"].split("corpus_samples/")[1] for m in cluster["members"]}), 2
        )
    }
    assert linked == EXPECTED_FILE_PAIRS
    assert f"and {len(report['clusters'])} clusters of near-duplicate passages" in result.stdout
    run = json.loads((out / "run.json").read_text("utf-8"))
    assert run["jobs"] == 1 and run["seconds"]["total"] > 0


def test_paths_from_stdin(samples: Path, tmp_path: Path) -> None:
    paths = "\n".join(str(p) for p in sorted((samples / "site-qidian").iterdir())) + "\n"
    result = CliRunner().invoke(
        cli, ["scan", "-", "--out", str(tmp_path), "-q", "-j", "1"], input=paths
    )
    assert result.exit_code == 0, result.output
    report = report_json(tmp_path)
    assert report["summary"]["files"] == 3


def test_missing_path_exits_1_naming_it(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    missing = tmp_path / "nope"
    sys.argv = ["dedup", "scan", str(missing), "--out", str(tmp_path / "o")]
    try:
        main()
    except SystemExit as exit:
        assert exit.code == 1
    else:
        raise AssertionError("expected exit 1")
    assert f"dedup: error: {missing}: no such file or folder" in capsys.readouterr().err


def test_bad_option_is_a_usage_error(samples: Path) -> None:
    result = CliRunner().invoke(cli, ["scan", str(samples), "--threshold", "1.5"])
    assert result.exit_code == 2
    assert "--threshold" in result.stderr


def test_strict_exits_3_after_writing_the_report(samples: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["scan", str(samples), "--out", str(tmp_path), "-q", "--strict"]
    )
    assert result.exit_code == 3
    assert (tmp_path / "report.json").exists()


def test_the_command_ends_with_its_status_and_all_it_printed(samples: Path, tmp_path: Path) -> None:
    """The console script ends at once when a command is done (no teardown of the scan's
    records): its status is the command's, and what it printed to a pipe is all there."""
    command = [sys.executable, "-m", "dedup", "scan", str(samples), "--jobs", "2"]
    done = subprocess.run([*command, "-o", str(tmp_path / "a")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("dedup ") and "read 9 files" in lines[0]
    assert lines[-1].startswith("report written to ") and "index.html" in lines[-1]
    strict = subprocess.run(
        [*command, "-o", str(tmp_path / "b"), "--strict"], capture_output=True, text=True
    )
    assert strict.returncode == 3, strict.stderr

    def timeless(output: str) -> list[str]:  # the seconds differ from run to run
        return [line for line in output.splitlines() if not re.search(r"\d\.\d\ds\b", line)]

    assert timeless(strict.stdout) == timeless(
        done.stdout.replace(f"{tmp_path}/a/", f"{tmp_path}/b/")
    )
    assert report_json(tmp_path / "b")["clusters"]


@pytest.mark.parametrize(
    ("code", "status", "says"),
    [("None", 0, ""), ("3", 3, ""), ("'no such thing'", 1, "no such thing\n")],
)
def test_a_command_that_exits_ends_as_python_would(code: str, status: int, says: str) -> None:
    """A command's sys.exit (scan --strict's, say) ends the console script as it would end
    Python: no code is success, a number is the status, a message goes to stderr."""
    script = f"import sys\nimport dedup.cli\ndedup.cli.cli.main = lambda **_: sys.exit({code})\n"
    done = subprocess.run(
        [sys.executable, "-c", script + "dedup.cli.main()\n"], capture_output=True, text=True
    )
    assert (done.returncode, done.stderr) == (status, says)


def test_version_and_python_dash_m() -> None:
    assert CliRunner().invoke(cli, ["--version"]).stdout.strip() == f"dedup, version {__version__}"
    completed = subprocess.run(
        [sys.executable, "-m", "dedup", "scan", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--threshold" in completed.stdout and "--ngram" in completed.stdout


def test_normalize_prints_chapters_and_explains(samples: Path) -> None:
    path = samples / "site-tw" / "000.txt"
    result = CliRunner().invoke(cli, ["normalize", str(path), "--explain"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("原来大山岩最后下令命日军在失败之后")
    assert "boilerplate" in result.stderr and "「www.biqugex.cc」" in result.stderr
    assert "「後→后」" in result.stderr


def test_normalize_reads_stdin_in_any_encoding(samples: Path) -> None:
    data = (samples / "site-gbk" / "002.txt").read_bytes()
    result = CliRunner().invoke(cli, ["normalize", "-", "--script", "traditional"], input=data)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("等第三軍所屬各個部隊")


def test_scan_summary_reports_normalization_per_source(samples: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["scan", str(samples), "-o", str(tmp_path), "-j", "1"])
    assert "site-tw: 7 ad/URL spans removed" in result.stdout
    assert "100% of passages converted from Traditional" in result.stdout


def test_each_command_offers_the_options_that_apply_to_it() -> None:
    runner = CliRunner()
    scan_help = runner.invoke(cli, ["scan", "--help"]).stdout
    for option in ("--script", "--skip-step", "--ngram", "--threshold", "--keep", "--format"):
        assert option in scan_help, option
    explain_help = runner.invoke(cli, ["explain", "--help"]).stdout
    assert "--script" in explain_help and "--ngram" in explain_help
    assert "--keep" not in explain_help and "--threshold" not in explain_help
    normalize_help = runner.invoke(cli, ["normalize", "--help"]).stdout
    assert "--skip-step" in normalize_help and "--ngram" not in normalize_help


def test_a_dump_of_nothing_but_bad_inputs_is_reported_not_a_crash(tmp_path: Path) -> None:
    dump = tmp_path / "dump" / "site"
    dump.mkdir(parents=True)
    (dump / "empty.txt").write_bytes(b"")
    (dump / "junk.txt").write_bytes(b"\x00\x01\xff\xfe\x00garbage\x00" * 50)
    (dump / "broken.jsonl").write_text('{"text": "第一章', "utf-8")
    out = tmp_path / "report"
    for jobs in ("1", "2"):
        result = CliRunner().invoke(cli, ["scan", str(dump.parent), "--out", str(out), "-j", jobs])
        assert result.exit_code == 0, result.output
        report = report_json(out)
        assert report["clusters"] == [] and report["summary"]["passages"] == 0
        skipped = {Path(entry["path"]).name for entry in report["skipped"]}
        assert {"empty.txt", "junk.txt", "broken.jsonl"} <= skipped


def _run_main(arguments: list[str], monkeypatch: Any) -> tuple[int, str]:
    """``dedup ARGUMENTS`` through main(), as the console script runs it: (status, stderr)."""
    import io

    import dedup.cli

    def ended(status: int) -> None:  # as the console script ends, but not this process
        raise SystemExit(status)

    errors = io.StringIO()
    monkeypatch.setattr(sys, "argv", ["dedup", *arguments])
    monkeypatch.setattr(sys, "stderr", errors)
    monkeypatch.setattr(dedup.cli, "_exit_at_once", ended)
    try:
        main()
    except SystemExit as stop:
        return int(stop.code or 0), errors.getvalue()
    raise AssertionError("main() returned: the console script ends with a status")


@pytest.mark.parametrize(
    ("option", "says"),
    [
        (["--encoding", "nosuch"], "unknown encoding 'nosuch'"),
        (["--keep", "bogus"], "keep must be longest, first or source:NAME"),
    ],
)
def test_bad_option_values_are_usage_errors_before_any_work(
    samples: Path, tmp_path: Path, monkeypatch: Any, option: list[str], says: str
) -> None:
    import dedup.pipeline

    def no_scan(*arguments: Any, **options: Any) -> None:
        raise AssertionError("scanned with a bad option")

    monkeypatch.setattr(dedup.pipeline, "scan_to", no_scan)
    status, errors = _run_main(
        ["scan", str(samples), "-o", str(tmp_path / "r"), *option], monkeypatch
    )
    assert status == 2
    assert says in errors and errors.startswith("dedup: error: ")
    assert not (tmp_path / "r").exists()


def test_keep_naming_a_source_the_dump_lacks_is_a_warning_naming_those_it_has(
    samples: Path, tmp_path: Path, caplog: Any
) -> None:
    result = CliRunner().invoke(
        cli,
        ["scan", str(samples), "-o", str(tmp_path / "r"), "-q", "--keep", "source:site-tw,nosuch"],
    )
    assert result.exit_code == 0
    (warning,) = [r.getMessage() for r in caplog.records if "--keep" in r.getMessage()]
    assert "no source named nosuch" in warning
    assert "site-classic, site-gbk, site-mirror, site-qidian, site-tw" in warning


def test_the_python_api_takes_one_path_and_names_a_misspelt_option(samples: Path) -> None:
    import dedup

    report = dedup.scan(samples, jobs=1)  # a Path, or a string, is one path
    assert report == dedup.scan(str(samples), jobs=1) == dedup.scan([str(samples)], jobs=1)
    assert len(report.clusters) > 50
    with pytest.raises(dedup.DedupError, match="did you mean 'threshold'"):
        dedup.scan(samples, treshold=0.5)


def test_summary_counts_read_as_english(
    samples: Path, tmp_path: Path, seed_simplified: str
) -> None:
    one = tmp_path / "one"
    one.mkdir()
    (one / "ch.txt").write_text(seed_simplified, "utf-8")
    (one / "notes.md").write_text("x", "utf-8")
    result = CliRunner().invoke(cli, ["scan", str(one), "-o", str(tmp_path / "r1"), "-j", "1"])
    assert "read 1 file from 1 source (1 skipped)" in result.stdout
    assert "skipped 1 input\n" in result.stdout
    assert "on local, 1 process;" in result.stdout
    # Exact copies are not LSH candidates: the pairs are said to be of both kinds.
    copies = tmp_path / "copies"
    for site in ("a", "b", "c"):
        (copies / site).mkdir(parents=True)
        (copies / site / "ch.txt").write_text(seed_simplified, "utf-8")
    result = CliRunner().invoke(cli, ["scan", str(copies), "-o", str(tmp_path / "r2"), "-j", "1"])
    report = report_json(tmp_path / "r2")
    summary = report["summary"]
    assert summary["exact_copy_pairs"] == summary["verified_pairs"] > 0
    assert summary["candidate_pairs"] == 0
    assert (
        f"{summary['verified_pairs']} verified pairs: {summary['verified_pairs']} exact copies, "
        "0 of 0 candidates" in result.stdout
    )


def test_records_naming_their_source_are_counted_under_it(
    tmp_path: Path, seed_simplified: str, seed_with_ads: str
) -> None:
    dump = tmp_path / "dump" / "crawl"
    dump.mkdir(parents=True)
    records = [
        {"site": "site-a", "title": "第一章", "text": seed_simplified},
        {"site": "site-b", "title": "第1章", "text": seed_simplified},
        {"site": "site-b", "title": "第2章", "text": seed_with_ads},
    ]
    (dump / "all.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    out = tmp_path / "r"
    result = CliRunner().invoke(
        cli,
        [
            "scan",
            str(dump.parent),
            "-o",
            str(out),
            "-j",
            "1",
            "--source-field",
            "site",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    sources = json.loads(result.stdout)["sources"]
    assert set(sources) == {"site-a", "site-b"}
    assert sources["site-a"]["files"] == sources["site-b"]["files"] == 1
    assert sources["site-a"]["passages"] == sources["site-a"]["in_clusters"] > 0
    assert sources["site-b"]["passages"] > sources["site-b"]["in_clusters"] > 0
    report = report_json(out)
    (entry,) = report["inputs"]
    assert sum(entry["passages_by_source"].values()) == entry["passages"]
    result = CliRunner().invoke(
        cli, ["scan", str(dump.parent), "-o", str(out), "-j", "1", "--source-field", "site"]
    )
    table = result.stdout.split("source ", 1)[1].split("\n\n", 1)[0]
    assert "crawl" not in table and "site-a" in table and "site-b" in table


def test_explain_reaches_zip_entries_as_the_report_names_them(
    samples: Path, tmp_path: Path
) -> None:
    import zipfile

    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for site in ("site-classic", "site-qidian", "site-tw", "site-mirror"):
            for file in sorted((samples / site).iterdir()):
                out.write(file, f"{site}/{file.name}")
    report_dir = tmp_path / "r"
    assert (
        CliRunner().invoke(cli, ["scan", str(archive), "-o", str(report_dir), "-q"]).exit_code == 0
    )
    report = report_json(report_dir)
    members = [m for c in report["clusters"] for m in c["members"]]
    zipped = next(m for m in members if "!/site-qidian/000.txt" in m["id"])
    record = next(m for m in members if "dump.jsonl#" in m["id"])
    for member in (zipped, record):
        result = CliRunner().invoke(cli, ["explain", member["id"], member["id"]])
        assert result.exit_code == 0, result.output
        assert f"({member['end'] - member['start']:,} characters)" in result.stdout
    whole = CliRunner().invoke(cli, ["explain", f"{archive}#0", zipped["id"]])
    assert whole.exit_code == 1 and f"name one as {archive}!/ENTRY" in whole.stderr
    folder = CliRunner().invoke(
        cli, ["explain", str(samples / "site-qidian/000.txt"), str(samples)]
    )
    assert folder.exit_code == 1 and "is a folder; name one file in it" in folder.stderr


@pytest.mark.parametrize(
    ("content", "says"),
    [(b"", "empty file"), (b"\x00\x01\x02binary\x00" * 20, "not text")],
)
def test_normalize_of_a_file_it_cannot_read_exits_1_with_the_reason(
    tmp_path: Path, content: bytes, says: str
) -> None:
    path = tmp_path / "ch.txt"
    path.write_bytes(content)
    result = CliRunner().invoke(cli, ["normalize", str(path)])
    assert result.exit_code == 1 and says in result.stderr and result.stdout == ""


def test_normalize_explain_into_a_closed_pipe_keeps_the_explanation(samples: Path) -> None:
    book = samples / "site-qidian/hongloumeng.txt"
    command = f"{sys.executable} -m dedup normalize --explain {book} | head -1"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 1
    assert "chapters" in done.stderr and "punctuation" in done.stderr
    assert "Traceback" not in done.stderr and "Broken pipe" not in done.stderr


def test_version_and_help_load_none_of_the_library() -> None:
    """`dedup --version` and `--help` answer without importing numpy, numba or OpenCC (the
    library loads with the command that needs it)."""
    script = (
        "import os, sys\n"
        "def ended(status):\n    raise SystemExit(status)\n"
        "os._exit = ended  # the console script ends at once: here, so that we look after\n"
        "from dedup.__main__ import main\n"
        "sys.argv = ['dedup', sys.argv[1]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('numpy', 'numba', 'opencc', 'datasketch') if m in sys.modules))"
    )
    for flag in ("--version", "--help"):
        done = subprocess.run(
            [sys.executable, "-c", script, flag], capture_output=True, text=True, check=True
        )
        assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout


def test_scan_leads_with_documents_and_writes_matches_csv(samples: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    scan = ["scan", str(samples), "--out", str(out), "-j", "1", "--format", "text,csv"]
    result = CliRunner().invoke(cli, scan)
    assert result.exit_code == 0, result.output
    report = report_json(out)
    summary = report["summary"]
    assert (
        f"found {summary['matched_documents']} documents of {summary['documents']} sharing text "
        f"({summary['document_matches']} matches, {summary['document_groups']} groups of copies)"
    ) in result.stdout
    text = result.stdout
    assert text.index("documents shared between sources") < text.index("largest clusters")
    assert "site-qidian ↔ site-tw: 4 copies, 0 partial" in text
    with open(out / "matches.csv", encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(report["matches"]) == 7
    documents = {d["id"]: d for d in report["documents"]}
    texts = {d.id: d.text for d in load_report(out / "report.json").documents}
    for row, match in zip(rows, report["matches"], strict=True):
        document = documents[match["a"]]
        assert row["a_path"] == document["path"] and row["b_path"] == documents[match["b"]]["path"]
        assert float(row["coverage_a"]) == match["coverage_a"]
        span = match["spans"][0]
        shared = texts[match["a"]][
            span["a_start"] - document["start"] : span["a_end"] - document["start"]
        ]
        assert row["first_span_a"] == shared[:80]
    assert "text" not in rows[0]  # no full texts in matches.csv


def test_explain_prints_the_aligned_spans_and_coverage(samples: Path) -> None:
    same = CliRunner().invoke(
        cli, ["explain", str(samples / "site-qidian/000.txt"), str(samples / "site-tw/000.txt")]
    )
    assert same.exit_code == 0, same.output
    assert "aligned: 1 shared span, covering 100% of A and 100% of B" in same.stdout
    assert re.search(r"1\. A 0-\d+  ↔  B \d+-\d+  \([\d,]+ identical characters\)", same.stdout)
    different = CliRunner().invoke(
        cli, ["explain", str(samples / "site-qidian/000.txt"), str(samples / "site-qidian/001.txt")]
    )
    assert "aligned: 0 shared spans, covering 0% of A and 0% of B" in different.stdout
