"""The candidates stage as a cluster runs it (dedup.engine.shuffle): band keys split into
partitions by file, each partition's pairs found apart, and the MinHash estimates made from
runs of signatures, give what the stage finds in one process. (On real workers:
tests/test_dask.py.)"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dedup.candidates import (
    MAX_BUCKET_PAIRS_MEMBERS,
    band_entries,
    candidate_pairs,
    lsh_params,
    merged_codes,
    pairs_of_codes,
    partition_pair_codes,
)
from dedup.fingerprint import signatures
from dedup.normalize import normalize
from dedup.verify import estimates_in_runs, minhash_estimates


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
