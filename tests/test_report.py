"""The outputs a person or a script reads: HTML, CSV, JSONL, explain, and rebuilding a report."""

from __future__ import annotations

import csv
import html as html_lib
import io
import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import dedup
from dedup import ScanConfig
from dedup.cli import cli
from dedup.explain import explain
from dedup.fingerprint import shingles
from dedup.models import Cluster, Passage
from dedup.normalize import normalize
from dedup.report import load_report
from dedup.report.html import render_html
from dedup.report.rebuild import rebuild
from tests.reports import by_ids, folder_files, report_json, with_member_texts

GOLDEN = Path(__file__).parent / "data" / "golden"
PAIR = ["corpus_samples/site-qidian/000.txt", "corpus_samples/site-tw/000.txt"]


@pytest.fixture
def in_repo(samples: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from the repository root, so report paths are the relative ones users see."""
    monkeypatch.chdir(samples.parent)
    return samples.parent


@pytest.mark.parametrize("name", ["clusters.csv", "pairs.csv", "clusters.jsonl"])
def test_tables_match_the_golden_files(in_repo: Path, tmp_path: Path, name: str) -> None:
    formats = ["--format", "csv,pairs,jsonl"]
    result = CliRunner().invoke(
        cli, ["scan", *PAIR, "-o", str(tmp_path), "-q", "-j", "1", *formats]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / name).read_bytes() == (GOLDEN / name).read_bytes()


def test_csv_opens_in_excel_and_agrees_with_the_report(in_repo: Path, tmp_path: Path) -> None:
    formats = ["--format", "csv,pairs,jsonl"]
    scan = ["scan", "corpus_samples", "-o", str(tmp_path), "-q", "-j", "1", *formats]
    assert CliRunner().invoke(cli, scan).exit_code == 0
    raw = (tmp_path / "clusters.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # the BOM Excel needs to read UTF-8
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
    report = report_json(tmp_path)
    clusters = with_member_texts(report, tmp_path / "report.json")
    members = [m for c in clusters for m in c["members"]]
    assert len(rows) == len(members)
    assert "text" not in rows[0]  # each member's text is in report.json once, not here too
    assert [row["excerpt"] for row in rows] == [m["text"][:80] for m in members]
    assert [int(row["characters"]) for row in rows] == [len(m["text"]) for m in members]
    assert max(int(row["characters"]) for row in rows) > 80
    pairs = list(csv.DictReader(io.StringIO((tmp_path / "pairs.csv").read_text("utf-8-sig"))))
    assert pairs == [
        {"cluster": c["id"], **{name: str(value) for name, value in pair.items()}}
        for c in clusters
        for pair in c["pairs"]
    ]
    lines = (tmp_path / "clusters.jsonl").read_text("utf-8").splitlines()
    texts = {m["id"]: m["text"] for m in members}
    # each cluster as report.json has it, its members with an excerpt, its pairs left to
    # report.json (millions on a large dump)
    excerpted = [
        {
            **{name: value for name, value in c.items() if name != "pairs"},
            "members": [{**m, "excerpt": texts[m["id"]][:80]} for m in c["members"]],
        }
        for c in report["clusters"]
    ]
    assert any(c["pairs"] for c in report["clusters"])
    assert [json.loads(line) for line in lines] == excerpted


TABLES = ("--format", "csv,jsonl")


def test_full_text_puts_each_members_text_in_the_tables(in_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "full"
    result = CliRunner().invoke(
        cli,
        ["scan", "corpus_samples", "-o", str(out), "-q", "-j", "1", "--full-text", *TABLES],
    )
    assert result.exit_code == 0, result.output
    report = report_json(out)
    members = [m for c in with_member_texts(report, out / "report.json") for m in c["members"]]
    with open(out / "clusters.csv", encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["text"] for row in rows] == [m["text"] for m in members]
    lines = (out / "clusters.jsonl").read_text("utf-8").splitlines()
    assert [m["text"] for line in lines for m in json.loads(line)["members"]] == [
        m["text"] for m in members
    ]
    # and dedup report keeps them, rebuilt from report.json alone
    rebuilt = CliRunner().invoke(cli, ["report", str(out), "-q", "--full-text"])
    assert rebuilt.exit_code == 0, rebuilt.output
    again = (out / "clusters.jsonl").read_text("utf-8").splitlines()
    assert again == lines


def test_format_json_prints_a_machine_summary(in_repo: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["scan", "corpus_samples", "-o", str(tmp_path), "-j", "1", "--format", "json"]
    )
    summary = json.loads(result.stdout)
    report = report_json(tmp_path)
    assert summary["summary"]["clusters"] == len(report["clusters"]) > 50
    in_tw = sum(m["source"] == "site-tw" for c in report["clusters"] for m in c["members"])
    assert summary["sources"]["site-tw"]["in_clusters"] == in_tw > 30
    assert not (tmp_path / "index.html").exists()


def test_identical_characters_of_the_same_chapter(samples: Path) -> None:
    """site-tw/000.txt is site-qidian/000.txt converted to Traditional, with ads: every
    normalized character of the original is shared."""
    result = explain(
        str(samples / PAIR[0].split("/", 1)[1]), str(samples / PAIR[1].split("/", 1)[1])
    )
    assert result.identical_chars == len(normalize(result.a.text).text) == 2970
    assert result.jaccard == result.containment == 1.0


def test_explain_two_editions_of_hongloumeng(samples: Path) -> None:
    """Chapters 1-3 of 红楼梦 from two independent sources (Simplified UTF-8, Traditional Big5)."""
    result = explain(
        str(samples / "site-qidian/hongloumeng.txt"), str(samples / "site-tw/hongloumeng-big5.txt")
    )
    a, b = normalize(result.a.text).text, normalize(result.b.text).text
    n = ScanConfig().ngram
    set_a, set_b = set(shingles(a, n)), set(shingles(b, n))
    assert result.jaccard == pytest.approx(len(set_a & set_b) / len(set_a | set_b))
    # Every character counted as identical lies in a 5-gram both texts have, and most do.
    in_shared = [
        any(a[j : j + n] in set_b for j in range(max(0, i - n + 1), i + 1)) for i in range(len(a))
    ]
    covered = sum(in_shared)
    assert 0.85 * len(a) < result.identical_chars <= covered
    # The marked spans are the alignment's: span n of A and span n of B are the same stretch,
    # most of it identical, and together they cover nearly all of both editions.
    assert len(result.spans_a) == len(result.spans_b) == len(result.aligned_identical) >= 1
    for span_a, span_b, identical in zip(
        result.spans_a, result.spans_b, result.aligned_identical, strict=True
    ):
        one = normalize(result.a.text[span_a.start : span_a.end]).text
        two = normalize(result.b.text[span_b.start : span_b.end]).text
        assert 0.8 * max(len(one), len(two)) <= identical <= min(len(one), len(two))
    assert result.coverage_a > 0.95 and result.coverage_b > 0.95


def test_explain_command_with_record_and_member_ids(in_repo: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        cli,
        ["explain", "corpus_samples/site-gbk/002.txt", "corpus_samples/site-mirror/dump.jsonl#0"],
    )
    assert result.exit_code == 0, result.output
    assert "identical characters" in result.stdout and "⟦" in result.stdout
    member = runner.invoke(
        cli,
        [
            "explain",
            "corpus_samples/site-qidian/000.txt:0-395",
            "corpus_samples/site-tw/000.txt:2-395",
        ],
    )
    assert "Jaccard 1.000" in member.stdout
    missing = runner.invoke(cli, ["explain", "corpus_samples/site-mirror/dump.jsonl", "nope.txt"])
    assert missing.exit_code != 0


def _structure(report: dedup.Report) -> list[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]]:
    return [
        (tuple(m.id for m in c.members), tuple((p.a, p.b) for p in c.pairs))
        for c in report.clusters
    ]


def test_rebuild_at_a_stricter_threshold_equals_a_fresh_scan(samples: Path) -> None:
    loose = dedup.scan([str(samples)], jobs=1)
    strict = dedup.scan([str(samples)], jobs=1, threshold=0.8, containment=0.9)
    rebuilt = rebuild(loose, threshold=0.8, containment=0.9)
    assert _structure(rebuilt) == _structure(strict)
    assert len(strict.clusters) < len(loose.clusters)
    assert rebuilt.options["threshold"] == 0.8


def test_report_json_holds_texts_with_full_text_else_reads_them_from_the_inputs(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = tmp_path / "dump"
    shutil.copytree(samples, dump)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for out, extra in (("lean", []), ("full", ["--full-text"])):
        scanned = runner.invoke(cli, ["scan", "dump", "-o", out, "-q", "-j", "1", *extra])
        assert scanned.exit_code == 0, scanned.output
    lean = report_json(tmp_path / "lean")
    full = report_json(tmp_path / "full")
    assert lean["report_format"] == 5 and lean["documents"]
    assert all("text" not in d for d in lean["documents"])
    pairs = zip(lean["documents"], full["documents"], strict=True)
    assert [{**d, "text": f["text"]} for d, f in pairs] == full["documents"]
    assert {k: v for k, v in lean.items() if k != "documents"} == {
        k: v for k, v in full.items() if k != "documents"
    }
    # read back from the inputs (relative paths: from where the scan ran, run.json says)
    assert json.loads((tmp_path / "lean/run.json").read_text("utf-8"))["directory"] == str(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    loaded = load_report(tmp_path / "lean/report.json")
    assert loaded == load_report(tmp_path / "full/report.json")
    assert not loaded.texts_held and load_report(tmp_path / "full/report.json").texts_held
    rebuilt = runner.invoke(cli, ["report", str(tmp_path / "lean"), "-o", "again", "-q"])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert (elsewhere / "again/report.json").read_bytes() == (
        tmp_path / "lean/report.json"
    ).read_bytes()
    assert folder_files(elsewhere / "again") == {
        **folder_files(tmp_path / "lean"),
        "run.json": (elsewhere / "again/run.json").read_bytes(),
    }
    # a report that holds its texts keeps them when rebuilt
    kept = runner.invoke(cli, ["report", str(tmp_path / "full"), "-o", "kept", "-q"])
    assert kept.exit_code == 0, kept.output
    assert (elsewhere / "kept/report.json").read_bytes() == (
        tmp_path / "full/report.json"
    ).read_bytes()
    # an input changed or gone since: named, with what to do; a report with its texts is read
    holder = full["documents"][0]["path"]
    changed = tmp_path / holder
    original = changed.read_bytes()
    changed.write_bytes(b"\n" + original)
    refused = runner.invoke(cli, ["report", str(tmp_path / "lean"), "-o", "x", "-q"])
    assert refused.exit_code == 1 and not (elsewhere / "x").exists()
    assert f"{holder}: changed since it was scanned" in refused.stderr
    assert "--full-text" in refused.stderr
    assert load_report(tmp_path / "full/report.json") == loaded
    changed.unlink()
    with pytest.raises(dedup.DedupError, match=f"{re.escape(holder)}: not found here or in "):
        load_report(tmp_path / "lean/report.json")
    changed.write_bytes(original)
    assert load_report(tmp_path / "lean/report.json") == loaded
    # format 4 (documents named by id) and 3 (every document with its text, no SHA-256) are
    # still read
    older = report_json(tmp_path / "lean")
    older["report_format"] = 4
    (tmp_path / "lean/format-4.json").write_text(json.dumps(older, ensure_ascii=False), "utf-8")
    assert load_report(tmp_path / "lean/format-4.json") == loaded
    older = report_json(tmp_path / "full")
    older["report_format"] = 3
    for document in older["documents"]:
        del document["text_sha256"]
    (tmp_path / "older.json").write_text(json.dumps(older, ensure_ascii=False), "utf-8")
    assert load_report(tmp_path / "older.json") == loaded


def test_the_report_formats_jq_commands_give_each_members_text_and_pairs(
    in_repo: Path, tmp_path: Path
) -> None:
    """docs/report-format.md's jq commands, run on a report with its texts: each member's
    text cut from its document's, and the pairs named by their members' ids."""
    if shutil.which("jq") is None:  # .ci/run installs it
        pytest.skip("jq is not installed")
    scanned = CliRunner().invoke(
        cli, ["scan", "corpus_samples", "-o", str(tmp_path), "-q", "-j", "1", "--full-text"]
    )
    assert scanned.exit_code == 0, scanned.output
    doc = (Path(__file__).parent.parent / "docs/report-format.md").read_text("utf-8")
    commands = re.findall(r"```\n(jq .*?) report\.json\n```", doc, re.DOTALL)
    assert len(commands) == 2, commands

    def run(command: str) -> list[Any]:
        program = command.removeprefix("jq ").strip().strip("'")
        done = subprocess.run(
            ["jq", "-c", program, str(tmp_path / "report.json")],
            capture_output=True,
            text=True,
            check=True,
        )
        return [json.loads(line) for line in done.stdout.splitlines()]

    report = load_report(tmp_path / "report.json")
    texts, pairs = run(commands[0]), run(commands[1])
    assert texts == [m.text for c in report.clusters for m in c.members]
    assert len(texts) > 100 and all(texts)
    assert pairs == [
        {"a": p.a, "b": p.b, "jaccard": round(p.jaccard, 4), "containment": round(p.containment, 4)}
        for c in report.clusters
        for p in c.pairs
    ]


def test_report_command_writes_again_the_files_the_folder_held(
    in_repo: Path, tmp_path: Path
) -> None:
    """Without --format, dedup report writes the files it finds (the tables are asked for at
    the scan, so a rebuild keeps them); with it, what it is told."""
    runner = CliRunner()
    out = tmp_path / "out"
    scan = ["scan", "corpus_samples", "-o", str(out), "-q", "-j", "1", "--format", "csv,pairs"]
    assert runner.invoke(cli, scan).exit_code == 0
    held = set(folder_files(out))
    assert {"matches.csv", "clusters.csv", "pairs.csv"} <= held and "index.html" not in held
    rows = len((out / "pairs.csv").read_text("utf-8-sig").splitlines())
    rebuilt = runner.invoke(cli, ["report", str(out), "--threshold", "0.6"])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "clusters" in rebuilt.stdout  # the summary, as a scan prints it
    assert set(folder_files(out)) == held
    assert len((out / "pairs.csv").read_text("utf-8-sig").splitlines()) < rows
    told = runner.invoke(cli, ["report", str(out), "-q", "--format", "html,jsonl"])
    assert told.exit_code == 0, told.output
    assert {"report.json", "run.json", "index.html", "clusters.jsonl"} <= set(folder_files(out))
    assert not {"matches.csv", "clusters.csv", "pairs.csv"} & set(folder_files(out))


def test_report_command_rewrites_outputs(in_repo: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    runner.invoke(cli, ["scan", "corpus_samples", "-o", str(tmp_path), "-q", "-j", "1"])
    result = runner.invoke(
        cli, ["report", str(tmp_path), "--threshold", "0.95", "--containment", "0.99"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text("utf-8"))
    assert report["options"]["threshold"] == 0.95
    assert all(
        p["jaccard"] >= 0.95 or p["containment"] >= 0.99
        for c in with_member_texts(by_ids(report), tmp_path / "report.json")
        for p in c["pairs"]
    )
    lower = runner.invoke(cli, ["report", str(tmp_path), "--threshold", "0.3"])
    assert lower.exit_code == 2 and "scan again" in lower.stderr
    # every member's document is kept, and members read back with their text
    rebuilt = load_report(tmp_path / "report.json")
    for cluster in rebuilt.clusters:
        for member in cluster.members:
            assert len(member.text) == member.end - member.start > 0
    # read a line at a time as written, or whole when another tool laid it out otherwise
    indented = tmp_path / "indented" / "report.json"
    indented.parent.mkdir()
    indented.write_text(json.dumps(report, ensure_ascii=False, indent=1), "utf-8")
    assert load_report(indented) == rebuilt
    assert rebuilt.to_json() == (tmp_path / "report.json").read_text("utf-8")
    # a report.json of another format is refused with what to do, not misread
    report["report_format"] = 2  # as the version before wrote it
    (tmp_path / "report.json").write_text(json.dumps(report), "utf-8")
    older = runner.invoke(cli, ["report", str(tmp_path)])
    assert older.exit_code == 1
    assert "report format 2" in older.stderr and "scan again" in older.stderr


HOSTILE = (
    "　　他推开门，只见桌上放着一张字条，上面写着：<script>document.body.setAttribute('data-pwned','1')"
    "</script><img src=x onerror=\"document.body.setAttribute('data-pwned','2')\">"
    "<a href=\"javascript:document.body.setAttribute('data-pwned','3')\">点此</a>。"
    "他看了许久，终于明白这是师父留给他的最后一句话，便将字条收进怀里，转身走进了风雪之中。\n"
) * 4


def _hostile_dump(tmp_path: Path) -> Path:
    for site in ("site-a", "site-b"):
        (tmp_path / "dump" / site).mkdir(parents=True)
        (tmp_path / "dump" / site / "ch1.txt").write_text(HOSTILE, "utf-8")
    return tmp_path / "dump"


def test_html_escapes_everything_from_the_data(tmp_path: Path) -> None:
    report = dedup.scan([str(_hostile_dump(tmp_path))], jobs=1)
    assert report.clusters
    out = tmp_path / "report"
    dedup.report.write_report(report, out)
    page = (out / "index.html").read_text("utf-8")
    ours = re.findall(r"<script[^>]*>", page)
    assert ours == ['<script type="application/json" id="report-data">', "<script>"]
    data_block = page.split('id="report-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data_block and "\\u003c" in data_block  # escaped in the list
    assert "script-src 'sha256-" in page and "default-src 'none'" in page
    parts = sorted((out / "index_data").iterdir())
    assert [part.name for part in parts] == ["clusters-0001.js", "documents-0001.js"]
    for part in parts:
        text = part.read_text("utf-8")
        assert text.startswith(f'dedupPart("{part.name.split("-")[0]}",1,[')
        assert text.endswith("]);\n") and text.count(");") == 1
        assert "<" not in text and "\u2028" not in text and "onerror" in text


CHROMIUM = (
    shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
)
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--virtual-time-budget=5000",
]  # fmt: skip


def _chromium(tmp_path: Path, url: str, *extra: str) -> str:
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    completed = subprocess.run(
        [CHROMIUM or "chromium", *FLAGS, f"--user-data-dir={profile}", *extra, url],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return completed.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (.ci/run installs Debian's)")
def test_report_renders_in_a_real_browser(in_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    CliRunner().invoke(cli, ["scan", "corpus_samples", "-o", str(out), "-q", "-j", "1"])
    page = (out / "index.html").resolve().as_uri()
    report = report_json(out)
    total = len(report["clusters"])
    dom = _chromium(tmp_path, page + "#cluster=c2", "--dump-dom")
    assert 'data-ready="1"' in dom
    assert f"{total} of {total} clusters shown" in dom
    assert "site-qidian" in dom and 'id="matrix"' in dom  # overview tables drawn
    view = dom.split('id="view"', 1)[1]
    second = next(c for c in report["clusters"] if c["id"] == "c2")
    assert view.count('data-member="') == len(second["members"]) >= 2
    assert "<mark" in view and "identical characters" in view
    query = "甄士隐"  # in the Simplified title of 红楼梦 chapter 1, and in its text
    expected = sum(
        any(query in (m["title"] or "") or query in m["text"] for m in c["members"])
        for c in with_member_texts(report, out / "report.json")
    )
    filtered = _chromium(tmp_path, page + "#q=%E7%94%84%E5%A3%AB%E9%9A%90", "--dump-dom")
    assert 0 < expected < total and f"{expected} of {total} clusters shown" in filtered
    by_source = _chromium(tmp_path, page + "#source=site-gbk", "--dump-dom")
    gbk = sum("site-gbk" in c["sources"] for c in report["clusters"])
    assert f"{gbk} of {total} clusters shown" in by_source
    _chromium(tmp_path, page + "#cluster=c40", "--screenshot=" + str(tmp_path / "report.png"),
              "--window-size=1280,2400")  # fmt: skip
    assert (tmp_path / "report.png").stat().st_size > 10_000


def _marked_spans(view: str) -> int:
    """The spans a match view marks: each on both sides (a mark cut where the text's blocks
    are cut is one span still)."""
    sides = view.split('data-document="')[1:3]
    numbers = [set(re.findall(r'<mark[^>]*title="span (\d+):', side)) for side in sides]
    assert len(sides) == 2 and numbers[0] == numbers[1]
    return len(numbers[0])


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (.ci/run installs Debian's)")
def test_a_match_opens_side_by_side_in_a_real_browser(in_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    CliRunner().invoke(cli, ["scan", "corpus_samples", "-o", str(out), "-q", "-j", "1"])
    page = (out / "index.html").resolve().as_uri()
    report = report_json(out)
    total = len(report["matches"])
    everything = _chromium(tmp_path, page, "--dump-dom")
    assert f"{total} of {total} matches shown" in everything
    assert everything.index('id="documents"') < everything.index('id="cluster-list"')
    # pairs of copies between sources, from the groups: site-tw's copies of site-qidian's
    copies = everything.split('id="copy-matrix"', 1)[1].split("</table>", 1)[0]
    cells = [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row) for row in copies.split("<tr")[1:]]
    header, rows = cells[0][1:], {row[0]: row[1:] for row in cells[1:]}
    pairs = dedup.models.document_overlap(load_report(out / "report.json"))
    shared = pairs[("site-qidian", "site-tw")][0]
    assert shared > 0 and rows["site-qidian"][header.index("site-tw")] == f"{shared:,}"
    source = {document["id"]: document["source"] for document in report["documents"]}
    between = sum(
        {source[m["a"]], source[m["b"]]} == {"site-qidian", "site-tw"} for m in report["matches"]
    )
    dom = _chromium(tmp_path, page + "#pair=site-qidian~site-tw&match=m4", "--dump-dom")
    assert f"{between} of {total} matches shown" in dom
    view = dom.split('id="match-view"', 1)[1]
    fourth = report["matches"][3]
    assert {source[fourth["a"]], source[fourth["b"]]} == {"site-qidian", "site-tw"}
    assert view.count('data-document="') == 2
    assert f'data-document="{fourth["a"]}"' in view
    assert _marked_spans(view) == len(fourth["spans"])
    assert f"{fourth['identical_chars']:,} identical characters" in view


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (.ci/run installs Debian's)")
def test_no_script_from_the_data_runs_in_a_real_browser(tmp_path: Path) -> None:
    out = tmp_path / "report"
    report = dedup.scan([str(_hostile_dump(tmp_path))], jobs=1)
    dedup.report.write_report(report, out)
    dom = _chromium(tmp_path, (out / "index.html").as_uri() + "#cluster=c1", "--dump-dom")
    body = dom.split("<body", 1)[1].split(">", 1)[0]
    assert 'data-ready="1"' in body and "data-pwned" not in body
    assert "&lt;script&gt;document.body.setAttribute" in dom  # shown as text


def _page_data(page: str) -> dict[str, Any]:
    found = re.search(r'id="report-data">(.*?)</script>', page, re.S)
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def _page_and_parts(report: dedup.Report) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    from dedup.report.html import PageParts

    parts = PageParts()
    return _page_data(render_html(report, parts)), parts.parts


def test_a_page_too_big_for_a_browser_holds_the_largest_clusters(
    monkeypatch: pytest.MonkeyPatch, samples: Path
) -> None:
    from dedup.report import html

    report = dedup.scan([str(samples)], jobs=1)
    whole, _parts = _page_and_parts(report)
    assert len(whole["clusters"]) == whole["clusters_total"] == len(report.clusters)
    assert len(whole["matches"]) == whole["matches_total"] == len(report.matches)
    monkeypatch.setattr(html, "PAGE_TEXT_BUDGET", 40_000)
    capped, parts = _page_and_parts(report)
    # the matched documents take up to half of the budget, their matches largest share first
    texts = [
        text for name, items in parts.items() if name.startswith("documents") for _, text in items
    ]
    documents = sum(len(text) for text in texts)
    assert len(texts) == len(capped["documents"])
    assert 0 < len(capped["matches"]) < len(report.matches) == capped["matches_total"]
    assert documents <= 20_000
    # the clusters the rest, largest first
    shown = [cluster["id"] for cluster in capped["clusters"]]
    assert 0 < len(shown) < len(report.clusters) == capped["clusters_total"]
    assert shown == [cluster.id for cluster in report.clusters[: len(shown)]]
    clusters = [c for name, items in parts.items() if name.startswith("clusters") for c in items]
    assert [cluster["id"] for cluster in clusters] == shown
    text = sum(len(m["text"]) for c in clusters for m in c["members"])
    following = sum(len(m.text) for m in report.clusters[len(shown)].members)
    assert text <= 40_000 - documents < text + following
    assert capped["summary"] == whole["summary"] and capped["overlap"] == whole["overlap"]


def test_a_pages_text_is_at_most_a_quarter_of_the_dumps(
    monkeypatch: pytest.MonkeyPatch, samples: Path
) -> None:
    """Past its floor (a small dump's page holds all it found), the page carries a quarter
    of the text of the dump's passages at most: the report stays a part of the dump."""
    from dedup.report import html

    report = dedup.scan([str(samples)], jobs=1)
    quarter = report.summary.passages * report.options["passage_chars"] // 4
    assert html.page_text_budget(report) == html.PAGE_TEXT_FLOOR > quarter
    whole, _parts = _page_and_parts(report)
    assert len(whole["clusters"]) == len(report.clusters)
    monkeypatch.setattr(html, "PAGE_TEXT_FLOOR", 1_000)
    assert html.page_text_budget(report) == quarter
    page, parts = _page_and_parts(report)

    def items(kind: str) -> list[Any]:
        return [item for name, listed in parts.items() if name.startswith(kind) for item in listed]

    documents = sum(len(text) for _, text in items("documents"))
    members = sum(len(m["text"]) for cluster in items("clusters") for m in cluster["members"])
    # the first match and the first cluster are always shown, whatever their size
    assert 0 < documents <= quarter // 2 or len(page["matches"]) == 1
    assert 0 < members <= quarter - documents or len(page["clusters"]) == 1
    assert 0 < len(page["clusters"]) < len(report.clusters)
    assert 0 < len(page["matches"]) < len(report.matches)


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (.ci/run installs Debian's)")
def test_a_capped_page_says_where_the_other_clusters_are(
    monkeypatch: pytest.MonkeyPatch, samples: Path, tmp_path: Path
) -> None:
    from dedup.report import html

    monkeypatch.setattr(html, "PAGE_TEXT_BUDGET", 40_000)
    report = dedup.scan([str(samples)], jobs=1)
    out = tmp_path / "report"
    dedup.report.write_report(report, out)
    dom = _chromium(tmp_path, (out / "index.html").as_uri(), "--dump-dom")
    shown = len(_page_data((out / "index.html").read_text("utf-8"))["clusters"])
    assert f"holds the {shown} largest of {len(report.clusters)} clusters" in dom


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (.ci/run installs Debian's)")
def test_a_page_in_many_parts_loads_what_each_view_needs(
    monkeypatch: pytest.MonkeyPatch, samples: Path, tmp_path: Path
) -> None:
    from dedup.report import html

    monkeypatch.setattr(html, "PART_CHARS", 10_000)
    out = tmp_path / "report"
    report = dedup.scan([str(samples)], jobs=1)
    dedup.report.write_report(report, out)
    parts = sorted(path.name for path in (out / "index_data").iterdir())
    clusters = [name for name in parts if name.startswith("clusters-")]
    assert len(clusters) > 5 and len(parts) > len(clusters) + 1
    page = (out / "index.html").as_uri()
    total = len(report.clusters)
    last = report.clusters[-1]
    dom = _chromium(tmp_path, page + f"#cluster={last.id}&sort=id", "--dump-dom")
    view = dom.split('id="view"', 1)[1]
    assert view.count('data-member="') == len(last.members)
    assert f"{total} of {total} clusters shown" in dom
    # a search of the text reads every part: the count is that of the text itself
    query = "甄士隐"
    expected = sum(
        any(query in (m.title or "") or query in m.text for m in c.members) for c in report.clusters
    )
    found = _chromium(tmp_path, page + "#q=%E7%94%84%E5%A3%AB%E9%9A%90", "--dump-dom")
    assert 0 < expected < total and f"{expected} of {total} clusters shown" in found
    assert 'id="searching"' not in found
    match = report.matches[-1]
    shown = _chromium(tmp_path, page + f"#match=m{len(report.matches)}", "--dump-dom")
    sides = shown.split('id="match-view"', 1)[1]
    assert sides.count('data-document="') == 2 and _marked_spans(sides) == len(match.spans)
    # a part left behind when the page was copied: the view says which, and what to do
    (out / "index_data" / clusters[-1]).unlink()
    missing = _chromium(tmp_path, page + f"#cluster={last.id}&sort=id", "--dump-dom")
    notice = missing.split('id="part-missing"', 1)[1].split("</p>", 1)[0]
    assert f"index_data/{clusters[-1]} could not be read" in notice
    assert "keep the folder index_data beside index.html" in notice


def _cluster_of_sources(number: int, sources: list[str], text: str) -> Cluster:
    members = tuple(
        Passage(
            id=f"{s}/x.txt:0-{len(text)}",
            source=s,
            path=f"{s}/x.txt",
            record=None,
            chapter=0,
            title=None,
            start=0,
            end=len(text),
            text=text,
            document=f"{s}/x.txt:0-{len(text)}",
        )
        for s in sources
    )
    return Cluster(f"c{number}", members[0].id, members, ())


@pytest.mark.parametrize("batch", [1 << 22, 50])
def test_source_overlap_counts_every_pair_of_sources_sharing_a_cluster(
    seed_simplified: str, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dedup.report import html

    monkeypatch.setattr(html, "_OVERLAP_BATCH", batch)  # 50: folds part way, as a big dump does
    text = seed_simplified[:200]
    names = [f"site-{n:02d}" for n in range(40)]
    clusters = [
        _cluster_of_sources(1, names, text),  # 40 sources: counted in arrays
        _cluster_of_sources(2, names[5:30], text),
        _cluster_of_sources(3, ["site-03", "site-07"], text),  # small: counted one by one
        _cluster_of_sources(4, ["site-07", "site-03", "site-39"], text),
    ]
    expected: dict[tuple[str, str], int] = {}
    for cluster in clusters:
        for a in cluster.sources:
            for b in cluster.sources:
                if a <= b:
                    expected[(a, b)] = expected.get((a, b), 0) + 1
    found = html.source_overlap(clusters)
    assert found == [[a, b, n] for (a, b), n in sorted(expected.items())]
    assert ["site-03", "site-07", 3] in found and ["site-00", "site-39", 1] in found


def test_palette_texts_normalized_in_batches_are_those_of_one_call_each(
    monkeypatch: pytest.MonkeyPatch,
    samples: Path,
    seed_traditional: str,
    hongloumeng_simplified: str,
) -> None:
    """The page normalizes members' texts many at once (copies once): the same texts and
    offsets as normalizing each alone, across batch boundaries."""
    from dedup.normalize import NormalizeConfig
    from dedup.report import palette
    from dedup.report.palette import normalized_texts

    monkeypatch.setattr(palette, "BATCH_CHARS", 5000)

    passages = [
        text[start : start + 500]
        for text in (
            (samples / "site-classic/sanguo.txt").read_text("utf-8"),
            (samples / "site-classic/xiyouji.txt").read_text("utf-8"),
            seed_traditional,
            hongloumeng_simplified,
        )
        for start in range(0, len(text), 450)
    ]
    assert sum(map(len, passages)) > 5 * 5000  # several batches
    for config in (NormalizeConfig(), NormalizeConfig(script="traditional")):
        found = normalized_texts([*passages, *passages[:20]], config)
        assert list(found) == list(dict.fromkeys(passages))
        for text, normalized in found.items():
            alone = normalize(text, config)
            assert normalized.text == alone.text
            assert normalized.offsets.tolist() == alone.offsets.tolist()


def test_files_written_by_a_forked_copy_are_those_written_here(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, samples: Path
) -> None:
    import os

    from dedup.report import html, writer

    report = dedup.scan([str(samples)], jobs=1)
    formats = ("html", "csv", "pairs", "jsonl")
    forked = writer.write_report(report, tmp_path / "forked", formats, two_processes=True)
    files = folder_files(tmp_path / "forked")
    assert {"index.html", "clusters.csv", "pairs.csv", "report.json", "clusters.jsonl"} <= set(
        files
    )
    parent = os.getpid()
    write_one, write_part = writer._write_page_or_table, html.write_cluster_part
    marks = tmp_path / "marks"
    marks.mkdir()

    def mark(name: str) -> None:
        (marks / f"{name}-{'here' if os.getpid() == parent else 'copy'}").touch()

    def slow_page(job: Any, name: str) -> None:
        if name == "index.html":
            time.sleep(2)  # the page outlasts report.json: the tables fall to this process
        mark(name)
        write_one(job, name)

    def part(report: Any, directory: Path, part: html.ClusterPart) -> None:
        mark(f"clusters part {part.number}")
        write_part(report, directory, part)

    # Whichever process is done with its own files first writes the tables and the page's
    # parts of clusters: the same files.
    monkeypatch.setattr(writer, "_write_page_or_table", slow_page)
    monkeypatch.setattr(html, "write_cluster_part", part)
    writer.write_report(report, tmp_path / "shared", formats, two_processes=True)
    assert folder_files(tmp_path / "shared") == files
    by = {path.name for path in marks.iterdir()}
    cluster_parts = {f"clusters part {p.number}-here" for p in html.cluster_parts(report)}
    assert len(cluster_parts) >= 1
    assert by == {"index.html-copy", "index_data-copy"} | cluster_parts | {
        f"{table}-here" for table in ("clusters.csv", "matches.csv", "pairs.csv")
    }
    monkeypatch.undo()

    here = writer._write_page_and_claimed

    def failing_in_the_copy(*arguments: Any) -> None:
        if os.getpid() != parent:
            (tmp_path / "the copy ran").touch()
            raise OSError("no space left on device")
        return here(*arguments)

    # The copy fails: this process writes its files itself, the same ones.
    monkeypatch.setattr(writer, "_write_page_and_claimed", failing_in_the_copy)
    recovered = writer.write_report(report, tmp_path / "recovered", formats, two_processes=True)
    assert recovered == [tmp_path / "recovered" / path.name for path in forked]
    assert (tmp_path / "the copy ran").exists()
    assert folder_files(tmp_path / "recovered") == files
    # A one-worker scan's report is written by this process alone (no copy of its memory).
    (tmp_path / "the copy ran").unlink()
    writer.write_report(report, tmp_path / "alone", formats)
    assert not (tmp_path / "the copy ran").exists()
    assert folder_files(tmp_path / "alone") == files

    # No fork at all (another system): the same files, written here.
    def no_copy(self: Any, *arguments: Any, fork: bool) -> None:
        self.process = None

    monkeypatch.setattr(writer._ForkedWriter, "__init__", no_copy)
    writer.write_report(report, tmp_path / "here", formats, two_processes=True)
    assert folder_files(tmp_path / "here") == files


def test_the_pages_parts_of_clusters_written_by_both_processes_are_those_of_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, samples: Path
) -> None:
    from dedup.report import html, writer

    report = dedup.scan([str(samples)], jobs=1)
    monkeypatch.setattr(html, "PART_CHARS", 3000)  # many parts, claimed by either process
    assert len(html.cluster_parts(report)) >= 10
    writer.write_report(report, tmp_path / "one", ("html",), two_processes=False)
    writer.write_report(report, tmp_path / "two", ("html",), two_processes=True)
    files = folder_files(tmp_path / "one")
    assert sum(name.startswith("index_data/clusters-") for name in files) >= 10
    assert folder_files(tmp_path / "two") == files


# A page that opens index.html in a frame (file pages may reach each other with
# --allow-file-access-from-files) and uses it as a person would: edits the hash, clicks a
# row, picks a filter; what it saw is written into its own DOM for --dump-dom to print.
_DRIVER = """<!DOCTYPE html><html><body><iframe id="f" src="report/index.html#cluster=LATE"
width="420" height="900"></iframe><pre id="out"></pre><script>
const f = document.getElementById("f");
const pause = () => new Promise((done) => setTimeout(done, 100));
f.onload = async () => {
  const w = f.contentWindow, d = () => f.contentDocument, seen = {};
  const view = () => { const h = d().querySelector("#view h2"); return h ? h.textContent.split(":")[0] : null; };
  const shown = () => d().getElementById("shown-count").textContent;
  const right = () => Math.round(d().getElementById("view").getBoundingClientRect().right);
  seen.late = view(); seen.lateRight = right(); seen.width = w.innerWidth;
  w.location.hash = "#q=孙悟空"; await pause(); seen.simplified = shown();
  w.location.hash = "#q=孫悟空"; await pause(); seen.traditional = shown();
  w.location.hash = "#q=孫 悟，空"; await pause(); seen.punctuated = shown();
  w.location.hash = "#source=nosuch"; await pause();
  seen.noSource = (d().getElementById("no-source") || {}).textContent || null;
  w.location.hash = ""; await pause();
  d().querySelector('[data-cluster="c3"]').click(); seen.clicked = w.location.hash;
  seen.pairRows = [...d().querySelectorAll("#view table tr")].slice(1).map((row) => row.cells[0].textContent);
  const menu = d().getElementById("filter-source");
  menu.value = "site-tw"; menu.dispatchEvent(new Event("change")); seen.filtered = w.location.hash;
  w.location.hash = "#cluster=c1&source=site-gbk"; await pause();
  seen.filteredOut = (d().getElementById("not-shown") || {}).textContent || null;
  document.getElementById("out").textContent = JSON.stringify(seen);
};
</script></body></html>"""


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (.ci/run installs Debian's)")
def test_the_page_follows_its_url_and_writes_every_view_to_it(
    in_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report"
    # Short passages: more clusters than one page of the list holds (100).
    result = CliRunner().invoke(
        cli, ["scan", "corpus_samples", "-o", str(out), "-q", "-j", "1", "--passage-chars", "100"]
    )
    assert result.exit_code == 0, result.output
    report = report_json(out)
    clusters = with_member_texts(report, out / "report.json")
    assert len(clusters) > 200
    late = clusters[150]["id"]  # on the second page of the largest-first list
    (tmp_path / "driver.html").write_text(_DRIVER.replace("LATE", late), "utf-8")
    dom = _chromium(tmp_path, (tmp_path / "driver.html").as_uri(), "--dump-dom",
                    "--allow-file-access-from-files")  # fmt: skip
    found = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S)
    assert found is not None and found.group(1), dom[-2000:]
    seen = json.loads(html_lib.unescape(found.group(1)))
    assert seen["late"] == late, "a cluster on a later page opens, its page shown"
    assert seen["lateRight"] <= seen["width"], "the cluster view fits a 420 px window"

    def with_query(query: str) -> int:
        return sum(any(query in m["text"] for m in c["members"]) for c in clusters)

    either = sum(
        any("孙悟空" in m["text"] or "孫悟空" in m["text"] for m in c["members"]) for c in clusters
    )
    assert with_query("孙悟空") != with_query("孫悟空")  # a search by characters alone differs
    total = len(clusters)
    assert (
        seen["simplified"]
        == seen["traditional"]
        == seen["punctuated"]
        == f"{either} of {total} clusters shown"
    )
    assert seen["noSource"] and "nosuch" in seen["noSource"]
    assert seen["clicked"] == "#cluster=c3"
    c3 = next(c for c in clusters if c["id"] == "c3")
    spans = {m["id"]: f"({m['start']}–{m['end']})" for m in c3["members"]}
    assert len(seen["pairRows"]) == len(c3["pairs"]) >= 2
    for row, pair in zip(seen["pairRows"], c3["pairs"], strict=True):
        assert spans[pair["a"]] in row and spans[pair["b"]] in row
    assert len(set(seen["pairRows"])) == len(seen["pairRows"])
    assert seen["filtered"] == "#source=site-tw&cluster=c3"
    assert seen["filteredOut"] and "does not pass the filters" in seen["filteredOut"]


def test_the_page_is_byte_identical_between_runs(samples: Path, tmp_path: Path) -> None:
    for jobs in ("1", "2"):
        result = CliRunner().invoke(
            cli, ["scan", str(samples), "-o", str(tmp_path / jobs), "-q", "-j", jobs]
        )
        assert result.exit_code == 0

    def page(folder: Path) -> dict[str, bytes]:
        files = [folder / "index.html", *sorted((folder / "index_data").iterdir())]
        return {file.name: file.read_bytes() for file in files}

    assert page(tmp_path / "1") == page(tmp_path / "2")
    assert len(page(tmp_path / "1")) >= 3
    assert json.loads((tmp_path / "2" / "run.json").read_text("utf-8"))["jobs"] == 2


def test_report_json_lists_the_inputs_and_skipped_as_one_json_dumps_would(
    samples: Path, tmp_path: Path, seed_simplified: str
) -> None:
    """report.json's inputs and skipped are written an item at a time (millions for a dump
    of a page a file), and read as the whole list indented by json.dumps: names that need
    escaping, a warning, a skipped file."""
    dump = tmp_path / "dump"
    shutil.copytree(samples, dump)
    odd = dump / 'site-"quoted"' / "行\n換\\.txt"
    odd.parent.mkdir()
    odd.write_text(seed_simplified[:3000], "utf-8")
    record = {"title": "x", "text": seed_simplified[:1500] + "\udc00"}
    (odd.parent / "dump.jsonl").write_text(json.dumps(record) + "\n", "utf-8")
    (odd.parent / "junk.txt").write_bytes(bytes(range(256)) * 40)
    report = dedup.scan([str(dump)], jobs=1, show_progress=False)
    assert report.skipped and any(entry.warnings for entry in report.inputs)
    assert any('"' in entry.path and "\\" in entry.path for entry in report.inputs)
    whole = json.dumps(report.to_dict(clusters=False), ensure_ascii=False, indent=2)
    assert report.to_json().startswith(whole[: -len("\n}")] + ",\n")
    assert "".join(report.json_head()) == whole[: -len("\n}")]
