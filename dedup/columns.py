"""Column tables of the scan's stages: many records of one kind held as numpy columns (a
number a field a row) rather than as objects, which cost seconds by the million to make, to
send between processes and to read back. Row ``i`` of a table is the record ``table[i]``;
``rows`` makes the records of many rows in one go, ``take`` a smaller table of them. Their
base, ``ColumnTable``, is in dedup.models, with the tables a report holds."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from dedup.arrays import concatenated, objects, runs_of
from dedup.models import (
    ColumnTable,
    CutPassage,
    DocumentKey,
    MatchedDocument,
    PassageSpan,
    made_in_bulk,
)


class HeldSpanEnds(Protocol):
    """The start and end of each row of a span table where the workers that made them keep
    them (a Dask cluster's), not in this process: looked up a few rows at a time."""

    def __len__(self) -> int: ...

    def ends_of(
        self, rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The start and the end of each of ``rows``."""
        ...

    def let_go(self) -> None:
        """The workers let the starts and ends go."""
        ...


@dataclass(frozen=True, slots=True)
class CountedRows:
    """Rows counted here whose start and end are kept elsewhere: a file's spans as a
    cluster's worker hands them back (dedup.engine.tasks.without_kept), until this process
    knows where the workers keep them."""

    count: int

    def __len__(self) -> int:
        return self.count

    def ends_of(
        self, rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        raise LookupError("these spans' starts and ends are kept by the workers")

    def let_go(self) -> None:
        pass


_NO_ROWS = np.empty(0, dtype=np.int64)


@dataclass(frozen=True, slots=True, eq=False)
class SpanTable(ColumnTable[PassageSpan]):
    """The spans of many passages as columns: what workers hand back and what a scan keeps for
    every passage of a dump (numbers rather than objects, which cost less to send between
    processes, to hold, and to compare in bulk). Row ``i`` is the :class:`PassageSpan`
    ``table[i]``.

    A passage's start and end are a row's own; its document, chapter and title are held once
    for each run of rows that share them (a chapter's passages, dozens), so that what a scan
    keeps of every passage of a dump is two numbers (issue 21: the driver's memory). On a
    cluster the workers keep those two (``held``; ``start`` and ``end`` are then empty), and
    :meth:`ends_of` looks up the rows a stage needs."""

    documents: tuple[DocumentKey, ...]
    titles: tuple[str | None, ...]
    # Run r is the rows run_first[r]:run_first[r + 1] (the last to the table's end); none
    # is empty, the first starts at row 0.
    run_first: npt.NDArray[np.int64]
    run_document: npt.NDArray[np.int64]  # run -> index into documents
    run_chapter: npt.NDArray[np.int64]  # -1 where the run is in no numbered chapter
    run_title: npt.NDArray[np.int64]  # run -> index into titles
    start: npt.NDArray[np.int64]
    end: npt.NDArray[np.int64]
    held: HeldSpanEnds | None = None

    def __len__(self) -> int:
        return len(self.start) if self.held is None else len(self.held)

    def ends_of(
        self, rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The start and the end of each of ``rows``."""
        if self.held is None:
            return self.start[rows], self.end[rows]
        return self.held.ends_of(rows)

    def without_ends(self) -> SpanTable:
        """The table with its rows' starts and ends left to the workers that keep them
        (counted, not held)."""
        return replace(self, start=_NO_ROWS, end=_NO_ROWS, held=CountedRows(len(self)))

    def ends_held_by(self, held: HeldSpanEnds) -> SpanTable:
        """The table of :meth:`without_ends` rows, their starts and ends found in ``held``."""
        if len(held) != len(self):
            raise ValueError(f"{len(held)} spans held for a table of {len(self)}")
        return replace(self, held=held)

    @classmethod
    def in_runs(
        cls,
        documents: tuple[DocumentKey, ...],
        titles: tuple[str | None, ...],
        document: npt.NDArray[np.int64],
        chapter: npt.NDArray[np.int64],
        title: npt.NDArray[np.int64],
        start: npt.NDArray[np.int64],
        end: npt.NDArray[np.int64],
    ) -> SpanTable:
        """The table of rows whose ``document``, ``chapter`` and ``title`` are given a row
        each, held by runs."""
        changed = np.ones(len(start), dtype=np.bool_)
        changed[1:] = (
            (document[1:] != document[:-1])
            | (chapter[1:] != chapter[:-1])
            | (title[1:] != title[:-1])
        )
        first = np.flatnonzero(changed).astype(np.int64)
        return cls(
            documents, titles, first, document[first], chapter[first], title[first], start, end
        )

    @classmethod
    def of(cls, spans: Sequence[PassageSpan]) -> SpanTable:
        """The table of ``spans``."""
        documents: dict[DocumentKey, int] = {}
        titles: dict[str | None, int] = {}
        columns = np.array(
            [
                (
                    documents.setdefault(
                        (span.source, span.path, span.record, span.record_id), len(documents)
                    ),
                    -1 if span.chapter is None else span.chapter,
                    titles.setdefault(span.title, len(titles)),
                    span.start,
                    span.end,
                )
                for span in spans
            ],
            dtype=np.int64,
        ).reshape(-1, 5)
        return cls.in_runs(
            tuple(documents), tuple(titles), *(columns[:, i].copy() for i in range(5))
        )

    @classmethod
    def concatenate(cls, tables: Sequence[SpanTable]) -> SpanTable:
        """The rows of ``tables`` one after the other (documents and titles shared; a run
        never goes on from one table into the next): of tables whose starts and ends are
        counted only (:meth:`without_ends`), a table of the same."""
        documents: dict[DocumentKey, int] = {}
        titles: dict[str | None, int] = {}
        document_runs, title_runs, firsts = [], [], []
        rows = 0
        for table in tables:
            document_index = [documents.setdefault(d, len(documents)) for d in table.documents]
            title_index = [titles.setdefault(t, len(titles)) for t in table.titles]
            document_runs.append(np.array(document_index, dtype=np.int64)[table.run_document])
            title_runs.append(np.array(title_index, dtype=np.int64)[table.run_title])
            firsts.append(table.run_first + rows)
            rows += len(table)
        counted = [table.held is not None for table in tables if len(table)]
        if any(counted) and not all(counted):
            raise ValueError("tables with their starts and ends joined to tables without")
        return cls(
            tuple(documents),
            tuple(titles),
            concatenated(firsts, np.int64),
            concatenated(document_runs, np.int64),
            concatenated([table.run_chapter for table in tables], np.int64),
            concatenated(title_runs, np.int64),
            concatenated([table.start for table in tables], np.int64),
            concatenated([table.end for table in tables], np.int64),
            CountedRows(rows) if any(counted) else None,
        )

    def run_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The run of each of ``rows``."""
        return runs_of(self.run_first, rows)

    def document_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The document (an index into ``documents``) of each of ``rows``."""
        return self.run_document[self.run_of(rows)]

    def row_documents(self) -> npt.NDArray[np.int64]:
        """The document of every row, for looking up more rows than the table holds (the
        candidate pairs' ends: a gather costs a fifth of a search there)."""
        return np.repeat(self.run_document, self.run_sizes())

    def run_sizes(self) -> npt.NDArray[np.int64]:
        """The rows of each run."""
        return np.diff(np.append(self.run_first, len(self)))

    def rows(self, rows: npt.NDArray[np.int64]) -> list[PassageSpan]:
        """The spans of ``rows``, made in one go (faster than one ``table[i]`` at a time)."""
        return [
            PassageSpan(source, path, record, chapter, title, start, end, record_id)
            for (source, path, record, record_id), chapter, title, start, end in self._columns(rows)
        ]

    def passages(
        self, rows: npt.NDArray[np.int64], documents: Sequence[MatchedDocument]
    ) -> list[CutPassage]:
        """The passages of ``rows``, each with the document holding it, which its text is cut
        from (made column by column)."""
        columns = {
            **self.row_fields(rows, ids=False),  # a CutPassage makes its id when asked
            "document": [document.id for document in documents],
            "holder": documents,
        }
        return made_in_bulk(CutPassage, *(columns[name] for name in CutPassage.SLOTS))

    def row_fields(self, rows: npt.NDArray[np.int64], ids: bool = True) -> dict[str, list[Any]]:
        """The fields the passages of ``rows`` have, but their texts (and their ids, unless
        ``ids``), as columns: Passage field name -> one value per row."""
        run = self.run_of(rows)
        document = self.run_document[run]

        def per_row(values: Sequence[Any]) -> list[Any]:
            taken: list[Any] = objects(values)[document].tolist()
            return taken

        sources, paths, records, record_ids = (
            zip(*self.documents, strict=True) if self.documents else ((), (), (), ())
        )
        starts, ends = (ends.tolist() for ends in self.ends_of(rows))
        chapters = self.run_chapter[run].tolist()
        fields: dict[str, list[Any]] = {}
        if ids:
            where = [
                path if record is None else f"{path}#{record}"
                for path, record in zip(paths, records, strict=True)
            ]
            fields["id"] = list(map("{}:{}-{}".format, per_row(where), starts, ends))
        return fields | {
            "source": per_row(sources),
            "path": per_row(paths),
            "record": per_row(records),
            "chapter": list(map({-1: None}.get, chapters, chapters)),  # -1: no numbered chapter
            "title": objects(self.titles)[self.run_title[run]].tolist(),
            "start": starts,
            "end": ends,
            "record_id": per_row(record_ids),
        }

    def take(self, rows: npt.NDArray[np.int64]) -> SpanTable:
        """A table of ``rows`` alone, holding only the documents and titles they use (small to
        send to a worker)."""
        run = self.run_of(rows)
        documents, document = np.unique(self.run_document[run], return_inverse=True)
        titles, title = np.unique(self.run_title[run], return_inverse=True)
        start, end = self.ends_of(rows)
        return SpanTable.in_runs(
            tuple(self.documents[i] for i in documents.tolist()),
            tuple(self.titles[i] for i in titles.tolist()),
            document.reshape(-1).astype(np.int64),
            self.run_chapter[run],
            title.reshape(-1).astype(np.int64),
            start,
            end,
        )

    def _columns(
        self, rows: npt.NDArray[np.int64]
    ) -> Iterator[tuple[DocumentKey, int | None, str | None, int, int]]:
        documents, titles = self.documents, self.titles
        run = self.run_of(rows)
        starts, ends = self.ends_of(rows)
        for document, chapter, title, start, end in zip(
            self.run_document[run].tolist(),
            self.run_chapter[run].tolist(),
            self.run_title[run].tolist(),
            starts.tolist(),
            ends.tolist(),
            strict=True,
        ):
            yield documents[document], None if chapter < 0 else chapter, titles[title], start, end


@dataclass(frozen=True, slots=True)
class Similarity:
    first: int
    second: int
    jaccard: float
    containment: float
    minhash_jaccard: float
    identical_chars: int


@dataclass(frozen=True, slots=True, eq=False)
class SimilarityTable(ColumnTable[Similarity]):
    """Verified pairs as columns: a dump in which every scene has copies has about one pair per
    passage, and a million objects cost seconds to make and to read back."""

    first: npt.NDArray[np.int64]
    second: npt.NDArray[np.int64]
    jaccard: npt.NDArray[np.float64]
    containment: npt.NDArray[np.float64]
    minhash_jaccard: npt.NDArray[np.float64]
    identical_chars: npt.NDArray[np.int64]

    @classmethod
    def of(cls, pairs: Sequence[Similarity]) -> SimilarityTable:
        if isinstance(pairs, SimilarityTable):
            return pairs
        rows = [
            (p.first, p.second, p.jaccard, p.containment, p.minhash_jaccard, p.identical_chars)
            for p in pairs
        ]
        columns = list(zip(*rows, strict=True)) if rows else [()] * 6
        return cls(
            np.array(columns[0], dtype=np.int64),
            np.array(columns[1], dtype=np.int64),
            np.array(columns[2], dtype=np.float64),
            np.array(columns[3], dtype=np.float64),
            np.array(columns[4], dtype=np.float64),
            np.array(columns[5], dtype=np.int64),
        )

    @classmethod
    def concatenate(cls, tables: Sequence[SimilarityTable]) -> SimilarityTable:
        return cls(*(np.concatenate([getattr(t, name) for t in tables]) for name in _COLUMNS))

    def where(self, rows: npt.NDArray[np.bool_] | npt.NDArray[np.int64]) -> SimilarityTable:
        return SimilarityTable(*(getattr(self, name)[rows] for name in _COLUMNS))

    def __len__(self) -> int:
        return len(self.first)

    def take(self, rows: npt.NDArray[np.int64]) -> SimilarityTable:
        return self.where(rows)

    def rows(self, rows: npt.NDArray[np.int64]) -> list[Similarity]:
        columns = (getattr(self, name)[rows].tolist() for name in _COLUMNS)
        return [Similarity(*row) for row in zip(*columns, strict=True)]


_COLUMNS = ("first", "second", "jaccard", "containment", "minhash_jaccard", "identical_chars")
