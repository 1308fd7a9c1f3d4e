"""Signatures are datasketch's, bit for bit, computed in batches."""

from __future__ import annotations

import numpy as np
import pytest
from datasketch import LeanMinHash, MinHash, MinHashLSH

from dedup.fingerprint import SignatureTable, shingle_hash, shingle_keys, shingles, signatures
from dedup.normalize import normalize


def _passages(text: str) -> list[str]:
    normalized = normalize(text).text
    return [normalized[start : start + 400] for start in range(0, len(normalized), 350)]


def test_signatures_match_datasketch_update_batch(
    seed_simplified: str, seed_traditional: str
) -> None:
    texts = _passages(seed_simplified) + _passages(seed_traditional) + ["短文"]
    computed = signatures(texts, ngram=5, num_perm=128, seed=7)
    for text, signature in zip(texts, computed, strict=True):
        reference = MinHash(num_perm=128, seed=7, scheme="affine32", hashfunc=shingle_hash)
        reference.update_batch([shingle.encode("utf-8") for shingle in shingles(text, 5)])
        assert np.array_equal(reference.hashvalues, signature)


@pytest.mark.parametrize(("num_perm", "seed"), [(128, 1), (64, 7), (256, 0), (1, 2**32 - 1)])
def test_permutations_are_those_datasketch_draws(num_perm: int, seed: int) -> None:
    from dedup.fingerprint import permutations

    a, b = MinHash(num_perm=num_perm, seed=seed, scheme="affine32").permutations
    ours = permutations(num_perm, seed)
    assert ours[0].dtype == ours[1].dtype == np.uint32
    assert np.array_equal(ours[0], a) and np.array_equal(ours[1], b)


def test_a_scan_does_not_import_datasketch() -> None:
    """datasketch imports its LSH and scipy's integration with it: about a second of every
    scan (numba imports a little of scipy itself)."""
    import subprocess
    import sys
    from pathlib import Path

    samples = Path(__file__).parents[1] / "corpus_samples"
    script = (
        "import sys, dedup; dedup.scan([sys.argv[1]], jobs=1); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'datasketch'))"
    )
    found = subprocess.run(
        [sys.executable, "-c", script, str(samples)], capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == "[]"


def test_signatures_work_with_datasketch_lsh(seed_simplified: str, seed_with_ads: str) -> None:
    texts = _passages(seed_simplified)[:3] + _passages(seed_with_ads)[:3]
    computed = signatures(texts, ngram=5, num_perm=128, seed=1)
    lsh = MinHashLSH(threshold=0.5, num_perm=128)
    for index, signature in enumerate(computed):
        lsh.insert(str(index), LeanMinHash(seed=1, hashvalues=signature, scheme="affine32"))
    probe = LeanMinHash(seed=1, hashvalues=computed[0], scheme="affine32")
    assert lsh.query(probe) == ["0"]


def test_vectorized_shingle_hash_equals_the_reference(seed_traditional: str) -> None:
    text = normalize(seed_traditional).text[:300]
    keys = shingle_keys(text, 5)
    expected = [shingle_hash(shingle.encode("utf-8")) for shingle in shingles(text, 5)]
    assert (keys >> np.uint64(32)).astype(np.uint32).tolist() == expected


@pytest.mark.parametrize("chunk_chars", [1, 1000, 1 << 20])
def test_chunk_boundaries_do_not_change_signatures(
    monkeypatch: pytest.MonkeyPatch, seed_simplified: str, chunk_chars: int
) -> None:
    from dedup import fingerprint

    monkeypatch.setattr(fingerprint, "_CHUNK_CHARS", chunk_chars)
    texts = [*_passages(seed_simplified) * 40, "", "短", *_passages(seed_simplified)]
    together = signatures(texts, 5, 64, 1)
    alone = np.concatenate([signatures([text], 5, 64, 1) for text in texts])
    assert np.array_equal(together, alone)
    assert (together[len(texts) - len(_passages(seed_simplified)) - 2] == 2**32 - 1).all()


def test_a_signature_table_reads_like_the_joined_array(
    monkeypatch: pytest.MonkeyPatch, seed_simplified: str
) -> None:
    monkeypatch.setattr(SignatureTable, "JOIN_BYTES", 2000)  # join some parts, not all
    texts = [seed_simplified[i : i + 300] for i in range(0, len(seed_simplified) - 300, 37)]
    parts = [
        signatures(texts[i : i + size], 3, 16, 1)
        for i, size in ((0, 5), (5, 0), (5, 40), (45, 1), (46, 30))
    ]
    joined = np.concatenate(parts)
    table = SignatureTable(16, parts)
    assert len(table) == len(joined) == 76
    assert np.array_equal(table.columns(4, 9), joined[:, 4:9])
    rows = np.array([0, 3, 4, 5, 44, 45, 46, 75])
    assert np.array_equal(table.columns(0, 16, rows), joined[rows])
    shuffled = np.array([75, 0, 46, 5, 5, 44])
    assert np.array_equal(table.rows(shuffled), joined[shuffled])


def test_a_signature_table_holds_no_row_for_a_copy_and_reads_zeros_there(
    monkeypatch: pytest.MonkeyPatch, seed_simplified: str
) -> None:
    """A later copy of a text comes back from the workers without its signature: the table
    holds rows for the others alone and reads as the table with zeros for the copies."""
    monkeypatch.setattr(SignatureTable, "JOIN_BYTES", 2000)
    texts = [seed_simplified[i : i + 300] for i in range(0, len(seed_simplified) - 300, 37)]
    made = signatures(texts, 3, 16, 1)
    present = np.ones(len(texts), dtype=np.bool_)
    present[[1, 2, 9, 40, 41, 42, len(texts) - 1]] = False
    expected = np.where(present[:, None], made, np.uint32(0))
    table = SignatureTable(16)
    for start, stop in ((0, 5), (5, 5), (5, 30), (30, 31), (31, len(texts))):
        part = present[start:stop]
        table.append(made[start:stop][part], None if part.all() else part)
    assert len(table) == len(texts)
    assert table._parts and sum(len(part) for part in table._parts) == present.sum()
    assert np.array_equal(table.settled().columns(0, 16), expected)
    rows = np.flatnonzero(present)[::3]
    assert np.array_equal(table.columns(2, 7, rows), made[rows, 2:7])
    assert np.array_equal(table.rows(rows[::-1]), made[rows[::-1]])


def test_signature_parts_are_joined_without_a_mapping_too(
    monkeypatch: pytest.MonkeyPatch, seed_simplified: str
) -> None:
    """Where the kernel will not map memory in one go (or the platform has no MAP_POPULATE),
    the joined parts are ordinary arrays holding the same signatures."""
    import mmap

    from dedup import fingerprint

    texts = [seed_simplified[i : i + 300] for i in range(0, len(seed_simplified) - 300, 37)]
    parts = [signatures(texts[i : i + 10], 3, 16, 1) for i in range(0, 70, 10)]
    monkeypatch.setattr(SignatureTable, "JOIN_BYTES", 1500)

    def refuse(*_args: object, **_kwargs: object) -> mmap.mmap:
        raise OSError("no memory to map")

    for broken in (False, True):
        if broken:
            monkeypatch.setattr(fingerprint.mmap, "mmap", refuse)
        table = SignatureTable(16, parts)
        assert np.array_equal(table.columns(0, 16), np.concatenate(parts))


def test_lsh_parameters_are_those_datasketch_chooses() -> None:
    from datasketch.lsh import _optimal_param

    from dedup.candidates import lsh_params

    for num_perm in (16, 64, 100, 128, 256):
        for threshold in (0.1, 0.2, 0.3, 0.35, 0.4, 0.5, 0.65, 0.8, 0.95):
            expected = _optimal_param(threshold, num_perm, 0.5, 0.5)
            assert lsh_params(threshold, num_perm) == tuple(expected), (threshold, num_perm)
