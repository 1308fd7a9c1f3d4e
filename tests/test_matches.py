"""Document matches of a scan (dedup.documents, dedup.matches): scenes copied into other prose,
chapters split into pages, the seeds, determinism; on the repo's real text."""

from __future__ import annotations

import itertools
import json
import random
import re
import shutil
from pathlib import Path

import opencc
import pytest

import dedup
from dedup.normalize import NormalizeConfig, normalize
from tests.reports import report_json

HAN = re.compile(r"[\u4e00-\u9fff]")


def _chapters(text: str) -> list[str]:
    """The chapters of a 红楼梦 sample, headings included."""
    starts = [m.start() for m in re.finditer(r"^第[一二三四五六七八九十]+回", text, re.M)]
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


def _splice(host: str, scene: str, at: int) -> tuple[str, int]:
    """``scene`` inserted into ``host`` at the first Han character from ``at`` (mid-sentence)."""
    where = HAN.search(host, at)
    assert where is not None
    return host[: where.start()] + scene + host[where.start() :], where.start()


def _only_match(report: dedup.Report, a: Path, b: Path) -> dedup.Match:
    found = [
        m for m in report.matches if {Path(m.a.path).name, Path(m.b.path).name} == {a.name, b.name}
    ]
    assert len(found) == 1, [(m.a.path, m.b.path) for m in report.matches]
    return found[0]


def _sides(match: dedup.Match, host: Path) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    host_is_a = Path(match.a.path).name == host.name
    ours = [(s.a_start, s.a_end) if host_is_a else (s.b_start, s.b_end) for s in match.spans]
    theirs = [(s.b_start, s.b_end) if host_is_a else (s.a_start, s.a_end) for s in match.spans]
    return ours, theirs


@pytest.fixture(scope="module")
def scene_dump(tmp_path_factory: pytest.TempPathFactory, samples: Path) -> dict[str, object]:
    """A 红楼梦 scene copied into a chapter of 三國演義 mid-sentence (verbatim), one into the
    seed novel A lightly reworded (2% of its characters changed), and one in Traditional script
    into 西遊記; each host in a source of its own."""
    root = tmp_path_factory.mktemp("scenes")
    source = (samples / "site-qidian/hongloumeng.txt").read_bytes().decode("utf-8")
    (root / "books").mkdir()
    shutil.copy(samples / "site-qidian/hongloumeng.txt", root / "books/hongloumeng.txt")
    rng = random.Random(7)
    cases = {}
    hosts = {
        "verbatim": (samples / "site-classic/sanguo.txt").read_text("utf-8"),
        "reworded": (samples / "site-qidian/000.txt").read_text("utf-8"),
        "script": (samples / "site-classic/xiyouji.txt").read_text("utf-8")[:7000],
    }
    for number, (kind, host) in enumerate(hosts.items()):
        start = source.index("。", 9000 + 1500 * number) + 7  # mid-sentence, in 第二回
        scene = source[start : start + 413]
        copied = scene
        if kind == "reworded":
            chars = list(scene)
            for position in rng.sample([m.start() for m in HAN.finditer(scene)], 8):
                chars[position] = "甴"
            copied = "".join(chars)
        if kind == "script":
            copied = opencc.OpenCC("s2t").convert(scene)
        text, at = _splice(host, copied, len(host) // 2)
        path = root / f"site-{kind}" / f"{kind}.txt"
        path.parent.mkdir()
        path.write_text(text, "utf-8")
        cases[kind] = (path, (at, at + len(copied)), (start, start + len(scene)))
    return {"root": root, "cases": cases, "source": root / "books/hongloumeng.txt"}


@pytest.mark.parametrize("kind", ["verbatim", "reworded", "script"])
def test_a_scene_copied_into_other_prose_is_matched_with_its_characters(
    scene_dump: dict[str, object], kind: str
) -> None:
    report = dedup.scan([str(scene_dump["root"])], jobs=1)
    cases = scene_dump["cases"]
    assert isinstance(cases, dict)
    host, truth, source_truth = cases[kind]
    source = scene_dump["source"]
    assert isinstance(source, Path)
    match = _only_match(report, host, source)
    ours, theirs = _sides(match, host)
    (span,) = ours
    (source_span,) = theirs
    # Story characters from first to last: the ends are exact but for punctuation at the
    # scene's ends (and a changed character there, for the reworded copy).
    assert abs(span[0] - truth[0]) <= 20 and abs(span[1] - truth[1]) <= 20
    assert abs(source_span[0] - source_truth[0]) <= 20
    assert abs(source_span[1] - source_truth[1]) <= 20
    host_text = host.read_bytes().decode("utf-8")
    document = match.a if Path(match.a.path) == host else match.b
    assert host_text[document.start : document.end] == document.text
    assert (
        document.text[span[0] - document.start : span[1] - document.start]
        == (host_text[span[0] : span[1]])
    )
    assert match.coverage_a < 0.5 and match.coverage_b < 0.5  # a scene, not a copy
    assert not report.document_groups or all(
        host.as_posix() not in group.documents[0] for group in report.document_groups
    )


def test_the_verbatim_scene_span_is_exact(scene_dump: dict[str, object]) -> None:
    """Spliced mid-sentence with nothing changed: the span is the scene to the character,
    less the punctuation at its ends, which are not story characters."""
    report = dedup.scan([str(scene_dump["root"])], jobs=1)
    cases = scene_dump["cases"]
    assert isinstance(cases, dict)
    host, truth, _source_truth = cases["verbatim"]
    source = scene_dump["source"]
    assert isinstance(source, Path)
    (span,), _ = _sides(_only_match(report, host, source), host)
    text = host.read_bytes().decode("utf-8")
    scene = text[truth[0] : truth[1]]
    lead = len(scene) - len(scene.lstrip("，。；：、！？「」“”\r\n\u3000 "))
    tail = len(scene) - len(scene.rstrip("，。；：、！？「」“”\r\n\u3000 "))
    assert span == (truth[0] + lead, truth[1] - tail)


def test_a_scene_among_ideographs_past_u_ffff_is_matched_to_the_character(
    rare_ideographs_dump: Path, samples: Path
) -> None:
    """The alignment holds texts in UTF-16, where each of these ideographs takes two code
    units: the scene's span, in both documents, is still exactly its characters (less the
    punctuation at its ends), and each side's text is the original's there."""
    report = dedup.scan([rare_ideographs_dump], jobs=2)
    (match,) = report.matches
    host = rare_ideographs_dump / "site-host/sanguo.txt"
    source = rare_ideographs_dump / "site-rare/hongloumeng.txt"
    host_text, source_text = host.read_text("utf-8"), source.read_text("utf-8")
    original = (samples / "site-classic/sanguo.txt").read_text("utf-8")
    at = next(i for i, (x, y) in enumerate(zip(host_text, original, strict=False)) if x != y)
    scene = host_text[at : at + len(host_text) - len(original)]
    lead = len(scene) - len(scene.lstrip("，。；：、！？「」“”\r\n\u3000 "))
    tail = len(scene) - len(scene.rstrip("，。；：、！？「」“”\r\n\u3000 "))
    in_source = source_text.index(scene)
    assert sum(ord(c) > 0xFFFF for c in scene) >= 8
    assert sum(ord(c) > 0xFFFF for c in source_text[:in_source]) >= 200
    ours, theirs = _sides(match, host)
    assert ours == [(at + lead, at + len(scene) - tail)]
    assert theirs == [(in_source + lead, in_source + len(scene) - tail)]
    for document in (match.a, match.b):
        text = host_text if Path(document.path) == host else source_text
        assert text[document.start : document.end] == document.text


def test_passage_clusters_miss_what_matches_find(scene_dump: dict[str, object]) -> None:
    """The reason for matches: no passage cluster joins the verbatim host and its source."""
    report = dedup.scan([str(scene_dump["root"])], jobs=1)
    cases = scene_dump["cases"]
    assert isinstance(cases, dict)
    host = cases["verbatim"][0]
    joined = [c for c in report.clusters if {Path(m.path).name for m in c.members} >= {host.name}]
    assert not joined


def test_matches_do_not_depend_on_jobs_or_input_order(scene_dump: dict[str, object]) -> None:
    root = scene_dump["root"]
    assert isinstance(root, Path)
    folders = sorted(str(path) for path in root.iterdir())
    one = dedup.scan(folders, jobs=1)
    two = dedup.scan(list(reversed(folders)), jobs=2)
    assert one.matches and one.to_json() == two.to_json()


def test_a_chapter_split_into_pages_matches_the_whole_chapter(
    tmp_path: Path, hongloumeng_simplified: str
) -> None:
    first = _chapters(hongloumeng_simplified)[1]
    heading, body = first.split("\n", 1)
    half = body.index("。", len(body) // 2) + 1
    (tmp_path / "whole").mkdir()
    (tmp_path / "paged").mkdir()
    (tmp_path / "whole/ch2.txt").write_text(first, "utf-8")
    pages = [body[:half], body[half:]]
    for number, page in enumerate(pages, start=1):
        (tmp_path / f"paged/ch2-{number}.txt").write_text(f"{heading}（{number}）\n{page}", "utf-8")
    report = dedup.scan([str(tmp_path)], jobs=1)
    assert len(report.matches) == 2
    story = len(normalize(body, NormalizeConfig()).text)
    for number, match in enumerate(report.matches, start=1):
        page = match.b if "paged" in match.b.path else match.a
        assert Path(page.path).name == f"ch2-{number}.txt"
        page_coverage = match.coverage_b if page is match.b else match.coverage_a
        whole_coverage = match.coverage_a if page is match.b else match.coverage_b
        assert page_coverage > 0.99 and 0.4 < whole_coverage < 0.6
    total = sum(
        m.shared_chars_a if "whole" in m.a.path else m.shared_chars_b for m in report.matches
    )
    assert total >= story - 2 * 20
    assert not report.document_groups  # pages are matches of the chapter, not copies of it


def test_the_seeds_never_match(samples: Path) -> None:
    seeds = [
        samples / "site-qidian/000.txt",
        samples / "site-qidian/001.txt",
        samples / "site-gbk/002.txt",
    ]
    report = dedup.scan([str(path) for path in seeds], jobs=1)
    assert report.summary.documents >= 3 and not report.matches


def test_corpus_samples_documents(samples: Path) -> None:
    """The sample dump's copies are groups of two documents, each a pair of sources the README
    names; every match covers most of both sides."""
    report = dedup.scan([str(samples)], jobs=1)
    expected = {
        ("site-qidian/000.txt", "site-tw/000.txt"),
        ("site-gbk/002.txt", "site-mirror/dump.jsonl"),
        ("site-qidian/hongloumeng.txt", "site-tw/hongloumeng-big5.txt"),
        ("site-classic/xiyouji.txt", "site-mirror/dump.jsonl"),
    }

    def short(path: str) -> str:
        return (
            Path(path).relative_to(samples).as_posix()
            if Path(path).is_absolute()
            else (Path(path).as_posix().split("corpus_samples/", 1)[-1])
        )

    found = {tuple(sorted((short(m.a.path), short(m.b.path)))) for m in report.matches}
    assert found == {tuple(sorted(pair)) for pair in expected}
    assert all(min(m.coverage_a, m.coverage_b) > 0.9 for m in report.matches)
    assert [len(group.documents) for group in report.document_groups] == [2] * 7
    by_id = {document.id: document for document in report.documents}
    for match in report.matches:
        for document, spans in ((match.a, [(s.a_start, s.a_end) for s in match.spans]),
                                (match.b, [(s.b_start, s.b_end) for s in match.spans])):  # fmt: skip
            assert by_id[document.id] == document
            for start, end in spans:
                assert document.start <= start < end <= document.end
    data = json.loads(report.to_json())
    assert len(data["matches"]) == len(report.matches)


def test_passage_overlap_leaves_the_spans_as_they_are(scene_dump: dict[str, object]) -> None:
    """With --passage-overlap each passage repeats the end of the one before: a document is
    still its characters once, and the spans are the same."""
    root = scene_dump["root"]
    assert isinstance(root, Path)
    plain = dedup.scan([str(root)], jobs=1)
    overlapping = dedup.scan([str(root)], jobs=1, passage_overlap=100)
    assert [m.to_dict() for m in overlapping.matches] == [m.to_dict() for m in plain.matches]


def test_documents_in_an_archive_match_as_the_files_do(tmp_path: Path, samples: Path) -> None:
    """Entries of a zip are read back in the workers (not by their bytes): the same matches,
    under the entries' names."""
    import zipfile

    archive = tmp_path / "samples.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        for path in sorted(samples.rglob("*")):
            if path.is_file() and path.suffix != ".md":
                out.write(path, path.relative_to(samples).as_posix())
    zipped = dedup.scan([str(archive)], jobs=1)
    plain = dedup.scan([str(samples)], jobs=1)

    def shape(report: dedup.Report) -> list[tuple[object, ...]]:
        return [
            (Path(m.a.path).name, Path(m.b.path).name, m.a.start, m.b.start, m.coverage_a,
             m.coverage_b, tuple(s.to_dict().values() for s in m.spans))
            for m in report.matches
        ]  # fmt: skip

    assert zipped.matches and sorted(map(str, shape(zipped))) == sorted(map(str, shape(plain)))
    for match in zipped.matches:
        assert "samples.zip!/" in match.a.path and match.a.text


@pytest.fixture(scope="module")
def both_ways(mirror_dump: Path) -> tuple[dedup.Report, dedup.Report]:
    """The mirror dump scanned as a scan does (each copy aligned with the one its group
    keeps) and with every pair aligned."""
    return dedup.scan([mirror_dump], jobs=2), dedup.scan([mirror_dump], jobs=1, every_pair=True)


def test_copies_are_aligned_with_the_one_their_group_keeps(
    both_ways: tuple[dedup.Report, dedup.Report],
) -> None:
    linked, every = both_ways
    # fewer alignments and matches, the same groups and clusters
    assert linked.summary.document_pairs_aligned < 0.8 * every.summary.document_pairs_aligned
    assert len(linked.matches) < 0.8 * len(every.matches)
    assert len(linked.document_groups) >= 40
    assert linked.document_groups == every.document_groups
    assert linked.clusters == every.clusters
    # each match as aligning every pair finds it
    found = {(m.a.id, m.b.id): m for m in every.matches}
    assert all(found[(m.a.id, m.b.id)] == m for m in linked.matches)
    # each copy matched with the one its group keeps, and that match covers most of both
    matched = {frozenset((m.a.id, m.b.id)): m for m in linked.matches}
    for group in linked.document_groups:
        for document in group.documents:
            if document != group.representative:
                assert frozenset((document, group.representative)) in matched
    # the matches left out are between two documents of one group, or of two groups that a
    # match listed joins: documents of two groups are aligned once, not every copy of each
    group_of = {d: g.id for g in linked.document_groups for d in g.documents}

    def groups(match: dedup.Match) -> frozenset[str]:
        return frozenset(group_of.get(side.id, side.id) for side in (match.a, match.b))

    listed = {groups(m) for m in linked.matches}
    left_out = [m for pair, m in found.items() if frozenset(pair) not in matched]
    assert all(groups(m) in listed for m in left_out)
    assert sum(len(groups(m)) == 2 for m in left_out) > len(left_out) / 10


def test_copies_between_sources_count_every_pair_in_a_group(
    both_ways: tuple[dedup.Report, dedup.Report],
) -> None:
    from dedup.models import document_overlap
    from dedup.report.terminal import format_summary

    linked, every = both_ways
    overlap = document_overlap(linked)
    assert overlap == document_overlap(every)
    # site-a carries every page and site-c converts them all: each of site-c's pages is a
    # copy of site-a's, whether its match is with site-a's page or not
    pages_c = sum(1 for entry in linked.inputs if entry.source == "site-c")
    assert overlap[("site-a", "site-c")][0] >= 0.9 * pages_c
    shown = format_summary(linked)
    assert "documents shared between sources" in shown
    assert f"site-a ↔ site-c: {overlap[('site-a', 'site-c')][0]:,} copies" in shown


def test_every_pair_on_the_command_line(mirror_dump: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from dedup.cli import cli

    for name, extra in (("linked", []), ("every", ["--every-pair"])):
        result = CliRunner().invoke(
            cli, ["scan", str(mirror_dump), "-o", str(tmp_path / name), "-q", *extra]
        )
        assert result.exit_code == 0, result.output
    linked, every = (report_json(tmp_path / name) for name in ("linked", "every"))
    assert linked["options"]["every_pair"] is False and every["options"]["every_pair"] is True
    assert len(linked["matches"]) < len(every["matches"])
    assert linked["document_groups"] == every["document_groups"]


def test_matches_do_not_depend_on_how_pairs_are_chunked(
    samples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dedup import matches

    found = []
    for chunks in (1, 7, 500):
        monkeypatch.setattr(matches, "_CHUNKS", chunks)
        found.append(dedup.scan([samples], jobs=2, every_pair=True).matches)
    assert found[0] and found[0] == found[1] == found[2]


def test_pairs_are_chunked_whole_by_held_document_unless_each_piece_pays_for_its_table() -> None:
    import numpy as np

    from dedup.matches import _CHUNKS, _TABLE_COST, _chunks

    rng = np.random.default_rng(3)
    held = np.sort(rng.integers(0, 40, 3000))
    held[:1500] = 0  # one document held by half the pairs: cut into pieces
    order = np.arange(len(held))
    scanned_chars = rng.integers(1_000, 8_000, len(held))
    held_chars = np.full(len(held), 200_000)
    held_chars[held == 30] = 5_000_000  # a book whose table costs more than its pairs scan
    chunks = _chunks(order, held, scanned_chars, held_chars, _CHUNKS)
    assert np.array_equal(np.concatenate(chunks), order)
    assert 10 <= len(chunks) <= 2 * _CHUNKS  # enough to keep the threads busy to the end
    for chunk, after in itertools.pairwise(chunks):
        if held[chunk[-1]] == held[after[0]]:  # a document's pairs cut apart
            table = _TABLE_COST * held_chars[after[0]]
            assert scanned_chars[chunk][held[chunk] == held[after[0]]].sum() >= 2 * table
    assert sum(1 for chunk in chunks if 30 in held[chunk]) == 1


def test_two_groups_are_aligned_through_the_copies_that_share_text_where_the_kept_ones_do_not(
    samples: Path, tmp_path: Path
) -> None:
    # a chapter on two sites: site-a's copy (kept: the longest) has a paragraph of 三國演義
    # besides; site-b's has a scene of the next chapter, which site-c carries
    chapters = _chapters((samples / "site-qidian/hongloumeng.txt").read_text("utf-8"))
    chapter, following = chapters[0][:4000], chapters[1]
    scene = following[2000:2300]
    padding = (samples / "site-classic/sanguo.txt").read_text("utf-8")[1000:1500]
    copy_b, _at = _splice(chapter, scene, 2000)
    for site, text in (("site-a", chapter + padding), ("site-b", copy_b), ("site-c", following)):
        (tmp_path / site).mkdir()
        (tmp_path / site / "chapter.txt").write_text(text, "utf-8")
    linked, every = (dedup.scan([tmp_path], every_pair=flag) for flag in (False, True))
    (group,) = linked.document_groups
    assert list(group.sources) == ["site-a", "site-b"] and "site-a/" in group.representative
    # the kept copy shares nothing with site-c: site-b's copy is aligned with it instead
    sources = [{m.a.source, m.b.source} for m in linked.matches]
    assert sorted(map(sorted, sources)) == [["site-a", "site-b"], ["site-b", "site-c"]]
    (found,) = [m for m in linked.matches if m.b.source == "site-c"]
    assert found in every.matches
    ours, _theirs = _sides(found, tmp_path / "site-b/chapter.txt")
    assert sum(end - start for start, end in ours) >= 0.9 * len(scene)


@pytest.mark.parametrize("keep", ["first", "longest", "source:site-tw,site-mirror"])
def test_keep_order_of_the_documents_pairs_name_is_their_order_among_all(
    samples: Path, keep: str
) -> None:
    """The order ``--keep`` prefers is made for the documents a pair names (only those are
    ever in a group with another): among them it is their order among all the documents,
    and every other document comes after them."""
    import numpy as np

    from dedup.columns import HeldColumns, SpanTable
    from dedup.config import ScanConfig
    from dedup.documents import PassageAlignment, document_runs
    from dedup.engine.tasks import prepare_file
    from dedup.matches import keep_order
    from dedup.read import discover_inputs

    files, _skipped = discover_inputs([str(samples)])
    items = [item for file in files for item in prepare_file(file, ScanConfig(), {}).inputs]
    spans = SpanTable.concatenate([item.passages for item in items])
    runs = [len(item.passages.run_first) for item in items]
    documents = document_runs(
        spans,
        HeldColumns(
            np.repeat(np.arange(len(items), dtype=np.int32), runs), *spans.labels.columns()
        ),
        PassageAlignment.concatenate([item.alignment for item in items]),
    )
    count = len(documents)
    assert count > 10
    every = np.arange(count, dtype=np.int64)
    whole = keep_order(documents, spans, keep, np.column_stack((every[:-1], every[1:])))
    assert sorted(whole.tolist()) == list(range(count))
    named = np.array(random.Random(keep).sample(range(count), count // 2), dtype=np.int64)
    pairs = np.sort(named.reshape(-1, 1)[: len(named) // 2 * 2].reshape(-1, 2), axis=1)
    some = keep_order(documents, spans, keep, pairs)
    inside = np.unique(pairs)
    assert sorted(some[inside].tolist()) == list(range(len(inside)))
    assert np.argsort(some[inside]).tolist() == np.argsort(whole[inside]).tolist()
    outside = np.setdiff1d(every, inside)
    assert len(outside) and (some[outside] >= len(inside)).all()
