"""What the driver makes of the workers' results as they arrive (dedup.engine.gather)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from dedup.columns import SpanTable
from dedup.config import ScanConfig
from dedup.engine.gather import JoinedParts
from dedup.engine.tasks import prepare_file
from dedup.read import discover_inputs


def test_parts_joined_as_they_come_are_all_the_parts_in_order_each_copied_a_few_times() -> None:
    copied = []

    def join(parts: list[np.ndarray]) -> np.ndarray:
        copied.append(sum(len(part) for part in parts))
        return np.concatenate(parts)

    parts = [np.arange(number, number + 3) for number in range(0, 3 * 1000, 3)]
    joined = JoinedParts(join)
    for part in parts:
        joined.append(part)
    assert np.array_equal(joined.joined(np.empty(0, np.int64)), np.arange(3000))
    # A binary counter's carries: each row copied once a level (1,000 parts, 32 a join: 31
    # joins of parts, then 5 levels of joins of joins, then the last), not once a part after it.
    assert sum(copied) <= 3000 * 7
    assert len(JoinedParts(join).joined(np.empty(0, np.int64))) == 0


def test_span_tables_joined_as_they_come_are_the_table_of_all(samples: Path) -> None:
    config = ScanConfig()
    files, _skipped = discover_inputs([str(samples)])
    tables = [
        item.passages for file in files for item in prepare_file(file, config, {}).inputs
    ] * 20  # as many parts as a dump of some hundreds of files
    joined = JoinedParts(SpanTable.concatenate)
    for table in tables:
        joined.append(table)
    whole = SpanTable.concatenate(tables)
    assert len(whole) > 2000 and len(tables) > 2 * 32
    assert list(joined.joined(SpanTable.concatenate([]))) == list(whole)


def test_a_cluster_hands_back_no_leads_when_all_are_0_and_the_driver_joins_none(
    samples: Path,
) -> None:
    """A cluster's workers hand each file back without its leads where all are 0 (the
    default), so the driver joins the files' alignments without them as they come; with
    --passage-overlap the leads come back, and a join that mixes the two holds every lead
    (0 where none came)."""
    from dedup.documents import PassageAlignment
    from dedup.engine.tasks import without_kept

    files, _skipped = discover_inputs([str(samples)])

    def alignments(config: ScanConfig) -> tuple[list[PassageAlignment], list[PassageAlignment]]:
        prepared = [prepare_file(file, config, {}) for file in files]
        made = [item.alignment for result in prepared for item in result.inputs]
        back = [item.alignment for result in prepared for item in without_kept(result).inputs]
        return made, back

    made, back = alignments(ScanConfig())
    assert sum(map(len, made)) > 100 and all(not part.leads.any() for part in made)
    assert all(len(part.leads) == len(part) for part in made)  # as the workers make them
    assert all(not len(part.leads) and len(part.lengths) == len(part) for part in back)
    joined = JoinedParts(PassageAlignment.concatenate)
    for part in back * 40:
        joined.append(part)
    whole = joined.joined(PassageAlignment.empty())
    assert not len(whole.leads)
    assert np.array_equal(whole.lengths, np.concatenate([part.lengths for part in made * 40]))
    assert np.array_equal(whole.own_lengths(), whole.lengths)

    overlapping, overlapping_back = alignments(ScanConfig(passage_overlap=60))
    leads = np.concatenate([part.leads for part in overlapping])
    assert leads.any() and np.array_equal(
        np.concatenate([part.leads for part in overlapping_back]), leads
    )
    mixed = PassageAlignment.concatenate([back[0], overlapping_back[0], back[1]])
    assert np.array_equal(
        mixed.leads,
        np.concatenate(
            [
                np.zeros(len(back[0]), np.int64),
                overlapping[0].leads,
                np.zeros(len(back[1]), np.int64),
            ]
        ),
    )


def test_the_records_of_each_file_share_the_strings_this_process_holds(
    mirror_dump: Path,
) -> None:
    """A dump of a page a file is tens of thousands of files, each with its found file, its
    entry in the report and its documents' keys: unpickled from a worker, each would hold
    strings of its own. The entry's and the documents' path and source are the found
    file's, and a value named by many (a source, a format, a count's name) is one string."""
    import pickle

    from dedup.engine.gather import Prepared, _documents_sharing_strings
    from dedup.fingerprint import SignatureTable

    config = ScanConfig()
    files, _skipped = discover_inputs([str(mirror_dump)])
    sources = {file.source: file.source for file in files}
    assert all(file.source is sources[file.source] for file in files)
    assert all(file.fs_path is file.path for file in files)
    prepared = Prepared(SignatureTable(config.num_perm))
    for file in files[:40]:
        result = pickle.loads(pickle.dumps(prepare_file(file, config, {})))  # as from a worker
        (item,) = result.inputs
        assert item.entry is not None and item.entry.path is not file.path
        prepared.add(file, result)
        entry = prepared.inputs[-1]
        assert entry == item.entry  # the same values
        assert entry.path is file.path and entry.source is file.source
        assert all(name is sys.intern(name) for name in entry.normalization)
    names = [name for entry in prepared.inputs for name in entry.normalization]
    assert len(names) > 40 and len({id(name) for name in names}) == len(set(names))
    spans = prepared.spans.joined(SpanTable.concatenate([]))
    by_path = {file.path: file for file in files}
    assert len(spans.documents) >= 40
    for source, path, _record, _record_id in spans.documents:
        assert path is by_path[path].path and source is by_path[path].source
    table = prepare_file(files[0], config, {}).inputs[0].passages
    assert _documents_sharing_strings(table, files[0]).documents == table.documents
