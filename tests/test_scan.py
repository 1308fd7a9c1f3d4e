"""End to end on corpus_samples/: the clusters a person expects, and nothing else."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dedup
from dedup.codepoints import code_points
from dedup.read.decode import decode_bytes

EXPECTED_FILE_PAIRS = {
    ("site-qidian/000.txt", "site-tw/000.txt"),
    ("site-gbk/002.txt", "site-mirror/dump.jsonl"),
    ("site-qidian/hongloumeng.txt", "site-tw/hongloumeng-big5.txt"),
    ("site-classic/xiyouji.txt", "site-mirror/dump.jsonl"),
}
SEEDS = {"site-qidian/000.txt", "site-qidian/001.txt", "site-gbk/002.txt", "site-tw/000.txt"}


@pytest.fixture(scope="module")
def report(samples: Path) -> dedup.Report:
    return dedup.scan([str(samples)], jobs=1)


def _relative(path: str) -> str:
    return path.split("corpus_samples/", 1)[1]


def test_finds_exactly_the_expected_clusters(report: dedup.Report) -> None:
    linked = set()
    for cluster in report.clusters:
        files = sorted({_relative(member.path) for member in cluster.members})
        assert len(files) >= 2, cluster.id
        linked.update(itertools.combinations(files, 2))
    assert linked == EXPECTED_FILE_PAIRS


def test_seed_novels_are_never_merged(report: dedup.Report) -> None:
    for cluster in report.clusters:
        novels = {
            {"000": "A", "001": "B", "002": "C"}[Path(member.path).stem]
            for member in cluster.members
            if _relative(member.path) in SEEDS
        }
        assert len(novels) <= 1
    for cluster in report.clusters:
        for member in cluster.members:
            assert _relative(member.path) not in {"site-qidian/001.txt", "site-classic/sanguo.txt"}


def test_most_of_each_shared_chapter_is_found(report: dedup.Report) -> None:
    clustered: dict[str, int] = {}
    for cluster in report.clusters:
        for member in cluster.members:
            clustered[_relative(member.path)] = clustered.get(_relative(member.path), 0) + 1
    passages = {_relative(entry.path): entry.passages for entry in report.inputs}
    for name in (
        "site-qidian/000.txt",
        "site-tw/000.txt",
        "site-gbk/002.txt",
        "site-qidian/hongloumeng.txt",
        "site-tw/hongloumeng-big5.txt",
        "site-classic/xiyouji.txt",
    ):
        assert clustered[name] >= 0.8 * passages[name], name


def test_every_member_is_exactly_its_span_of_the_decoded_text(
    report: dedup.Report, samples: Path
) -> None:
    encodings = {entry.path: entry.encoding for entry in report.inputs}
    checked = 0
    for cluster in report.clusters:
        assert cluster.representative in {member.id for member in cluster.members}
        for member in cluster.members:
            text = decode_bytes(Path(member.path).read_bytes(), encodings[member.path]).text
            if member.record is not None:
                text = json.loads(text.split("\n")[member.record])["content"]
            assert text[member.start : member.end] == member.text
            checked += 1
    assert checked == report.summary.duplicated_passages > 100


def test_inputs_and_skipped_are_listed(report: dedup.Report) -> None:
    formats = {_relative(entry.path): (entry.format, entry.encoding) for entry in report.inputs}
    assert formats["site-tw/hongloumeng-big5.txt"] == ("txt", "big5hkscs")
    assert formats["site-gbk/002.txt"] == ("txt", "gb18030")
    assert formats["site-mirror/dump.jsonl"] == ("jsonl", "utf-8")
    mirror = next(e for e in report.inputs if e.path.endswith("dump.jsonl"))
    assert mirror.records == 3
    assert mirror.warnings[0].startswith("record 2 (line 3): not valid JSON")
    assert [(_relative(s.path), s.reason.split(" (")[0]) for s in report.skipped] == [
        ("README.md", "not a supported format")
    ]


def test_report_is_byte_identical_across_runs_jobs_and_path_order(
    samples: Path, tmp_path: Path, report: dedup.Report
) -> None:
    sites = sorted(str(path) for path in samples.iterdir() if path.is_dir())
    readme = str(samples / "README.md")
    again = dedup.scan([str(samples)], jobs=1)
    parallel = dedup.scan([str(samples)], jobs=2)
    assert report.to_json() == again.to_json() == parallel.to_json()
    forwards = dedup.scan([*sites, readme], jobs=2)
    backwards = dedup.scan([readme, *reversed(sites)], jobs=1)
    assert forwards.to_json() == backwards.to_json()
    # A copy of the dump in another folder gives the same clusters under the new paths.
    copy = tmp_path / "corpus_samples"
    shutil.copytree(samples, copy)
    moved = dedup.scan([str(copy)], jobs=2)
    assert moved.to_json().replace(str(copy), "X") == report.to_json().replace(str(samples), "X")


def test_a_report_without_a_members_document_says_so_when_written(
    report: dedup.Report,
) -> None:
    """report.json names documents by their number: a Report (made by hand, say) whose
    documents leave out one a member names is a clear error, not a KeyError."""
    member = report.clusters[0].members[0]
    lacking = dataclasses.replace(
        report, documents=tuple(d for d in report.documents if d.id != member.document)
    )
    with pytest.raises(ValueError, match=re.escape(f"{member.document} is named by a member")):
        lacking.to_json()


def test_report_json_contract(report: dedup.Report) -> None:
    data = json.loads(report.to_json())
    assert set(data) == {
        "report_format",
        "dedup_version",
        "options",
        "summary",
        "inputs",
        "skipped",
        "documents",
        "matches",
        "document_groups",
        "clusters",
    }
    match = data["matches"][0]
    assert set(match) == {
        "a",
        "b",
        "shared_chars_a",
        "shared_chars_b",
        "coverage_a",
        "coverage_b",
        "identical_chars",
        "spans",
    }
    # documents are named by their number in the list (format 5)
    documents = data["documents"]
    assert [documents[match["a"]]["id"], documents[match["b"]]["id"]] == [
        report.matches[0].a.id,
        report.matches[0].b.id,
    ]
    assert set(match["spans"][0]) == {"a_start", "a_end", "b_start", "b_end", "identical_chars"}
    location = {"id", "source", "path", "record", "record_id", "chapter", "title", "start", "end"}
    assert set(data["documents"][0]) == location | {"story_chars", "text_sha256"}
    # the texts only when asked; their SHA-256 always, of the decoded text's slice
    full = json.loads(report.to_json(document_texts=True))["documents"]
    assert [{**d, "text": f["text"]} for d, f in zip(data["documents"], full, strict=True)] == full
    encodings = {entry["path"]: entry["encoding"] for entry in data["inputs"]}
    for entry in full:
        assert hashlib.sha256(entry["text"].encode()).hexdigest() == entry["text_sha256"]
        if entry["record"] is None:  # a text file's (a record's are its text field's)
            decoded = Path(entry["path"]).read_bytes().decode(encodings[entry["path"]])
            assert entry["text"] == decoded[entry["start"] : entry["end"]]
    assert any(entry["record"] is None for entry in full)
    assert set(data["document_groups"][0]) == {"id", "representative", "sources", "documents"}
    assert data["options"]["ngram"] == dedup.ScanConfig().ngram and "jobs" not in data["options"]
    cluster = data["clusters"][0]
    assert set(cluster) == {
        "id",
        "representative",
        "sources",
        "members",
        "pairs",
        "giant",
        "linked_through_others",
    }
    assert set(cluster["members"][0]) == {"start", "end", "document"}
    # a member's text is its document's, held once: every member's document is there, and
    # holds it; where the member is otherwise, its id and its source are its document's
    assert data["report_format"] == 5
    for listed, written in zip(report.clusters, data["clusters"], strict=True):
        members = written["members"]
        assert len(members) == len(listed.members)
        for member, passage in zip(members, listed.members, strict=True):
            holder = documents[member["document"]]
            assert (holder["path"], holder["record"], holder["chapter"], holder["title"]) == (
                passage.path,
                passage.record,
                passage.chapter,
                passage.title,
            )
            assert holder["source"] == passage.source and holder["id"] == passage.document
            assert (member["start"], member["end"]) == (passage.start, passage.end)
            assert holder["start"] <= member["start"] < member["end"] <= holder["end"]
        # the representative and the members linked through others by their numbers
        assert listed.members[written["representative"]].id == listed.representative
        assert [listed.members[n].id for n in written["linked_through_others"]] == list(
            listed.linked_through_others
        )
    assert any(c["linked_through_others"] for c in data["clusters"])
    # a pair is a row: the numbers of its two members in the cluster, then its values
    for one, row in zip(report.clusters[0].pairs, cluster["pairs"], strict=True):
        a, b, jaccard, containment, minhash_jaccard, identical = row
        members = report.clusters[0].members
        assert members[a].id == one.a and members[b].id == one.b
        assert a < b and (jaccard, identical) == (round(one.jaccard, 4), one.identical_chars)
        assert containment == round(one.containment, 4)
        assert minhash_jaccard == round(one.minhash_jaccard, 4)
    ids = [c["id"] for c in data["clusters"]]
    assert ids == [f"c{n}" for n in range(1, len(ids) + 1)]


def test_exact_copies_are_found_by_two_hashes(seed_simplified: str) -> None:
    from dedup.candidates import exact_copies
    from dedup.segment import text_hashes
    from dedup.segment.passages import _window_hashes

    a, b = seed_simplified[:300], seed_simplified[300:600]
    texts = [a, b, a, b, b]
    codes = code_points("".join(texts))
    starts = np.arange(0, 1500, 300, dtype=np.int64)
    from_the_workers = _window_hashes(codes, starts, starts + 300)
    assert from_the_workers.tolist() == text_hashes(texts).tolist()
    assert len({tuple(row) for row in from_the_workers.tolist()}) == 2
    first_collides = from_the_workers.copy()
    first_collides[:, 0] = 7  # every text's first hash is the same: the second tells them apart
    handed_back = [a, b, None, None, b]  # later copies need not come with their text
    for given, hashes in (
        (texts, None),
        (texts, from_the_workers),
        (texts, first_collides),
        (handed_back, from_the_workers),
    ):
        distinct, links = exact_copies(given, hashes)
        assert distinct.tolist() == [0, 1]
        assert [(link.first, link.second) for link in links] == [(0, 2), (1, 3), (1, 4)]
        assert all(link.jaccard == 1.0 and link.identical_chars == 300 for link in links)
    # A single character apart is another text.
    near = [a, a[:-1] + ("。" if a[-1] != "。" else "，")]
    assert exact_copies(near)[0].tolist() == [0, 1]
    assert text_hashes([]).shape == (0, 2)
    assert exact_copies([])[0].tolist() == []
    assert (
        text_hashes(["", "天"]).tolist()
        == _window_hashes(code_points("天"), np.array([0, 0]), np.array([0, 1])).tolist()
    )


def test_a_file_that_changes_during_the_scan_is_listed_not_misquoted(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    seed_simplified: str,
    hongloumeng_simplified: str,
) -> None:
    """Its passages are left out, and so are the pairs they were in: a passage whose only
    copy was in that file is in no cluster (not left alone in one)."""
    from dedup import pipeline
    from dedup.engine import gather, member_texts

    only_in_b_and_d = hongloumeng_simplified[:3000]
    for site, text in (
        ("a", seed_simplified),
        ("b", seed_simplified + "\n" + only_in_b_and_d),
        ("c", seed_simplified),
        ("d", only_in_b_and_d),
    ):
        (tmp_path / site).mkdir()
        (tmp_path / site / "chapter.txt").write_text(text, "utf-8")
    assert {"d"} < {
        m.source for c in dedup.scan([str(tmp_path)], jobs=1).clusters for m in c.members
    }
    changing = tmp_path / "b" / "chapter.txt"
    first_pass = gather.prepare_all

    def then_edit(*args: Any, **kwargs: Any) -> Any:
        prepared = first_pass(*args, **kwargs)
        changing.write_text("（作者修改）" + seed_simplified, "utf-8")  # every offset moves
        return prepared

    monkeypatch.setattr(pipeline, "prepare_all", then_edit)
    report = dedup.scan([str(tmp_path)], jobs=1)
    assert [(entry.path, entry.reason) for entry in report.skipped] == [
        (changing.as_posix(), member_texts.CHANGED_WHILE_SCANNING)
    ]
    assert report.clusters
    for cluster in report.clusters:
        assert {member.source for member in cluster.members} == {"a", "c"}
        for member in cluster.members:
            assert seed_simplified[member.start : member.end] == member.text
    assert report.summary.duplicated_passages == sum(len(c.members) for c in report.clusters)


def test_a_scan_gives_the_garbage_collector_back_as_it_found_it(samples: Path) -> None:
    import gc

    assert gc.isenabled()
    report = dedup.scan([str(samples)], jobs=2)
    assert gc.isenabled()
    # The scan's records were moved to the oldest generation: the next young collection does
    # not walk them (they number in the thousands here, millions in a large scan).
    member = report.clusters[0].members[0]
    assert any(found is member for found in gc.get_objects(generation=2))
    gc.disable()
    try:
        dedup.scan([str(samples)], jobs=1)
        assert not gc.isenabled()
    finally:
        gc.enable()
    marker = ["a caller's object"]
    gc.freeze()  # a caller's frozen objects stay frozen (the permanent generation is not listed)
    try:
        dedup.scan([str(samples)], jobs=1)
        assert gc.get_freeze_count() > 0
        assert all(found is not marker for found in gc.get_objects())
    finally:
        gc.unfreeze()
    assert any(found is marker for found in gc.get_objects())


def test_the_main_pass_cuts_the_chapters_the_learn_pass_found(
    monkeypatch: pytest.MonkeyPatch, samples: Path
) -> None:
    """Headings are looked for once per file: the learn pass hands its chapters on, and the
    passages are those the main pass finds by looking for the headings itself."""
    from dataclasses import replace

    from dedup import windows
    from dedup.config import ScanConfig
    from dedup.engine import tasks
    from dedup.normalize import repeated_lines
    from dedup.read import discover_inputs

    config = ScanConfig()
    files, _skipped = discover_inputs([str(samples)])
    learned = [tasks.count_line_keys(file, config) for file in files]
    repeated = repeated_lines.repeated_lines(learned)
    looked_for = [tasks.prepare_file(file, config, repeated) for file in files]

    calls = []
    split_chapters = windows.split_chapters
    monkeypatch.setattr(
        windows, "split_chapters", lambda *args: calls.append(args) or split_chapters(*args)
    )
    handed_on = [
        tasks.prepare_file(file, config, repeated, found.chapters)
        for file, found in zip(files, learned, strict=True)
    ]
    assert calls == []
    assert sum(len(item.passages) for prepared in handed_on for item in prepared.inputs) > 100
    for ours, theirs in zip(handed_on, looked_for, strict=True):
        for mine, reference in zip(ours.inputs, theirs.inputs, strict=True):
            assert list(mine.passages) == list(reference.passages)
            assert mine.normalized == reference.normalized

    # A table made from another text (the file changed between the passes) is not used.
    stale = tuple(
        tuple(replace(table, text_length=table.text_length + 1) for table in tables if table)
        for tables in learned[0].chapters
    )
    tasks.prepare_file(files[0], config, repeated, stale)
    assert calls


def _site_with_a_slogan(folder: Path, name: str, text: str) -> int:
    """``text`` with a line no pattern knows after each of its chapters, as one file of a site
    (returns how many chapters it has)."""
    from dedup.models import Document
    from dedup.segment import split_chapters

    slogan = "本书由书友云中客上传整理，欢迎加入读者群七七八八九九交流剧情"
    chapters = [c for c in split_chapters(Document("t", "s", None, text)) if c.index is not None]
    folder.mkdir(parents=True, exist_ok=True)
    body = "".join(f"{text[c.start : c.end].rstrip()}\n{slogan}\n" for c in chapters)
    (folder / name).write_text(body, "utf-8")
    return len(chapters)


def test_a_file_alone_in_its_source_is_learned_from_and_prepared_in_one_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, hongloumeng_simplified: str
) -> None:
    """One site, one file: the lines that file repeats are all its source repeats, so both
    passes are made from one read of it, with the results of two."""
    from dedup.config import ScanConfig
    from dedup.engine import gather, tasks
    from dedup.normalize import repeated_lines
    from dedup.read import discover_inputs

    chapters = _site_with_a_slogan(tmp_path / "alone", "book.txt", hongloumeng_simplified)
    for name in ("1.txt", "2.txt"):
        _site_with_a_slogan(tmp_path / "pair", name, hongloumeng_simplified)
    config = ScanConfig(jobs=1)
    files, _skipped = discover_inputs([str(tmp_path)])
    assert [file.source for file in files] == ["alone", "pair", "pair"]
    sources, once = repeated_lines.read_once(files, config)
    assert sources.names == ("alone", "pair") and sources.starts.tolist() == [0, 1, 3]
    assert once.tolist() == [True, False]

    reads = []
    read_file = tasks.read_file
    monkeypatch.setattr(
        tasks,
        "read_file",
        lambda file, config, part=None: reads.append(file) or read_file(file, config, part),
    )
    at_once = tasks.learn_and_prepare(files[0], config)
    assert reads == [files[0]]
    learned = tasks.count_line_keys(files[0], config)
    apart = tasks.prepare_file(
        files[0], config, repeated_lines.repeated_lines([learned]), learned.chapters
    )
    (ours,), (reference,) = at_once.inputs, apart.inputs
    assert ours.entry is not None and ours.entry == reference.entry
    assert ours.entry.normalization["repeated-lines"] == chapters == 3
    assert list(ours.passages) == list(reference.passages)
    assert ours.normalized == reference.normalized
    assert np.array_equal(ours.signatures, reference.signatures)
    assert set(at_once.seconds) >= {"read", "learn-lines", "normalize", "fingerprint"}

    # The whole scan: the same report as when every file is learned from and prepared apart.
    def same_report(**options: Any) -> str:
        report = dedup.scan([str(tmp_path)], jobs=1, **options)
        assert report.summary.clusters > 0
        return json.dumps({**report.to_dict(), "timings": None})

    together = same_report()

    def none_at_once(files: Any, config: Any) -> tuple[Any, Any]:
        sources, once = repeated_lines.read_once(files, config)
        return sources, np.zeros_like(once)

    monkeypatch.setattr(gather, "read_once", none_at_once)
    assert same_report() == together


def test_files_are_read_once_only_where_no_file_can_hold_another_source(
    tmp_path: Path, seed_simplified: str
) -> None:
    """An archive's folders, or records naming their source, can add to any source's lines."""
    import zipfile

    from dedup.config import ScanConfig
    from dedup.normalize import repeated_lines
    from dedup.read import discover_inputs

    for site in ("a", "b"):
        (tmp_path / site).mkdir()
        (tmp_path / site / "book.txt").write_text(seed_simplified, "utf-8")
    record = json.dumps({"text": seed_simplified, "site": "a"}, ensure_ascii=False)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "records.jsonl").write_text(record + "\n", "utf-8")

    def decided(**options: Any) -> list[bool]:
        files, _skipped = discover_inputs([str(tmp_path)])
        sources, once = repeated_lines.read_once(files, ScanConfig(**options))
        return np.repeat(once, sources.lengths).tolist()

    assert decided() == [True, True, True]
    assert decided(source_fields=("site",)) == [False, False, False]
    with zipfile.ZipFile(tmp_path / "c" / "more.zip", "w") as archive:
        archive.writestr("a/book.txt", seed_simplified)
    assert decided() == [False, False, False, False]


def test_line_keys_of_a_whole_document_are_those_of_its_chapters_apart(
    hongloumeng_simplified: str, seed_with_ads: str
) -> None:
    from dedup.arrays import sorted_unique
    from dedup.models import Document
    from dedup.normalize import line_key_array
    from dedup.normalize.repeated_lines import chapter_line_keys
    from dedup.segment import split_chapters

    volumes = (
        "前言 ΣΑΣ İstanbul\n第一卷 開篇\n" + seed_with_ads + "\n第一回 入廟\r\n" + seed_with_ads
    )
    for text in (hongloumeng_simplified, volumes, volumes.replace("\n", "\n\n")):
        codes = code_points(text)
        chapters = split_chapters(Document("x.txt", "s", None, text))
        assert len(chapters) >= 2
        apart = []
        for chapter in chapters:
            body = line_key_array(codes[chapter.body_start : chapter.end])
            apart.append(sorted_unique(body[body >= 0]))
        together = chapter_line_keys(codes, chapters)
        assert len(together) > 20
        assert sorted(together.tolist()) == sorted(np.concatenate(apart).tolist())


@pytest.mark.parametrize("layout", ["files", "one-book", "with-own-ads"])
def test_a_chapter_a_source_carries_three_times_is_still_matched_elsewhere(
    tmp_path: Path, seed_with_ads: str, hongloumeng_simplified: str, layout: str
) -> None:
    """A source's repeated lines are learned per distinct chapter: three copies of one chapter
    do not make its lines "repeated", and a copy that still looks repeated keeps its text."""
    site_a, site_b = tmp_path / "site-a", tmp_path / "site-b"
    site_a.mkdir()
    site_b.mkdir()
    (site_b / "ch.txt").write_text(seed_with_ads, "utf-8")
    (site_a / "other.txt").write_text(hongloumeng_simplified, "utf-8")
    if layout == "files":
        for name in ("001.txt", "001 (1).txt", "001 (2).txt"):
            (site_a / name).write_text(seed_with_ads, "utf-8")
    elif layout == "one-book":
        book = "".join(f"第{n}章 重复\n{seed_with_ads}\n" for n in "一二三")
        (site_a / "book.txt").write_text(book, "utf-8")
    else:  # near copies, each with the scraper's own line: no longer one chapter
        for number in range(3):
            ad = f"本章由第{number}号镜像站转载，请收藏本站网址\n"
            (site_a / f"00{number}.txt").write_text(ad + seed_with_ads, "utf-8")
    report = dedup.scan([str(tmp_path)], jobs=1)
    across = [c for c in report.clusters if set(c.sources) == {"site-a", "site-b"}]
    b_passages = next(e.passages for e in report.inputs if e.source == "site-b")
    copies = [e for e in report.inputs if e.source == "site-a" and "other" not in e.path]
    assert min(e.passages for e in copies) >= b_passages
    assert len(across) >= b_passages, "every passage of site-b's chapter is found on site-a"


def test_every_long_stage_shows_its_progress(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = dedup.scan(samples, jobs=1, show_progress=True)
    dedup.write_report(report, tmp_path / "report", show_progress=True)
    shown = capsys.readouterr().err
    for stage, unit in (
        ("learn site lines", "file"),
        ("read+fingerprint", "file"),
        ("candidates", "band"),
        ("verify", "chunk"),
        ("align", "part"),
        ("document texts", "file"),
        ("writing report", "cluster"),
    ):
        assert stage in shown and f"{unit}/s" in shown, stage
    dedup.scan(samples, jobs=1)
    assert capsys.readouterr().err == "", "no bars unless asked"
