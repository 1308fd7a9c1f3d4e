"""The stages as a cluster runs them (dedup.engine.shuffle): band keys and winnowed seeds
split into partitions by runs of files, each partition's pairs found apart, and the MinHash
estimates and original offsets made from runs of what the workers keep, give what the stages
find in one process. (On real workers: tests/test_dask.py.)"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dedup import documents as documents_module
from dedup.arrays import key_counts
from dedup.candidates import (
    MAX_BUCKET_PAIRS_MEMBERS,
    Leaders,
    band_entries,
    candidate_pairs,
    exact_copies,
    find_candidates,
    hash_entries,
    lsh_params,
    merged_codes,
    pairs_of_codes,
    partition_copies,
    partition_pair_codes,
)
from dedup.config import ScanConfig
from dedup.documents import (
    MAX_SEED_DOCUMENTS,
    MIN_SHARED_SEEDS,
    partition_text_pairs,
    seed_entries,
    with_known,
)
from dedup.engine.base import engine_for, in_threads
from dedup.engine.gather import Passages, prepare_all
from dedup.engine.shuffle import (
    _lengths_in_runs,
    _offsets_in_runs,
    _stories_in_runs,
    _summed_by_run,
    _with_codes,
    _with_units,
)
from dedup.engine.tasks import lengths_and_steps_of, passage_count, prepare_file, texts_of
from dedup.fingerprint import signatures
from dedup.normalize import normalize
from dedup.read import discover_inputs
from dedup.segment import text_hashes
from dedup.timing import StageTimer
from dedup.verify import estimates_in_runs, minhash_estimates, verify_candidates


def _windows(text: str, width: int = 300, step: int = 150) -> list[str]:
    normalized = normalize(text).text
    return [normalized[start : start + width] for start in range(0, len(normalized) - 100, step)]


@pytest.fixture(scope="module")
def texts(seed_simplified: str, seed_with_ads: str, seed_traditional: str) -> list[str]:
    """Overlapping windows of the three seed chapters, each again a little changed (near
    copies), and a boilerplate line repeated past the bucket cap (one bucket in every band)."""
    windows = _windows(seed_simplified) + _windows(seed_with_ads) + _windows(seed_traditional)
    changed = [text[:100] + "某" + text[101:] for text in windows]
    boilerplate = [normalize(seed_with_ads).text[:120]] * (MAX_BUCKET_PAIRS_MEMBERS + 20)
    return windows + boilerplate + changed


def _shuffled_pairs(
    signature_rows: np.ndarray, among: np.ndarray, cuts: list[int], partitions: int
) -> np.ndarray:
    bands, rows = lsh_params(0.4, 128)
    bounds = [0, *cuts, len(signature_rows)]
    runs = list(itertools.pairwise(bounds))
    taking_part = [among[(among >= first) & (among < end)] - first for first, end in runs]
    # Runs in batches of two, as a cluster's tasks take them.
    entries = [
        band_entries(
            [signature_rows[first:end] for first, end in runs[start : start + 2]],
            taking_part[start : start + 2],
            [first for first, _end in runs[start : start + 2]],
            bands,
            rows,
            partitions,
        )
        for start in range(0, len(runs), 2)
    ]
    codes = np.empty(0, dtype=np.int64)
    for part in range(partitions):
        found = partition_pair_codes([run[part] for run in entries], len(signature_rows))
        codes = merged_codes(codes, found)
    return pairs_of_codes(codes, len(signature_rows))


@pytest.mark.parametrize(("cuts", "partitions"), [([], 1), ([37, 38, 200], 3), ([5, 400], 7)])
def test_partitions_of_band_keys_give_the_pairs_one_process_finds(
    texts: list[str], cuts: list[int], partitions: int
) -> None:
    table = signatures(texts, 5, 128, 1)
    # Every other passage takes part, as only the first of each distinct text does in a scan.
    among = np.arange(0, len(texts), 2, dtype=np.int64)
    here = candidate_pairs(table, *lsh_params(0.4, 128), among=among)
    assert len(here) > len(texts)  # near copies, windows overlapping, the boilerplate linked
    shuffled = _shuffled_pairs(table, among, cuts, partitions)
    assert np.array_equal(shuffled, here)


class _HashesInRuns:
    """The hashes as a cluster's workers keep them (a run a file), the copies found by the
    shuffle dedup.engine.shuffle runs: a task a batch of two runs, then one a partition."""

    def __init__(self, hashes: np.ndarray, cuts: list[int], partitions: int) -> None:
        bounds = [0, *cuts, len(hashes)]
        self.runs = list(itertools.pairwise(bounds))
        self.hashes, self.partitions = hashes, partitions

    def __len__(self) -> int:
        return len(self.hashes)

    def copies(self) -> tuple[np.ndarray, np.ndarray]:
        runs = self.runs
        entries = [
            hash_entries(
                [self.hashes[first:end] for first, end in runs[start : start + 2]],
                [first for first, _end in runs[start : start + 2]],
                self.partitions,
            )
            for start in range(0, len(runs), 2)
        ]
        found = [
            partition_copies([batch[part] for batch in entries]) for part in range(self.partitions)
        ]
        copies = np.concatenate([copies for copies, _originals in found])
        order = np.argsort(copies, kind="stable")
        return copies[order], np.concatenate([originals for _c, originals in found])[order]

    def let_go(self) -> None:
        pass


@pytest.mark.parametrize(("cuts", "partitions"), [([], 1), ([37, 38, 200], 3), ([5, 400], 7)])
def test_partitions_of_hashes_give_the_copies_one_process_finds(
    texts: list[str], cuts: list[int], partitions: int
) -> None:
    # Some windows again later, verbatim, as a mirror site republishes them.
    repeated = texts + texts[40:90] + texts[:3]
    hashes = text_hashes(repeated)
    lengths = np.array([len(text) for text in repeated], dtype=np.int64)
    distinct, links = exact_copies((), hashes, lengths.__getitem__)
    held = _HashesInRuns(hashes, cuts, partitions)
    held_distinct, held_links = exact_copies((), held, lengths.__getitem__)
    assert np.array_equal(held_distinct, distinct)
    for column in ("first", "second", "jaccard", "containment", "identical_chars"):
        assert np.array_equal(getattr(held_links, column), getattr(links, column))
    # The boilerplate's copies and the windows repeated, each linked to its first passage.
    assert len(links) >= MAX_BUCKET_PAIRS_MEMBERS + 19 + 53
    assert [repeated[i] for i in links.first.tolist()] == [
        repeated[i] for i in links.second.tolist()
    ]
    assert (links.first < links.second).all()
    assert len({repeated[i] for i in distinct.tolist()}) == len(distinct) == len(set(repeated))


def test_every_bucket_is_in_one_partition(texts: list[str]) -> None:
    table = signatures(texts, 5, 128, 1)
    bands, rows = lsh_params(0.4, 128)
    among = np.arange(len(texts), dtype=np.int64)
    halves = [
        band_entries([table[:300]], [among[:300]], [0], bands, rows, 4),
        band_entries([table[300:]], [among[300:] - 300], [300], bands, rows, 4),
    ]
    where: dict[tuple[int, int], set[int]] = {}
    for run in halves:
        for part, entries in enumerate(run):
            for band, key in zip(entries.bands.tolist(), entries.keys.tolist(), strict=True):
                where.setdefault((band, key), set()).add(part)
            # In order of band, then passage, as the partition's pairs need them.
            order = np.lexsort((entries.passages, entries.bands))
            assert np.array_equal(order, np.arange(len(order)))
    assert all(len(parts) == 1 for parts in where.values())
    assert len({part for parts in where.values() for part in parts}) == 4  # all used


def test_estimates_from_runs_of_signatures_are_the_scans(texts: list[str]) -> None:
    table = signatures(texts, 5, 128, 1)
    pairs = candidate_pairs(table, *lsh_params(0.4, 128))
    runs = [(0, table[:50]), (50, table[50:51]), (51, table[51:])]
    assert np.array_equal(
        estimates_in_runs(pairs, [first for first, _ in runs], [run for _, run in runs]),
        minhash_estimates(pairs, table),
    )
    # Only the runs the pairs name need be given.
    inside = pairs[(pairs[:, 0] >= 51)]
    assert np.array_equal(
        estimates_in_runs(inside, [51], [table[51:]]), minhash_estimates(inside, table)
    )


@pytest.fixture(scope="module")
def scanned(samples: Path) -> tuple[Passages, np.ndarray, np.ndarray]:
    """corpus_samples prepared here: its passages, their leaders, the verified text pairs."""
    config = ScanConfig(jobs=1)
    files, _skipped = discover_inputs([str(samples)], False)
    with engine_for(config, len(files)) as engine:
        passages = prepare_all(files, config, StageTimer(), engine).passages()
    found = find_candidates(
        passages.alignment.lengths_of,
        passages.hashes,
        passages.signatures,
        passages.spans,
        config.threshold,
        config.num_perm,
    )
    estimates = minhash_estimates(found.pairs, passages.signatures)
    verified = verify_candidates(found.copies, found.pairs, passages.texts, estimates, 5, 0.5, 0.8)
    leaders = found.leaders(len(passages.spans))
    leader = leaders.dense()
    # Held as the copies alone, a leader is looked up as the one a passage gives.
    rows = np.arange(len(leader))[::-3]
    assert leaders.of(rows).tolist() == leader[rows].tolist()
    assert leaders.distinct().tolist() == np.flatnonzero(leader == np.arange(len(leader))).tolist()
    assert 0 < len(leaders.copies) < len(leader)
    texts = len(leader)
    one, two = leader[verified.first], leader[verified.second]
    known = np.minimum(one, two)[one != two] * texts + np.maximum(one, two)[one != two]
    return passages, leader, known


def test_seed_keys_made_a_file_at_a_time_are_those_of_all_the_seeds(
    scanned: tuple[Passages, np.ndarray, np.ndarray],
) -> None:
    """The main process keys each file's seeds as it arrives (its passages numbered from the
    file's first): the same sorted keys as all the seeds keyed at once."""
    held = scanned[0].alignment.held_seeds
    assert isinstance(held, documents_module.SeedKeys)
    seeds = (held.keys >> np.uint64(32)).astype(np.uint32)
    passages = (held.keys & np.uint64(0xFFFFFFFF)).astype(np.int64)
    order = np.random.default_rng(5).permutation(len(seeds))  # each file's in any order
    seeds, passages = seeds[order], passages[order]
    by_file = documents_module.SeedKeys()
    for first, end in itertools.pairwise([0, 100, 101, 2000, int(passages.max()) + 1]):
        inside = (passages >= first) & (passages < end)
        by_file.append(seeds[inside], passages[inside] - first, first)
    assert by_file.settled().keys.tolist() == held.keys.tolist()
    whole = documents_module.SeedKeys.of(seeds, passages).keys
    assert whole.tolist() == held.keys.tolist() and len(whole) > 1000
    assert (np.diff(whole.astype(np.float64)) >= 0).all()


@pytest.mark.parametrize(("cuts", "partitions"), [([], 1), ([1000, 1001, 3000], 3)])
def test_partitions_of_seeds_count_the_pairs_one_process_counts(
    scanned: tuple[Passages, np.ndarray, np.ndarray],
    cuts: list[int],
    partitions: int,
) -> None:
    passages, leader, known = scanned
    # the seeds as this process holds them: a key each, seed << 32 | passage, sorted
    held = passages.alignment.held_seeds
    assert isinstance(held, documents_module.SeedKeys) and not len(passages.alignment.seeds)
    seed_keys = held.keys
    alignment = dataclasses.replace(
        passages.alignment,
        seeds=(seed_keys >> np.uint64(32)).astype(np.uint32),
        seed_passage=(seed_keys & np.uint64(0xFFFFFFFF)).astype(np.int64),
    )
    assert len(alignment.seeds) > 1000
    by_text = np.argsort(leader, kind="stable")
    text_of = leader[by_text]
    holder_start = np.searchsorted(text_of, np.arange(len(leader)), side="left")
    holder_end = np.searchsorted(text_of, np.arange(len(leader)), side="right")
    here = with_known(
        *documents_module._text_pair_counts(
            seed_keys,
            holder_start,
            holder_end,
            MAX_SEED_DOCUMENTS,
            documents_module.key_set(known),
            np.empty(0, dtype=np.int64),
            len(leader),
            0,
            1,
        ),
        known,
        MIN_SHARED_SEEDS,
    )
    # The seeds as workers keep them, a run of passages each, seeds numbered in their run.
    distinct = np.flatnonzero(leader == np.arange(len(leader)))
    holders = holder_end - holder_start
    bounds = [0, *cuts, len(leader)]
    runs, taking_part, held = [], [], []
    for first, end in itertools.pairwise(bounds):
        inside = (alignment.seed_passage >= first) & (alignment.seed_passage < end)
        runs.append((alignment.seeds[inside], alignment.seed_passage[inside] - first))
        rows = distinct[(distinct >= first) & (distinct < end)]
        taking_part.append(rows - first)
        held.append(holders[rows])
    known_set = documents_module.key_set(known)
    # Runs in batches of two, as a cluster's tasks take them.
    batches = [
        seed_entries(
            runs[start : start + 2],
            taking_part[start : start + 2],
            held[start : start + 2],
            bounds[:-1][start : start + 2],
            partitions,
        )
        for start in range(0, len(runs), 2)
    ]
    found = [
        partition_text_pairs(
            [batch[part] for batch in batches], len(leader), MAX_SEED_DOCUMENTS, known_set
        )
        for part in range(partitions)
    ]
    shuffled = with_known(
        *key_counts([codes for codes, _ in found], [counts for _, counts in found]),
        known,
        MIN_SHARED_SEEDS,
    )
    assert len(here[0]) > 50  # the sample books' copies share seeds
    assert dict(zip(*(part.tolist() for part in shuffled), strict=True)) == dict(
        zip(*(part.tolist() for part in here), strict=True)
    )
    # The pairs of documents: this process's, and those of a cluster, whose partitions'
    # pairs go to the partition of each pair of documents, summed there, with the pairs the
    # verified pairs of texts propose added.
    runs_of = documents_module.document_runs(passages.spans, passages.runs, alignment)
    holding = documents_module.TextHolders.of(Leaders.of_array(leader), runs_of)
    # Held compactly (a text's own document, and its copies' where it has some), each
    # text's holders are its passages' documents in the scan's order.
    dense = runs_of.of(by_text)
    assert len(holding.copied) > 10 and len(holding.holders) < len(leader) / 2
    assert holding.counts(distinct).tolist() == holders[distinct].tolist()
    compact, starts, ends = holding._holders_of(distinct)
    for text, start, end in zip(distinct.tolist(), starts.tolist(), ends.tolist(), strict=True):
        held_by = dense[holder_start[text] : holder_end[text]].tolist()
        assert compact[start:end].tolist() == held_by
    seed_keys_held = passages.alignment.held_seeds
    local = seed_keys_held.document_pairs(distinct, holding, MAX_SEED_DOCUMENTS, known, _Threads(1))
    # This process counts the pairs a share of them a thread: the same however many.
    for threads in (2, 3, 8):
        in_shares = seed_keys_held.document_pairs(
            distinct, holding, MAX_SEED_DOCUMENTS, known, _Threads(threads)
        )
        assert in_shares.tolist() == local.tolist()
    counted = [
        documents_module.partition_document_pairs(
            [batch[part] for batch in batches], MAX_SEED_DOCUMENTS, known_set, holding, partitions
        )
        for part in range(partitions)
    ]
    summed = [
        documents_module.summed_document_pairs([c[part] for c in counted], MIN_SHARED_SEEDS)
        for part in range(partitions)
    ]
    proposed = np.full(len(np.unique(known)), MIN_SHARED_SEEDS, dtype=np.int64)
    summed.append(holding.document_pairs(np.unique(known), proposed, MIN_SHARED_SEEDS)[0])
    assert len(local) > 5 and (np.diff(local) > 0).all()
    assert np.unique(np.concatenate(summed)).tolist() == local.tolist()


def test_a_files_kept_texts_give_each_passage_back_as_text_or_code_points_and_weigh_their_bytes(
    tmp_path: Path, seed_simplified: str
) -> None:
    """What a cluster's worker keeps of a file's texts (one UTF-16 text) gives each passage's
    normalized text back as it was made, characters past U+FFFF too (two code units each),
    and Dask weighs it by those bytes (its scheduler places tasks by them)."""
    from dask.sizeof import sizeof

    rare = "𠀀𪚥"  # CJK Extension B: past U+FFFF
    text = seed_simplified[:1500] + rare + seed_simplified[1500:4000] + rare
    (tmp_path / "a.txt").write_text(text, encoding="utf-8")
    files, _skipped = discover_inputs([str(tmp_path)], False)
    prepared = prepare_file(files[0], ScanConfig())
    made = [t or "" for item in prepared.inputs for t in item.normalized.texts()]
    assert len(made) > 3 and sum(rare in t for t in made) >= 1
    run = texts_of(prepared)
    assert [run[row] for row in range(len(run))] == made
    units = sum(len(t) + sum(ord(c) > 0xFFFF for c in t) for t in made)
    assert sizeof(run) >= 2 * units
    # Verification's tasks take some passages' code points straight from the bytes: as
    # the texts' join encoded in UTF-32 (a character past U+FFFF is one code point).
    for rows in ([*range(len(run))], [len(run) - 1, 0, 2], [1], []):
        joined = "".join(made[row] for row in rows)
        codes = run.code_points(np.array(rows, dtype=np.int64))
        assert codes.tolist() == [ord(c) for c in joined]
    assert any(code > 0xFFFF for code in run.code_points(np.arange(len(run))).tolist())
    # and from several runs (a task's passages are in several files), in the order asked
    runs, firsts, passages = [run, run], [0, len(run)], np.array([len(run) + 1, 0, 1, len(run)])
    texts = [made[1], made[0], made[1], made[0]]
    codes = _with_codes(lambda got: got, runs, firsts, passages)
    assert codes.tolist() == [ord(c) for c in "".join(texts)]
    # or their UTF-16 as kept, with where each text starts (the alignment's tasks)
    units, starts = _with_units(lambda got: got, runs, firsts, passages)
    ends = [*starts[1:].tolist(), len(units)]
    decoded = [units[a:b].tobytes().decode("utf-16-le") for a, b in zip(starts, ends, strict=True)]
    assert decoded == texts


class _Threads:
    """An engine's threads, ``thread_count`` of them."""

    def __init__(self, thread_count: int) -> None:
        self.thread_count = thread_count

    def in_threads(self, function: Any, items: Any) -> Any:
        return in_threads(function, items, self.thread_count)


@pytest.mark.parametrize(("cuts", "partitions"), [([], 1), ([1], 3), ([1, 2], 7)])
def test_partitions_of_line_keys_give_the_lines_one_process_finds_repeated(
    slogan_sites: Path, cuts: list[int], partitions: int
) -> None:
    from dedup.engine.tasks import count_line_keys
    from dedup.normalize.line_keys import line_key
    from dedup.normalize.repeated_lines import (
        chapter_entries,
        distinct_chapter_counts,
        learned_back,
        line_counts_of,
        line_entries,
        merged_learned,
        partition_repeated,
        repeated_by_source,
        repeated_lines,
    )
    from tests.conftest import SLOGAN

    config = ScanConfig()
    files, _skipped = discover_inputs([str(slogan_sites)])
    learned = [count_line_keys(file, config) for file in files]
    here = repeated_lines(learned)
    assert here == {"a": frozenset({line_key(SLOGAN)}), "b": frozenset({line_key(SLOGAN)})}

    # The files in batches (a task each on a cluster, its line keys and chapters kept
    # there): only the sources of their chapters come here; the chapters and the keys are
    # counted in partitions. Cut after the first file, site a's second file carries again
    # two chapters of its first in another batch.
    bounds = [0, *cuts, len(learned)]
    batches = [learned[first:end] for first, end in itertools.pairwise(bounds)]
    kept = [line_counts_of(merged_learned(batch)) for batch in batches]
    sources: dict[str, int] = {}
    for batch in batches:
        # handed back a piece at a time: a file each, then the rest of the batch as one
        for piece in (batch[:1], batch[1:]):
            if piece:
                (back,) = learned_back(piece)
                assert back.files == len(piece)
                assert back.inputs.tolist() == [len(file.chapters) for file in piece]
                assert back.sources == tuple(dict.fromkeys(s for f in piece for s in f.line_counts))
                for source in back.sources:
                    sources.setdefault(source, len(sources))
    assert tuple(sources) == ("a", "b")

    def shuffled(entries: Any, reduced: Any, given: Any) -> list[Any]:
        # Batches of two, as the shuffle's tasks take them; a task a partition.
        made = [
            entries(kept[start : start + 2], sources, partitions)
            for start in range(0, len(kept), 2)
        ]
        return [reduced([task[part] for task in made], given) for part in range(partitions)]

    chapter_counts = shuffled(chapter_entries, distinct_chapter_counts, len(sources))
    # Each source's distinct chapters, however many batches carry one: a has 9 (three of
    # its second file's five are new), b 3.
    assert np.sum(chapter_counts, axis=0).tolist() == [9, 3]
    found = np.concatenate(shuffled(line_entries, partition_repeated, chapter_counts))
    assert repeated_by_source(tuple(sources), found) == here


@pytest.mark.parametrize("overlap", [0, 60])
def test_lengths_stories_and_offsets_from_runs_are_the_scans(samples: Path, overlap: int) -> None:
    """Each passage's length and lead, each document's story (its passages' characters but
    their leads) and the offsets spans are mapped back to, made from the runs of passages a
    cluster's workers keep (a file's each, in batches), are those one process makes from
    all of them, wherever the batches and the documents begin."""
    from dedup.documents import PassageAlignment

    config = ScanConfig(passage_overlap=overlap)
    files, _skipped = discover_inputs([str(samples)])
    prepared = [prepare_file(file, config, {}) for file in files]
    runs = [lengths_and_steps_of(result) for result in prepared if passage_count(result)]
    whole = PassageAlignment.concatenate([item.alignment for r in prepared for item in r.inputs])
    firsts = np.cumsum([0, *(len(run) for run in runs)])
    count = int(firsts[-1])
    assert count == len(whole) > 100 and bool(whole.leads.any()) == bool(overlap)
    random = np.random.default_rng(7)
    packed = whole.with_steps_packed().held_steps
    assert packed is not None
    for low, high in [(0, len(runs)), (1, 3), (2, len(runs))]:
        held = runs[low:high]
        passages = np.arange(firsts[low], firsts[high])
        rows = random.choice(passages, 50)
        found = _lengths_in_runs(held, rows - firsts[low])
        assert np.array_equal(found[:, 0], whole.lengths[rows])
        assert np.array_equal(found[:, 1], whole.leads[rows])
        index = random.integers(0, whole.lengths[rows])
        start = random.integers(0, 10_000, len(rows))
        offsets = _offsets_in_runs(held, rows - firsts[low], start, index)
        assert np.array_equal(offsets, packed.original_offsets(rows, index, start))
        cuts = np.unique(np.concatenate(([0], random.choice(len(passages), 9))))
        assert np.array_equal(
            _stories_in_runs(held, cuts),
            np.add.reduceat(whole.own_lengths()[passages], cuts),
        )
    # Documents' stories from parts that begin at each document and at each batch's first.
    documents = np.unique(np.concatenate(([0], random.choice(count, 30))))
    batches = np.array([0, 7, 40, 41, count // 2])
    part_start = np.union1d(documents, batches)
    sums = np.add.reduceat(whole.own_lengths(), part_start)
    assert np.array_equal(
        _summed_by_run(documents, part_start, sums),
        np.add.reduceat(whole.own_lengths(), documents),
    )
