"""Records passed between stages: the span table a scan keeps for every passage."""

from __future__ import annotations

import json
import tracemalloc
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dedup.columns import DocumentKeys, ScanNames, SpanTable, Strings, int32_column
from dedup.config import ScanConfig
from dedup.engine import tasks
from dedup.models import DocumentKey, InputFiles, PackedPaths, PassageSpan
from dedup.read import discover_inputs
from dedup.spool import RowSpool


def _spans_of(folder: Path) -> list[SpanTable]:
    files, _skipped = discover_inputs([str(folder)])
    return [item.passages for f in files for item in tasks.prepare_file(f, ScanConfig()).inputs]


def test_a_span_table_gives_back_the_spans_it_was_made_of(samples: Path) -> None:
    tables = _spans_of(samples)
    spans = [span for table in tables for span in table]
    assert len(spans) > 50
    assert all(isinstance(span, PassageSpan) for span in spans)
    # Chapters with and without a number, and titles, survive the columns.
    assert {span.chapter is None for span in spans} == {True, False}
    assert len({span.title for span in spans}) > 3
    assert list(SpanTable.of(spans)) == spans


def test_concatenated_tables_share_documents_and_titles(samples: Path) -> None:
    tables = _spans_of(samples)
    joined = SpanTable.concatenate([*tables, *tables])
    spans = [span for table in tables for span in table]
    assert list(joined) == spans + spans
    assert len(joined.documents) == len({(s.source, s.path, s.record) for s in spans})
    assert joined[-1] == spans[-1] and joined[len(spans)] == spans[0]
    assert list(SpanTable.concatenate([])) == []


def test_a_chapter_cut_between_two_tables_is_one_document_with_its_title(samples: Path) -> None:
    """A large file comes in pieces, a table each, and a chapter may go on from one into the
    next: joined, the run after the cut has the document and the title of the run before
    it (so the two are one document), though the tables' titles are not numbered again."""
    for table in _spans_of(samples):
        sizes = table.run_sizes()
        titled = [
            run
            for run in range(len(sizes))
            if sizes[run] > 1 and table.titles[int(table.run_title[run])] is not None
        ]
        if titled:
            break
    else:
        raise AssertionError("no titled chapter of two passages in the samples")
    cut = int(table.run_first.column()[titled[-1]]) + 1
    halves = [table.take(np.arange(cut)), table.take(np.arange(cut, len(table)))]
    joined = SpanTable.concatenate(halves)
    assert list(joined) == list(table)
    after = int(np.searchsorted(joined.run_first.column(), cut))
    assert joined.run_first.column()[after] == cut
    assert joined.run_title[after] == joined.run_title[after - 1]
    assert joined.run_document[after] == joined.run_document[after - 1]
    assert len(joined.documents) == len(table.documents)


def test_a_table_holds_a_document_chapter_and_title_once_a_run_of_passages(
    samples: Path,
) -> None:
    tables = _spans_of(samples)
    spans = [span for table in tables for span in table]
    joined = SpanTable.concatenate(tables)

    def place(span: PassageSpan) -> tuple[object, ...]:
        return span.path, span.record, span.chapter, span.title

    # what a scan keeps of every passage is its start and end: the rest once a chapter
    runs = 1 + sum(place(one) != place(other) for one, other in pairwise(spans))
    assert len(joined.run_first) == runs < len(spans) / 5
    rows = np.arange(len(joined))
    assert [joined.documents[d] for d in joined.document_of(rows).tolist()] == [
        (s.source, s.path, s.record, s.record_id) for s in spans
    ]
    # rows taken in any order keep their own run's document, chapter and title
    backwards = rows[::-3]
    assert list(joined.take(backwards)) == [spans[i] for i in backwards.tolist()]
    # A run's document, chapter and title are four bytes each (the driver holds a run or
    # two a record of a dump of a record a page); past them, an error rather than wrapped.
    for table in (joined, joined.take(backwards), *tables):
        columns = (table.run_document, table.run_chapter, table.run_title)
        assert {column.dtype for column in columns} == {np.dtype(np.int32)}
    with pytest.raises(OverflowError):
        int32_column(np.array([0, 2**31], dtype=np.int64))
    assert int32_column(np.array([-1, 2**31 - 1])).tolist() == [-1, 2**31 - 1]


def test_rows_taken_from_a_table_keep_their_spans_and_become_passages(samples: Path) -> None:
    table = SpanTable.concatenate(_spans_of(samples))
    rows = np.arange(3, len(table), 7)
    taken = table.take(rows)
    expected = [table[i] for i in rows.tolist()]
    assert list(taken) == expected == table.rows(rows)
    assert len(taken.documents) < len(table.documents)  # only the documents those rows use
    # each held by a document of its own span, whose text is its text
    holders = [span.as_document(0, f"{n}甲乙丙" * span.end) for n, span in enumerate(expected)]
    passages = table.passages(rows, holders)
    texts = [h.text[: s.end - s.start] for s, h in zip(expected, holders, strict=True)]
    assert passages == [
        span.with_text(text, holder.id)
        for span, text, holder in zip(expected, texts, holders, strict=True)
    ]
    assert [passage.text for passage in passages] == texts


class _EndsElsewhere:
    """Starts and ends kept apart from the table, as a cluster's workers keep them; counts
    the rows looked up."""

    def __init__(self, table: SpanTable) -> None:
        self.table, self.looked_up = table, 0

    def __len__(self) -> int:
        return len(self.table)

    def ends_of(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.looked_up += len(rows)
        return self.table.start[rows], self.table.end[rows]

    def let_go(self) -> None:
        pass


def test_a_table_whose_starts_and_ends_are_kept_elsewhere_looks_them_up(samples: Path) -> None:
    parts = _spans_of(samples)
    whole = SpanTable.concatenate(parts)
    # Each file's spans come back counted, without their starts and ends (tasks.without_kept).
    counted = SpanTable.concatenate([part.without_ends() for part in parts])
    assert len(counted) == len(whole) and not len(counted.start) and not len(counted.end)
    assert np.array_equal(counted.run_first.column(), whole.run_first.column())
    with pytest.raises(LookupError):
        counted.ends_of(np.array([0]))
    with pytest.raises(ValueError, match="without"):
        SpanTable.concatenate([parts[0].without_ends(), parts[1]])
    elsewhere = _EndsElsewhere(whole)
    held = counted.ends_held_by(elsewhere)
    rows = np.arange(len(whole))[::-5]
    assert list(held.take(rows)) == list(whole.take(rows)) == held.rows(rows)
    assert held.row_fields(rows) == whole.row_fields(rows)
    assert list(held) == list(whole)
    assert elsewhere.looked_up > 0
    with pytest.raises(ValueError, match="held for a table"):
        counted.ends_held_by(_EndsElsewhere(parts[0]))


def test_a_cut_passage_is_the_passage_it_equals_but_holds_no_text_of_its_own(
    seed_simplified: str,
) -> None:
    import pickle
    from dataclasses import FrozenInstanceError

    from dedup.models import CutPassage, Passage, made_in_bulk

    span = PassageSpan("site", "a.txt", None, 2, "第三章", 100, 400)
    holder = span.as_document(250, seed_simplified[:1000])
    inner = PassageSpan("site", "a.txt", None, 2, "第三章", 150, 260)
    columns = {
        "source": ["site"], "path": ["a.txt"], "record": [None], "chapter": [2],
        "title": ["第三章"], "start": [150], "end": [260], "record_id": [None],
        "id": [inner.id], "document": [holder.id], "holder": [holder],
    }  # fmt: skip
    (cut,) = made_in_bulk(CutPassage, *(columns[name] for name in CutPassage.SLOTS))
    plain = inner.with_text(seed_simplified[50:160], holder.id)
    assert cut.text == plain.text and len(cut.text) == 110
    assert cut == plain and plain == cut and hash(cut) == hash(plain)
    assert cut != inner.with_text(seed_simplified[51:161], holder.id)
    assert not hasattr(cut, "__dict__")  # slots only: the text is nowhere but in the holder
    again = pickle.loads(pickle.dumps(cut))
    assert type(again) is Passage and again == cut
    with pytest.raises((FrozenInstanceError, AttributeError)):
        cut.start = 0  # type: ignore[misc]


def test_members_are_written_as_json_writes_them_whatever_their_names_and_text(
    seed_simplified: str,
) -> None:
    """Members' JSON is formatted by hand (report.json and clusters.jsonl have them by the
    hundred thousand): a name or text with quotes, backslashes, control characters, line
    separators and astral characters comes out as json.dumps writes it."""
    from dedup.models import members_json

    awkward = 'a "quoted"\\ name\t\x01\u2028\U0001f600.txt'
    text = '"引号"\\ 與 \n\x7f\u2029' + seed_simplified[:200] + "\U00020000"
    span = PassageSpan(awkward, awkward, 3, None, "\u0000", 10, 10 + len(text))
    member = span.with_text(text, PassageSpan(awkward, awkward, 3, None, None, 0, 999).id)
    plain = PassageSpan("site", "a.txt", None, 0, "第一章", 0, 120)
    members = [member, plain.with_text(seed_simplified[:120], plain.id)]
    for kind in ("none", "excerpt", "full"):
        made = json.dumps(
            [m.to_dict(kind) for m in members], ensure_ascii=False, separators=(",", ":")
        )
        assert members_json(members, kind) == made  # type: ignore[arg-type]
        assert json.loads(made)[0]["id"] == member.id
    assert members_json([], "excerpt") == "[]"


def test_passages_and_pairs_made_in_bulk_are_the_dataclasses_own(seed_simplified: str) -> None:
    from dataclasses import FrozenInstanceError, astuple, fields

    from dedup.models import Pair, Passage, made_in_bulk

    text = seed_simplified[:300]
    for cls, rows in (
        (
            Passage,
            [
                # fields in order: where it is (PassageSpan's), then id, text and document
                (
                    "site",
                    "a.txt",
                    3,
                    7,
                    "第八章",
                    0,
                    300,
                    "x",
                    "a.txt#3:0-300",
                    text,
                    "a.txt#3:0-900",
                ),
                (
                    "other",
                    "b.txt",
                    None,
                    None,
                    None,
                    5,
                    9,
                    None,
                    "b.txt:5-9",
                    text[:4],
                    "b.txt:5-9",
                ),
            ],
        ),
        (
            Pair,
            [
                ("a.txt:0-300", "b.txt:5-305", 0.75, 0.875, 0.7421875, 299),
                ("c.txt:0-9", "d.txt:1-10", 1.0, 1.0, 1.0, 9),
            ],
        ),
    ):
        columns = list(zip(*rows, strict=True))
        made = made_in_bulk(cls, *columns)
        names = [f.name for f in fields(cls)]
        references = [cls(**dict(zip(names, values, strict=True))) for values in rows]
        assert [type(one) for one in made] == [cls, cls]
        assert made == references and list(map(hash, made)) == list(map(hash, references))
        for one, values in zip(made, rows, strict=True):
            assert astuple(one) == values == tuple(getattr(one, f.name) for f in fields(cls))
            with pytest.raises(FrozenInstanceError):
                setattr(one, fields(cls)[0].name, "changed")
        assert made_in_bulk(cls, *([] for _field in fields(cls))) == []
        with pytest.raises(TypeError):
            made_in_bulk(cls, *columns, ["one field too many", ""])
        with pytest.raises(ValueError):
            made_in_bulk(cls, *columns[:-1], [rows[0][-1]])  # one value short


def test_a_pair_table_is_the_sequence_of_its_pairs(mirror_dump: Path) -> None:
    """A cluster's pairs are held as columns; read as a sequence they are the Pairs a scan
    verified, the rows reports write are theirs, and a cluster given Pairs keeps their table."""
    import dataclasses

    import dedup
    from dedup.models import Pair, PairTable

    report = dedup.scan([str(mirror_dump)], jobs=2)
    cluster = max(report.clusters, key=lambda c: len(c.pairs))
    table = cluster.pairs
    assert isinstance(table, PairTable) and len(table) >= 3
    pairs = list(table)
    assert all(isinstance(pair, Pair) for pair in pairs)
    assert table[0] == pairs[0] and table[-1] == pairs[-1] and list(table[1:3]) == pairs[1:3]
    with pytest.raises(IndexError):
        table[len(table)]
    ids = [member.id for member in cluster.members]
    for pair, row in zip(pairs, table.listed(), strict=True):
        assert (ids[row[0]], ids[row[1]]) == (pair.a, pair.b)
        assert row[2:] == pair.values()
    assert table == tuple(pairs) and table == PairTable.of(pairs, ids)
    assert hash(table) == hash(PairTable.of(pairs, ids))
    rebuilt = dataclasses.replace(cluster, pairs=tuple(pairs))  # type: ignore[arg-type]
    assert isinstance(rebuilt.pairs, PairTable) and rebuilt == cluster
    assert rebuilt.to_dict() == cluster.to_dict()
    # 40 bytes a pair, not an object of 80 or more
    assert sum(column.nbytes for column in dataclasses.astuple(table)[1:]) == 40 * len(table)
    # the rows' JSON as json.dumps writes them, and the clusters' as report.json and
    # clusters.jsonl have them, however many pairs a cluster has
    tables = [one.pairs for one in report.clusters]
    each = [json.dumps(one.listed(), separators=(",", ":")) for one in tables]
    assert PairTable.rows_json_of(tables) == each and [t.rows_json() for t in tables] == each
    assert PairTable.rows_json_of([]) == []
    for one in report.clusters:
        for text in ("none", "excerpt", "full"):
            for with_pairs in (True, False):
                made = json.dumps(
                    one.to_dict(text, with_pairs), ensure_ascii=False, separators=(",", ":")
                )
                assert one.to_json(text, with_pairs) == made


def test_pair_rows_json_rounds_as_python_does() -> None:
    """Scores at and around half way between two 4-decimal values (where multiplying by 10**4
    can round otherwise than ``round``), the ends of [0, 1], and a score outside it."""
    from dedup.models import PairTable

    steps = np.arange(100_001) / 100_000
    scores = np.concatenate((steps, (np.arange(100_000) + 0.5) / 100_000, [0.12345, 0.99995]))
    rows = len(scores)
    numbers = np.arange(rows, dtype=np.int32)
    for jaccard in (scores, np.append(scores[1:], 1.5)):
        table = PairTable(
            (), numbers, numbers + 1, jaccard, scores[::-1].copy(), np.sqrt(scores),
            np.arange(rows, dtype=np.int64),
        )  # fmt: skip
        assert table.rows_json() == json.dumps(table.listed(), separators=(",", ":"))
        few = PairTable(
            (), numbers[:150], numbers[:150] + 1, jaccard[-150:].copy(), scores[:150].copy(),
            np.sqrt(scores[-150:]), np.arange(150, dtype=np.int64),
        )  # fmt: skip
        assert few.rows_json() == json.dumps(few.listed(), separators=(",", ":"))
    empty = PairTable(
        (),
        *(np.zeros(0, dtype=t) for t in (np.int32,) * 2 + (float,) * 3),
        np.zeros(0, dtype=np.int64),
    )
    assert empty.rows_json() == "[]"


def test_a_match_s_spans_are_the_sequence_of_its_shared_spans(mirror_dump: Path) -> None:
    """A match's spans are held as columns; read as a sequence they are SharedSpans, in the
    order of the match's first document (also where the aligned pair had its documents the
    other way round), within both documents, and a match given SharedSpans keeps their table."""
    import dataclasses
    import pickle

    import dedup
    from dedup.models import SharedSpan, SharedSpans

    report = dedup.scan([str(mirror_dump)], jobs=2)
    assert len(report.matches) >= 3
    for match in report.matches:
        spans = list(match.spans)
        assert isinstance(match.spans, SharedSpans) and spans
        assert all(isinstance(span, SharedSpan) for span in spans)
        assert [s.a_start for s in spans] == sorted(s.a_start for s in spans)
        for span in spans:
            assert match.a.start <= span.a_start < span.a_end <= match.a.end
            assert match.b.start <= span.b_start < span.b_end <= match.b.end
        assert match.identical_chars == sum(s.identical_chars for s in spans) > 0
        assert match.to_dict()["spans"] == [s.to_dict() for s in spans]
    match = max(report.matches, key=lambda m: len(m.spans))
    table = match.spans
    spans = list(table)
    assert len(table) >= 2 and table[0] == spans[0] and table[-1] == spans[-1]
    with pytest.raises(IndexError):
        table[len(table)]
    rebuilt = dataclasses.replace(match, spans=tuple(table))  # type: ignore[arg-type]
    assert isinstance(rebuilt.spans, SharedSpans) and rebuilt == match
    assert hash(rebuilt) == hash(match) and rebuilt.to_dict() == match.to_dict()
    # 40 bytes a span, in one table the scan's matches share; pickled with its own rows only
    assert table.numbers().nbytes == 40 * len(table)
    assert len({id(m.spans.table) for m in report.matches}) == 1
    alone = pickle.loads(pickle.dumps(table))
    assert alone == table and len(alone.table) == len(table) < len(table.table)


def _keys_of(folder: Path) -> list[DocumentKey]:
    """Keys as a dump has them: whole files (no record), and records of files, some with an
    id (a chapter's title of the real text) and some without."""
    files, _skipped = discover_inputs([str(folder)])
    titles = [span.title or "" for table in _spans_of(folder) for span in table]
    keys: list[DocumentKey] = [(f.source, f.path, None, None) for f in files]
    for n, title in enumerate(titles[:60]):
        file = files[n % len(files)]
        keys.append((file.source, file.path, n, None if n % 3 == 0 else title))
    return keys


def test_document_keys_as_columns_are_the_keys_they_were_made_of(samples: Path) -> None:
    keys = _keys_of(samples)
    assert {key[3] for key in keys} >= {None, ""} and len({key[3] for key in keys}) > 4
    columns = DocumentKeys.of(keys)
    assert list(columns) == keys and [columns[i] for i in range(len(keys))] == keys
    picked = np.array([5, 0, 40, 5, len(keys) - 1], dtype=np.int64)
    assert columns.columns(picked) == [keys[i] for i in picked.tolist()]
    assert list(columns.take(picked)) == [keys[i] for i in picked.tolist()]
    # an empty id is not a missing one
    ids = Strings.of([key[3] for key in keys])
    assert ids.values() == [key[3] for key in keys]
    assert list(Strings.concatenate([ids, Strings.of([]), ids]).values()) == 2 * ids.values()


def test_strings_all_missing_are_held_in_a_few_bytes_and_read_back() -> None:
    """A dump whose records have no id of their own keeps no bound nor flag a record (a
    dump of a record a page: millions), made so, joined, or unpickled from a worker and
    joined; a table with one string is held as strings are."""
    import pickle
    import tracemalloc

    from_worker = pickle.loads(pickle.dumps(Strings.of([None] * 1000)))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        missing = Strings.of([None] * 1_000_000)
        joined = Strings.concatenate([missing, Strings.of([None] * 10), from_worker, missing])
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 10_000
    assert len(joined) == 2_001_010 and joined[0] is None and joined[len(joined) - 1] is None
    assert joined.values(np.array([0, 1_000_005, 2_001_009])) == [None, None, None]
    assert joined.take(np.array([3, 4])).values() == [None, None]
    mixed = Strings.concatenate([Strings.of([None, None]), Strings.of(["甲", None, ""])])
    assert mixed.values() == [None, None, "甲", None, ""] and mixed[2] == "甲"


def test_documents_that_are_no_record_hold_their_records_in_a_few_bytes() -> None:
    """The documents of text files (no record: a dump of a page a file has millions) keep
    no record number each, made so, joined, named in a scan's names after a worker's table
    is unpickled, or taken; a table where one document is a record keeps them all, and
    each key reads back as it was."""
    import pickle

    pages = [("甲站", f"书/{page:06}.txt", None, None) for page in range(200_000)]
    from_worker = pickle.loads(pickle.dumps(DocumentKeys.of(pages[:1000])))
    warm = ScanNames()  # what the first join loads and makes once (a block written)
    DocumentKeys.concatenate([DocumentKeys.of(pages[:20_000]).named_in(warm, 0), from_worker])
    names = ScanNames()
    tracemalloc.start()
    try:
        made = DocumentKeys.of(pages)
        before = tracemalloc.get_traced_memory()[0]
        joined, places = DocumentKeys.concatenate(
            [made.named_in(names, 0), from_worker.named_in(names, 1)]
        )
        del places  # where each part's keys are: the caller's, for a while
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # the names' rows in memory (a block), the source and path (four bytes each); not a
    # record's eight
    assert held < 8.5 * len(joined) + 2 * RowSpool.block_bytes
    assert made.record.strides == joined.record.strides == (0,)
    assert list(joined) == pages + pages[:1000]
    taken = joined.take(np.array([5, 200_500]))
    assert taken.record.strides == (0,) and list(taken) == [pages[5], pages[500]]
    records = [("乙站", "dump.jsonl", record, None) for record in range(3)]
    mixed, _places = DocumentKeys.concatenate([made, DocumentKeys.of(records)])
    assert mixed.record.strides == (8,) and mixed.record.flags.writeable
    assert list(mixed) == pages + records
    assert list(mixed.take(np.array([0, 200_001]))) == [pages[0], records[1]]


@pytest.mark.parametrize("far", [0, 1 << 33])
@pytest.mark.parametrize("cuts", [(0,), (10, 11, 40), (1, 2, 3, 30)])
def test_document_keys_joined_hold_each_document_once(
    samples: Path, cuts: tuple[int, ...], far: int
) -> None:
    """A document in two parts (a large file's pieces: the last of one part the first of the
    next; or a part joined twice) is one, in the order first seen; each part's keys are found
    where the joined keys hold them (``far``: record numbers past 32 bits)."""
    keys = [
        (source, path, None if record is None else record + far, record_id)
        for source, path, record, record_id in _keys_of(samples)
    ]
    bounds = [0, *cuts, len(keys)]
    # each part from its cut to one past the next: the boundary's document in both
    parts = [keys[low : min(high + 1, len(keys))] for low, high in pairwise(bounds)]
    parts.append(parts[0])
    joined, places = DocumentKeys.concatenate([DocumentKeys.of(part) for part in parts])
    assert list(joined) == list(dict.fromkeys(key for part in parts for key in part))
    for part, place in zip(parts, places, strict=True):
        assert joined.columns(place) == part
    # A document's source and path are four bytes each (the driver holds a key a record of
    # a dump of a record a page), its record eight (a file's records may pass 32 bits).
    for table in (joined, joined.take(places[0]), DocumentKeys.of(parts[0])):
        assert table.source.dtype == table.path.dtype == np.int32
        assert table.record.dtype == np.int64
    # Named in one scan's names (the driver's tables, a file's pieces), the parts join to
    # the same keys without being numbered again; a table taken holds only its own names.
    names = ScanNames()
    named = [DocumentKeys.of(part).named_in(names, 0) for part in parts]
    assert [list(table) for table in named] == parts
    joined_here, places_here = DocumentKeys.concatenate(named)
    assert joined_here.names is names and list(joined_here) == list(joined)
    assert [place.tolist() for place in places_here] == [place.tolist() for place in places]
    taken = joined_here.take(places_here[0])
    assert taken.columns() == parts[0] and isinstance(taken.names, tuple)
    assert sorted(taken.names) == sorted({n for key in parts[0] for n in key[:2]})
    assert taken.source.dtype == taken.path.dtype == np.int32


def test_scan_names_hold_each_name_once_and_paths_packed(samples: Path) -> None:
    """The scan's names: each file's paths numbered among its own, the sources among all;
    the same name comes back as the same number, every name reads back as it came, and a
    crawl's paths (a few folders, many pages) are held in a few dozen bytes each rather than
    the some 190 of a string."""
    keys = _keys_of(samples)
    names = ScanNames()
    first = DocumentKeys.of(keys).named_in(names, 0)
    again = DocumentKeys.of(keys).named_in(names, 0)
    assert list(first) == list(again) == keys
    assert np.array_equal(first.path, again.path) and np.array_equal(first.source, again.source)
    assert sorted(names) == sorted({n for key in keys for n in key[:2]})
    # Another file: its paths are its own (no other file has them), its sources shared.
    other = [
        (source, f"另一站/{path}", record, record_id) for source, path, record, record_id in keys
    ]
    second = DocumentKeys.of(other).named_in(names, 1)
    assert list(second) == other and np.array_equal(second.source, first.source)
    assert not set(second.path.tolist()) & set(first.path.tolist())
    # A name that is a document's source in one table and a path in another is both.
    odd = DocumentKeys.of([(keys[0][1], "甲站/第一回.txt", None, None)]).named_in(names, 2)
    assert list(odd) == [(keys[0][1], "甲站/第一回.txt", None, None)]
    pages = [
        f"{folder}/{page:05}.txt"
        for folder in sorted(set(k[1] for k in keys))
        for page in range(5000)
    ]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for number, page in enumerate(pages):
            DocumentKeys.of([("甲站", page, None, None)]).named_in(names, 3 + number)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 40 * len(pages)
    assert list(names[-len(pages) :]) == pages


def test_packed_paths_read_back_as_appended() -> None:
    """Paths appended come back equal, whatever they hold: a folder many share, one of their
    own, none, a name that is not UTF-8 (a surrogate, as ``os.fsdecode`` makes), an empty
    one."""
    paths = [
        "起点/斗破苍穹/第一章.txt",
        "起点/斗破苍穹/第二章.txt",
        "/tmp/站/a/b/",
        "dump.jsonl",
        "",
        "bad/\udcff名.txt",
        "起点/斗破苍穹/第一章.txt",
        "archive.zip/內文/第三回.txt",
    ]
    packed = PackedPaths(paths)
    assert list(packed) == paths and len(packed) == len(paths)
    assert [packed[row] for row in range(-len(paths), 0)] == paths
    assert packed[2:5] == tuple(paths[2:5])
    assert packed.append("新/路径") == len(paths) and packed[-1] == "新/路径"
    with pytest.raises(IndexError):
        packed[len(paths) + 1]


def test_packed_paths_in_thousands_of_folders_hold_no_folder_in_memory() -> None:
    """A crawl's folders (a book's each, by the thousand) are rows on disk, as the paths are:
    the table holds a few bytes a path whatever the folders, and reads every path back,
    those of folders met again far apart (past the folders a new path is looked up among)
    and in turn (a document's source between its pages, as ``ScanNames`` has them)."""
    books = [f"/抓取/起点中文网/第{book:04}本·斗破苍穹番外篇/" for book in range(3000)]
    paths = [f"{book}第{page}章.txt" for book in books for page in range(2)]
    paths += [f"{books[book]}又一章.txt" for book in range(0, 3000, 7)]  # met again
    paths += [name for book in books[:100] for name in (f"{book}附录.txt", "起点中文网")]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        packed = PackedPaths(paths)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # A folder's string alone is some 150 bytes; two spools' blocks being filled, 128 KiB.
    assert held < 2 * RowSpool.block_bytes + 8 * len(paths)
    assert list(packed) == paths
    assert [packed[row] for row in range(len(paths) - 1, -1, -97)] == paths[::-1][::97]


def _key(source: str, path: str, record: int | None) -> DocumentKey:
    """A document's key, its id made from its record, as a record's own id field is."""
    return source, path, record, None if record is None else f"第{record}章"[: record % 4]


KEYS = st.builds(
    _key,
    st.sampled_from(["甲站", "site-b"]),
    st.sampled_from(["甲站/第一回.txt", "dump.jsonl", "c"]),
    st.none() | st.integers(0, 5) | st.integers(1 << 32, (1 << 32) + 2),
)


@settings(deadline=None)
@given(st.lists(st.lists(KEYS, unique=True, max_size=8), max_size=6))
def test_joined_document_keys_are_the_keys_of_all_parts_each_once(
    parts: list[list[DocumentKey]],
) -> None:
    """Whatever the parts (each holds a document once, as a table does), the joined keys
    are every part's, each once in the order first seen, and each part's are where the
    joined keys hold them."""
    joined, places = DocumentKeys.concatenate([DocumentKeys.of(part) for part in parts])
    assert list(joined) == list(dict.fromkeys(key for part in parts for key in part))
    assert [joined.columns(place) for place in places] == parts
    # the same, the parts named in one scan's names first (as a file's pieces are)
    names = ScanNames()
    named, named_places = DocumentKeys.concatenate(
        [DocumentKeys.of(part).named_in(names, 0) for part in parts]
    )
    assert list(named) == list(joined)
    assert [place.tolist() for place in named_places] == [place.tolist() for place in places]
    # a text (a path's record) numbered alike in every document of it, and only there
    texts = [(path, record) for _source, path, record, _id in joined]
    numbered = set(zip(joined.texts().tolist(), texts, strict=True))
    assert len(numbered) == len(set(texts)) == len({number for number, _text in numbered})


def test_input_files_as_columns_are_the_entries_they_were_made_of(
    samples: Path, tmp_path: Path, seed_simplified: str, seed_traditional: str
) -> None:
    """A scan's entries of its files, held as columns, read back as the entries appended:
    normalization counts in each entry's own order, warnings, passages a source a record
    names, paths held packed."""
    records = [
        {"site": "a", "text": seed_simplified[:2000]},
        {"site": "b", "text": seed_traditional[:2000] + "\udc00"},  # a warning
    ]
    (tmp_path / "records.jsonl").write_text(
        "".join(json.dumps(record) + "\n" for record in records), "utf-8"
    )
    files = [*discover_inputs([str(samples)])[0], *discover_inputs([str(tmp_path)])[0]]
    config = ScanConfig(source_fields=("site",))
    entries = [
        entry
        for file in files
        for item in tasks.prepare_file(file, config).inputs
        if (entry := item.entry) is not None
    ]
    assert any(entry.warnings for entry in entries)
    assert any(entry.passages_by_source for entry in entries)
    assert len({tuple(entry.normalization) for entry in entries}) > 1
    reordered = replace(entries[0], normalization=dict(reversed(entries[0].normalization.items())))
    entries.append(reordered)
    table = InputFiles()
    for entry in entries:
        table.append(entry)
    assert list(table) == entries and len(table) == len(entries)
    assert [table[row] for row in range(-len(entries), 0)] == entries
    assert list(table[-1].normalization) == list(reordered.normalization)
    assert table[1:3] == tuple(entries[1:3])
    assert [entry.path for entry in table] == [entry.path for entry in entries]
    assert table == tuple(entries) and tuple(entries) == table and table == InputFiles(entries)
    assert table != tuple(entries[:-1])
    assert table != (*entries[:-1], replace(reordered, passages=reordered.passages + 1))
    with pytest.raises(IndexError):
        table[len(entries)]
    assert table.totals() == (
        sum(entry.records for entry in entries),
        sum(entry.chapters for entry in entries),
        sum(entry.passages for entry in entries),
    )
    # An entry's row holds its numbers in four bytes each while they fit, where a Python
    # int took 28; a file past 32 bits (a count of characters of a file of gigabytes), or a
    # count below zero, reads back the same.
    held = [count for e in entries for count in (e.records, e.chapters, e.passages)]
    held += [count for e in entries for count in e.normalization.values()]
    assert max(held) < 2**13 and all(row[0] < 0x80 for row in table._rows)
    step = next(iter(entries[0].normalization))
    huge = replace(
        entries[0],
        passages=2**31,
        normalization={**entries[0].normalization, step: 2**40},
    )
    odd = replace(entries[1], chapters=-1)
    table.append(huge)
    table.append(odd)
    assert list(table) == [*entries, huge, odd]
    assert table[-2].normalization[step] == 2**40 and table[-1].chapters == -1
    assert table._rows[-2][0] >= 0x80 and table._rows[-1][0] < 0x80  # eight bytes each, four
    assert table.totals() == (
        sum(entry.records for entry in entries) + huge.records + odd.records,
        sum(entry.chapters for entry in entries) + huge.chapters - 1,
        sum(entry.passages for entry in entries) + 2**31 + odd.passages,
    )
