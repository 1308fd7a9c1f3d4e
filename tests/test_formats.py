"""Every input format and container, from real text; bad archives are skipped with reasons."""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import itertools
import json
import lzma
import zipfile
from pathlib import Path

import pytest

import dedup
from dedup import windows
from dedup.config import ScanConfig
from dedup.engine import member_texts, tasks
from dedup.models import Document
from dedup.read import discover_inputs, read_file
from dedup.read.decode import decode_bytes
from dedup.read.html import visible_text
from dedup.segment import split_chapters


def _read(path: Path, **options: object) -> list:  # type: ignore[type-arg]
    (found,), skipped = discover_inputs([str(path)])
    assert skipped == []
    return list(read_file(found, ScanConfig(**options)))  # type: ignore[arg-type]


def _chapters(hongloumeng: str) -> list[tuple[str, str]]:
    document = Document("h.txt", "s", None, hongloumeng)
    return [
        (c.title or "", hongloumeng[c.body_start : c.end].strip())
        for c in split_chapters(document)
        if c.index is not None
    ]


def test_csv_and_tsv_records(tmp_path: Path, hongloumeng_simplified: str) -> None:
    chapters = _chapters(hongloumeng_simplified)
    for name, delimiter in (("dump.csv", ","), ("dump.tsv", "\t")):
        buffer = io.StringIO()
        writer = csv.writer(buffer, delimiter=delimiter)
        writer.writerow(["id", "title", "content"])
        for number, (title, body) in enumerate(chapters):
            writer.writerow([f"hlm-{number}", title, body])
        (tmp_path / name).write_text(buffer.getvalue(), "utf-8")
        (result,) = _read(tmp_path / name)
        assert result.format == name[-3:]
        assert [d.text for d in result.documents] == [body for _, body in chapters]
        assert [d.record_id for d in result.documents] == ["hlm-0", "hlm-1", "hlm-2"]
        assert result.documents[1].title == chapters[1][0]


def test_parquet_records_with_source_field(tmp_path: Path, seed_traditional: str) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    parquet = pytest.importorskip("pyarrow.parquet")
    table = pyarrow.table(
        {"site": ["site-x", "site-y"], "body": [seed_traditional, seed_traditional[:900]]}
    )
    parquet.write_table(table, tmp_path / "dump.parquet")
    (result,) = _read(tmp_path / "dump.parquet", source_fields=("site",))
    assert [d.source for d in result.documents] == ["site-x", "site-y"]
    assert result.documents[0].text == seed_traditional


def _epub(chapters: list[tuple[str, str]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as book:
        book.writestr("mimetype", "application/epub+zip")
        book.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf"/></rootfiles></container>',
        )
        items = "".join(
            f'<item id="c{n}" href="text/c{n}.xhtml" media-type="application/xhtml+xml"/>'
            for n in range(len(chapters))
        )
        # The spine, not the manifest, gives the reading order.
        spine = "".join(f'<itemref idref="c{n}"/>' for n in reversed(range(len(chapters))))
        book.writestr(
            "OEBPS/content.opf",
            f'<package xmlns="http://www.idpf.org/2007/opf"><manifest>{items}</manifest>'
            f"<spine>{spine}</spine></package>",
        )
        for n, (title, body) in enumerate(chapters):
            paragraphs = "".join(f"<p>{line}</p>" for line in body.splitlines() if line.strip())
            book.writestr(
                f"OEBPS/text/c{n}.xhtml",
                f"<html><head><title>t</title><style>p{{color:red}}</style></head><body>"
                f"<h2>{title}</h2><script>alert('x')</script>{paragraphs}</body></html>",
            )
    return buffer.getvalue()


def test_epub_chapters_in_spine_order(tmp_path: Path, hongloumeng_simplified: str) -> None:
    chapters = _chapters(hongloumeng_simplified)
    (tmp_path / "book.epub").write_bytes(_epub(chapters))
    (result,) = _read(tmp_path / "book.epub")
    assert [d.title for d in result.documents] == [title for title, _ in reversed(chapters)]
    first = result.documents[-1].text
    assert "alert" not in first and "color" not in first
    assert "".join(chapters[0][1].split())[:200] in "".join(first.split())


def test_html_keeps_visible_text_only() -> None:
    markup = (
        "<html><head><title>第一回</title><script>var ad=1;</script></head><body>"
        "<div id='nav'>首页</div><h1>第一回 灵根育孕源流出</h1><p>诗曰：混沌未分天地乱，</p>"
        "<p>茫茫渺渺无人见。<br/>自从盘古破鸿蒙，</p><style>.x{}</style>"
        "<img src=x onerror=alert(1)></body></html>"
    )
    text, title = visible_text(markup)
    assert title == "第一回 灵根育孕源流出"
    assert (
        text
        == "首页\n第一回 灵根育孕源流出\n诗曰：混沌未分天地乱，\n茫茫渺渺无人见。\n自从盘古破鸿蒙，\n"
    )


@pytest.mark.parametrize(
    ("suffix", "compress"),
    [(".gz", gzip.compress), (".bz2", bz2.compress), (".xz", lzma.compress), (".zst", None)],
)
def test_compressed_files_read_like_the_plain_file(
    tmp_path: Path, seed_with_ads: str, suffix: str, compress: object
) -> None:
    data = seed_with_ads.encode("gb18030")
    if compress is None:
        zstandard = pytest.importorskip("zstandard")
        packed = zstandard.ZstdCompressor().compress(data)
    else:
        packed = compress(data)  # type: ignore[operator]
    (tmp_path / f"ch.txt{suffix}").write_bytes(packed)
    (result,) = _read(tmp_path / f"ch.txt{suffix}")
    assert result.skipped is None
    assert (result.format, result.encoding) == ("txt", "gb18030")
    assert result.documents[0].text == seed_with_ads


def test_truncated_gzip_keeps_its_intact_lines_with_a_warning(
    tmp_path: Path, seed_with_ads: str
) -> None:
    packed = gzip.compress(seed_with_ads.encode())
    (tmp_path / "ch.txt.gz").write_bytes(packed[: len(packed) // 2])
    (result,) = _read(tmp_path / "ch.txt.gz")
    assert result.skipped is None
    text = result.documents[0].text
    assert 0 < len(text) < len(seed_with_ads) and seed_with_ads.startswith(text)
    assert any("truncated" in warning for warning in result.warnings)
    (tmp_path / "ch.txt.gz").write_bytes(packed[:30])  # nothing intact: skipped, saying why
    (result,) = _read(tmp_path / "ch.txt.gz")
    assert result.skipped is not None and "truncated" in result.skipped.reason


def test_zip_bomb_and_unsafe_names_are_skipped(tmp_path: Path, seed_with_ads: str) -> None:
    archive = tmp_path / "dump.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as out:
        out.writestr("site/ok.txt", seed_with_ads)
        out.writestr("site/bomb.txt", b"\0" * 3_000_000)
        out.writestr("../escape.txt", seed_with_ads)
        out.writestr("/etc/abs.txt", seed_with_ads)
        out.writestr("site/cover.png", b"\x89PNG")
    results = {r.path.split("!/")[1]: r for r in _read(archive, max_file_mb=1)}
    assert results["site/ok.txt"].skipped is None
    assert results["site/ok.txt"].source == "site"
    assert "larger than 1 MB" in results["site/bomb.txt"].skipped.reason  # type: ignore[union-attr]
    assert "unsafe entry name" in results["../escape.txt"].skipped.reason  # type: ignore[union-attr]
    assert "unsafe entry name" in results["/etc/abs.txt"].skipped.reason  # type: ignore[union-attr]
    assert "not a supported format" in results["site/cover.png"].skipped.reason  # type: ignore[union-attr]
    assert not (tmp_path.parent / "escape.txt").exists()


def _structure(report: dedup.Report, strip: str) -> set[frozenset[tuple[str, str, int, int]]]:
    return {
        frozenset((m.source, m.path.split(strip, 1)[1], m.start, m.end) for m in cluster.members)
        for cluster in report.clusters
    }


@pytest.mark.parametrize("wrapped", [False, True])
def test_zip_of_a_dump_gives_the_same_clusters(
    samples: Path, tmp_path: Path, wrapped: bool
) -> None:
    archive = tmp_path / "dump.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for file in sorted(samples.rglob("*")):
            if file.is_file():
                inner = file.relative_to(samples).as_posix()
                out.write(file, f"corpus_samples/{inner}" if wrapped else inner)
    prefix = "dump.zip!/corpus_samples/" if wrapped else "dump.zip!/"
    unpacked = dedup.scan([str(samples)], jobs=1)
    zipped = dedup.scan([str(archive)], jobs=2)
    assert _structure(zipped, prefix) == _structure(unpacked, "corpus_samples/")
    assert len(zipped.clusters) == len(unpacked.clusters) > 50


def test_volumes_and_pages(hongloumeng_simplified: str) -> None:
    (first, body_one), (second, body_two), _ = _chapters(hongloumeng_simplified)
    half = len(body_one) // 2
    text = "\n".join(
        [
            "第一卷 梦幻",
            f"{first}（1）",
            body_one[:half],
            "（本章未完，请点击下一页继续阅读）",
            f"{first}（2）",
            body_one[half:],
            "第二卷 红尘",
            "本卷写贾府诸事。" * 20,
            second,
            body_two,
        ]
    )
    chapters = split_chapters(Document("x.txt", "s", None, text))
    assert [(c.index, c.title) for c in chapters] == [
        (0, first),
        (None, "第二卷 红尘"),
        (1, second),
    ]
    assert text[chapters[0].body_start : chapters[0].end].count(body_one[half : half + 50]) == 1


def test_a_long_file_without_line_breaks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, hongloumeng_simplified: str
) -> None:
    monkeypatch.setattr(windows, "BLOCK_CHARS", 4000)
    one_line = "".join(hongloumeng_simplified.split())
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "flat.txt").write_text(one_line, "utf-8")
    report = dedup.scan([str(tmp_path)], jobs=1)
    (entry,) = report.inputs
    assert entry.passages > len(one_line) / 900
    found = discover_inputs([str(tmp_path)])[0][0]
    passages = tasks.prepare_file(found, ScanConfig()).inputs[0].passages
    texts = member_texts.passage_texts(found, ScanConfig(), passages)
    assert texts == [one_line[passage.start : passage.end] for passage in passages]
    assert all(text and text == text.strip() for text in texts)
    covered = sum(p.end - p.start for p in passages)
    assert covered > 0.95 * len(one_line)
    for before, after in itertools.pairwise(passages):
        assert before.end <= after.start


def test_records_can_name_their_source(tmp_path: Path, seed_simplified: str) -> None:
    lines = [
        json.dumps({"site": "a.example", "content": seed_simplified}, ensure_ascii=False),
        json.dumps({"site": "b.example", "content": seed_simplified}, ensure_ascii=False),
    ]
    (tmp_path / "mixed.jsonl").write_text("\n".join(lines), "utf-8")
    report = dedup.scan([str(tmp_path / "mixed.jsonl")], jobs=1, source_fields=("site",))
    assert report.clusters
    assert {cluster.sources for cluster in report.clusters} == {("a.example", "b.example")}


def test_large_files_are_read_as_streams(
    monkeypatch: pytest.MonkeyPatch, samples: Path, tmp_path: Path
) -> None:
    """Text and JSONL inputs over the streaming size are decoded and segmented a piece at a
    time; offsets still index the whole file and the same duplicates are found."""
    from dedup.read import streams, txt

    whole = dedup.scan([str(samples)], jobs=1)
    monkeypatch.setattr(streams, "STREAM_BYTES", 4096)
    monkeypatch.setattr(txt, "PIECE_CHARS", 3000)
    streamed = dedup.scan([str(samples)], jobs=1)

    def linked(report: dedup.Report) -> set[tuple[str, ...]]:
        return {tuple(sorted({m.path for m in c.members})) for c in report.clusters}

    assert linked(streamed) == linked(whole)
    assert len(streamed.clusters) >= 0.9 * len(whole.clusters)
    chapters = {entry.path: entry.chapters for entry in whole.inputs}
    for entry in streamed.inputs:
        assert entry.chapters == chapters[entry.path], entry.path
        assert entry.encoding.replace("-le", "") == next(
            e.encoding for e in whole.inputs if e.path == entry.path
        ).replace("-le", "")
    mirror = next(e for e in streamed.inputs if e.path.endswith("dump.jsonl"))
    assert mirror.records == 3 and mirror.warnings[0].startswith(
        "record 2 (line 3): not valid JSON"
    )
    assert streamed.skipped == whole.skipped  # no file is taken for one that changed
    for cluster in streamed.clusters:
        for member in cluster.members:
            if member.record is None:
                text = decode_bytes(Path(member.path).read_bytes()).text
                assert text[member.start : member.end] == member.text
    # documents longer than a piece are read back whole, their parts joined
    long = [d for d in streamed.documents if d.end - d.start > 3000 and d.record is None]
    assert long and streamed.matches
    for document in long:
        text = decode_bytes(Path(document.path).read_bytes()).text
        assert text[document.start : document.end] == document.text


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_streamed_file_that_fails_part_way_is_skipped_not_fatal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, hongloumeng_simplified: str, jobs: int
) -> None:
    """Past the first piece of a large file, a byte that does not decode: the pass that learns
    repeated lines had let the error end the scan."""
    from dedup.read import streams

    monkeypatch.setattr(streams, "STREAM_BYTES", 4096)
    for site in ("a", "b"):
        (tmp_path / site).mkdir()
        (tmp_path / site / "book.txt").write_text(hongloumeng_simplified[:20_000], "utf-8")
    broken = tmp_path / "c" / "book.txt"
    broken.parent.mkdir()
    good = hongloumeng_simplified[:20_000].encode("utf-8")
    broken.write_bytes(good + b"\xff\xfe tail")
    report = dedup.scan([str(tmp_path)], jobs=jobs)
    assert [(entry.path, entry.reason.split(";")[0]) for entry in report.skipped] == [
        (broken.as_posix(), f"invalid utf-8 byte sequence at byte offset {len(good)}")
    ]
    assert report.clusters
    assert {cluster.sources for cluster in report.clusters} == {("a", "b")}


def test_reading_a_csv_leaves_the_csv_field_limit_as_it_was(
    tmp_path: Path, seed_simplified: str
) -> None:
    before = csv.field_size_limit()
    path = tmp_path / "dump.csv"
    with open(path, "w", encoding="utf-8", newline="") as out:
        csv.writer(out).writerows([["title", "text"], ["第一章", seed_simplified * 80]])
    (result,) = _read(path)
    assert result.documents[0].text == seed_simplified * 80  # a cell past the default limit
    assert csv.field_size_limit() == before
