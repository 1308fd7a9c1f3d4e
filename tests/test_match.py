"""Candidates, verification and clustering on real near-duplicate passages."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import opencc
import pytest
from datasketch import MinHashLSH
from hypothesis import given, settings
from hypothesis import strategies as st

from dedup import cluster, verify
from dedup.candidates import candidate_pairs, lsh_params
from dedup.cluster import cluster_pairs
from dedup.codepoints import TextRun
from dedup.columns import Similarity, SimilarityTable, SpanTable
from dedup.engine.base import in_threads
from dedup.fingerprint import SignatureTable, shingles, signatures
from dedup.models import Cluster, Pair, Passage, PassageSpan
from dedup.normalize import normalize
from dedup.verify import identical_chars, verify_pairs, verify_table


def test_lsh_params_are_datasketchs() -> None:
    for threshold in (0.3, 0.5, 0.8):
        lsh = MinHashLSH(threshold=threshold, num_perm=128)
        assert lsh_params(threshold, 128) == (lsh.b, lsh.r)


def _windows(text: str) -> list[str]:
    normalized = normalize(text).text
    return [normalized[start : start + 400] for start in range(0, len(normalized) - 200, 400)]


def test_copies_across_scripts_are_found_and_different_novels_are_not(
    seed_simplified: str, seed_with_ads: str, seed_traditional: str
) -> None:
    a = _windows(seed_simplified)
    b = _windows(opencc.OpenCC("s2tw").convert(seed_simplified))
    others = _windows(seed_with_ads) + _windows(seed_traditional)
    texts = a + b + others
    sigs = signatures(texts, 5, 128, 1)
    pairs = candidate_pairs(sigs, *lsh_params(0.5, 128))
    verified = verify_pairs(pairs, texts, sigs, 5, 0.5, 0.8)
    found = {(pair.first, pair.second) for pair in verified}
    assert found == {(index, index + len(a)) for index in range(len(a))}
    for pair in verified:
        assert pair.jaccard == 1.0 and pair.containment == 1.0


def test_verification_is_exact_jaccard_and_containment(seed_simplified: str) -> None:
    text = normalize(seed_simplified).text
    first, second = text[:600], text[200:600]
    sigs = signatures([first, second], 5, 128, 1)
    (pair,) = verify_pairs(np.array([[0, 1]]), [first, second], sigs, 5, 0.1, 0.5)
    a, b = set(shingles(first, 5)), set(shingles(second, 5))
    assert pair.jaccard == len(a & b) / len(a | b)
    assert pair.containment == len(a & b) / min(len(a), len(b)) == 1.0
    assert abs(pair.minhash_jaccard - pair.jaccard) < 0.15


def _passage(path: str, start: int, text: str) -> Passage:
    return Passage(
        id=f"{path}:{start}-{start + len(text)}",
        source=path.split("/")[0],
        path=path,
        record=None,
        chapter=None,
        title=None,
        start=start,
        end=start + len(text),
        text=text,
        document=f"{path}:0-{start + len(text)}",
    )


def test_clusters_are_deterministic_and_pick_the_longest_member() -> None:
    passages = [
        _passage("b/x.txt", 0, "甲乙丙丁戊己"),
        _passage("a/x.txt", 10, "甲乙丙丁戊己庚"),
        _passage("c/x.txt", 0, "子丑寅卯"),
        _passage("a/y.txt", 0, "子丑寅卯辰"),
        _passage("d/z.txt", 0, "无关"),
    ]
    links = [Similarity(0, 1, 0.9, 1.0, 0.9, 6), Similarity(2, 3, 0.8, 1.0, 0.8, 4)]
    clusters = cluster_pairs(dict(enumerate(passages)), links)
    assert cluster_pairs(dict(enumerate(passages)), list(reversed(links))) == clusters
    assert [[m.path for m in c.members] for c in clusters] == [
        ["a/x.txt", "b/x.txt"],
        ["a/y.txt", "c/x.txt"],
    ]
    assert clusters[0].representative == "a/x.txt:10-17"
    assert [c.id for c in clusters] == ["c1", "c2"]


def test_union_find_joins_chains() -> None:
    groups = cluster.components(np.array([3, 4]), np.array([4, 1]), 5)
    assert groups[3] == groups[1] == 1
    assert groups[0] != groups[2]


def test_boilerplate_repeated_thousands_of_times_stays_linear(seed_with_ads: str) -> None:
    """The same disclaimer after 3,000 chapters: one cluster, not 4.5 million pairs."""
    disclaimer = normalize(seed_with_ads).text[:120]
    texts = [disclaimer] * 3000 + _windows(seed_with_ads)
    sigs = signatures(texts, 5, 128, 1)
    pairs = candidate_pairs(sigs, *lsh_params(0.5, 128))
    assert len(pairs) < 3000 * 2
    verified = verify_pairs(pairs, texts, sigs, 5, 0.5, 0.8)
    passages = [_passage(f"s{i}/x.txt", 0, text) for i, text in enumerate(texts)]
    clusters = cluster_pairs(dict(enumerate(passages)), verified)
    assert len(clusters) == 1 and len(clusters[0].members) == 3000


def test_keep_policies_and_chained_members() -> None:
    passages = [
        _passage("site-a/x.txt", 0, "甲乙丙丁戊己庚辛"),
        _passage("site-b/x.txt", 0, "甲乙丙丁戊己庚辛壬癸"),
        _passage("site-c/x.txt", 0, "甲乙丙丁戊"),
    ]
    # a~b and b~c verified, a~c not: c belongs only through b when a represents the cluster.
    links = [Similarity(0, 1, 0.8, 1.0, 0.8, 8), Similarity(1, 2, 0.5, 1.0, 0.5, 5)]
    (longest,) = cluster_pairs(dict(enumerate(passages)), links, keep="longest")
    assert longest.representative == "site-b/x.txt:0-10" and longest.linked_through_others == ()
    (first,) = cluster_pairs(dict(enumerate(passages)), links, keep="first")
    assert first.representative == "site-a/x.txt:0-8"
    assert first.linked_through_others == ("site-c/x.txt:0-5",)
    (preferred,) = cluster_pairs(dict(enumerate(passages)), links, keep="source:site-c,site-a")
    assert preferred.representative == "site-c/x.txt:0-5"
    (giant,) = cluster_pairs(dict(enumerate(passages)), links, max_cluster_size=2)
    assert giant.giant


def test_overlapping_passages_of_one_text_never_pair() -> None:
    from dedup.candidates import without_overlapping

    passages = [
        _passage("a/x.txt", 0, "甲" * 400),
        _passage("a/x.txt", 300, "乙" * 400),  # overlaps the first: cut with --passage-overlap
        _passage("a/x.txt", 700, "丙" * 400),  # same text, no overlap (touching): may pair
        _passage("b/x.txt", 0, "甲" * 400),
    ]
    pairs = np.array([[0, 1], [0, 2], [0, 3], [1, 2]])
    spans = SpanTable.of(
        [
            PassageSpan(p.source, p.path, p.record, p.chapter, p.title, p.start, p.end)
            for p in passages
        ]
    )
    assert without_overlapping(pairs, spans).tolist() == [[0, 2], [0, 3], [1, 2]]
    # fewer pairs than passages: each pair's documents searched, not a document a passage
    assert without_overlapping(pairs[:1], spans).tolist() == []
    assert without_overlapping(pairs[1:2], spans).tolist() == [[0, 2]]

    # Where the workers keep the ends (a cluster), only the pairs within one text ask.
    asked: list[list[int]] = []

    class Elsewhere:
        def __len__(self) -> int:
            return len(spans)

        def ends_of(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            asked.append(sorted(set(rows.tolist())))
            return spans.start[rows], spans.end[rows]

        def let_go(self) -> None:
            pass

    held = spans.without_ends().ends_held_by(Elsewhere())
    assert without_overlapping(pairs, held).tolist() == [[0, 2], [0, 3], [1, 2]]
    assert asked == [[0, 1, 2]]  # not passage 3, of another file


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.text(alphabet="天地玄黄宇宙洪荒日月盈", min_size=0, max_size=40), min_size=2, max_size=6
    ),
    st.integers(min_value=1, max_value=5),
)
def test_every_pair_is_scored_as_its_shingle_sets_say(texts: list[str], ngram: int) -> None:
    pairs = np.array([(i, j) for i in range(len(texts)) for j in range(len(texts)) if i != j])
    sigs = signatures(texts, ngram, 16, 1)
    found = {(p.first, p.second): p for p in verify_pairs(pairs, texts, sigs, ngram, 0.0, 0.0)}
    for first, second in pairs.tolist():
        a, b = set(shingles(texts[first], ngram)), set(shingles(texts[second], ngram))
        if not a or not b:
            assert (first, second) not in found or found[(first, second)].jaccard == 0.0
            continue
        pair = found[(first, second)]
        assert pair.jaccard == len(a & b) / len(a | b)
        assert pair.containment == len(a & b) / min(len(a), len(b))
        assert pair.identical_chars == identical_chars(texts[first], texts[second], ngram)


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet="天地玄黄宇宙洪荒", min_size=0, max_size=40),
    st.text(alphabet="天地玄黄宇宙洪荒", min_size=0, max_size=40),
    st.integers(min_value=1, max_value=5),
)
def test_identical_characters_are_those_in_an_ngram_the_other_has(
    a: str, b: str, ngram: int
) -> None:
    """雷同字数 by its definition: a character of ``a`` counts when an n-gram of ``a`` that
    holds it is also in ``b`` (a text shorter than the n-gram is one shingle, itself)."""
    width = min(ngram, len(a))
    grams_b = set(shingles(b, ngram))
    covered = {
        position
        for start in range(len(a) - width + 1)
        if width and a[start : start + width] in grams_b
        for position in range(start, start + width)
    }
    assert identical_chars(a, b, ngram) == len(covered)


def _reference_clusters(
    passages: dict[int, Passage], verified: list[Similarity], keep: str, largest: int
) -> list[Cluster]:
    """Clustering as it was written before it was vectorized: one object at a time."""
    parent = list(range(max(passages, default=-1) + 1))

    def find(item: int) -> int:
        while parent[item] != item:
            item = parent[item]
        return item

    for pair in verified:
        a, b = find(pair.first), find(pair.second)
        parent[max(a, b)] = min(a, b)
    members: dict[int, list[int]] = {}
    pairs: dict[int, list[Pair]] = {}
    for index in sorted({i for pair in verified for i in (pair.first, pair.second)}):
        members.setdefault(find(index), []).append(index)
    for pair in verified:
        a, b = sorted((passages[pair.first], passages[pair.second]), key=lambda p: p.sort_key)
        pairs.setdefault(find(pair.first), []).append(
            Pair(
                a.id,
                b.id,
                pair.jaccard,
                pair.containment,
                pair.minhash_jaccard,
                pair.identical_chars,
            )
        )
    built = []
    for root, indexes in members.items():
        cluster_members = tuple(sorted((passages[i] for i in indexes), key=lambda p: p.sort_key))
        order = {member.id: position for position, member in enumerate(cluster_members)}
        found = tuple(sorted(pairs[root], key=lambda pair: (order[pair.a], order[pair.b])))
        chosen = _reference_representative(cluster_members, keep).id
        direct = {pair.a for pair in found if pair.b == chosen}
        direct |= {pair.b for pair in found if pair.a == chosen}
        through = tuple(m.id for m in cluster_members if m.id != chosen and m.id not in direct)
        built.append((cluster_members, found, chosen, through, len(cluster_members) > largest))
    built.sort(key=lambda c: (c[4], -len(c[0]), c[0][0].sort_key))
    return [
        Cluster(f"c{n}", chosen, found_members, found, through, giant)
        for n, (found_members, found, chosen, through, giant) in enumerate(built, start=1)
    ]


def _reference_representative(members: tuple[Passage, ...], keep: str) -> Passage:
    if keep == "first":
        return min(members, key=lambda member: member.sort_key)
    if keep.startswith("source:"):
        rank = {name: n for n, name in enumerate(keep.removeprefix("source:").split(","))}
        return min(
            members, key=lambda m: (rank.get(m.source, len(rank)), -(m.end - m.start), m.sort_key)
        )
    return min(members, key=lambda member: (-(member.end - member.start), member.sort_key))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["s1/a.txt", "s2/a.txt", "s3/b.txt"]),
            st.integers(0, 30),
            st.integers(1, 4),
        ),
        min_size=2,
        max_size=14,
        unique_by=lambda p: (p[0], p[1]),
    ),
    st.lists(st.tuples(st.integers(0, 13), st.integers(0, 13), st.floats(0, 1)), max_size=25),
    st.sampled_from(["longest", "first", "source:s3,s1"]),
    st.integers(1, 4),
)
def test_clusters_equal_the_one_object_at_a_time_reference(
    spans: list[tuple[str, int, int]],
    links: list[tuple[int, int, float]],
    keep: str,
    largest: int,
) -> None:
    passages = {
        # Scan order is not reading order: number them backwards from the spans' order.
        len(spans) - 1 - i: _passage(path, start * 10, "甲" * length)
        for i, (path, start, length) in enumerate(spans)
    }
    verified = [
        Similarity(x % len(spans), y % len(spans), score, score, score, int(score * 10))
        for x, y, score in links
        if x % len(spans) != y % len(spans)
    ]
    found = cluster_pairs(passages, verified, keep, largest)
    assert found == _reference_clusters(passages, verified, keep, largest)
    # the same from a table whose columns are taken over rather than copied
    table = SimilarityTable.of(verified)
    assert cluster_pairs(passages, table, keep, largest, in_place=True) == found


def test_a_similarity_table_holds_the_pairs_it_was_made_of(seed_with_ads: str) -> None:
    texts = _windows(seed_with_ads)
    texts += [text[3:] for text in texts]  # each window again, a little shorter
    sigs = signatures(texts, 5, 128, 1)
    pairs = candidate_pairs(sigs, *lsh_params(0.5, 128))
    table = verify_table(pairs, texts, sigs, 5, 0.5, 0.8)
    verified = verify_pairs(pairs, texts, sigs, 5, 0.5, 0.8)
    assert len(verified) >= len(texts) // 2
    assert list(table) == verified == list(SimilarityTable.of(verified))
    assert table[-1] == verified[-1] and table[1:3] == verified[1:3]
    both = SimilarityTable.concatenate([table, table])
    assert list(both) == verified + verified
    assert list(table.where(table.jaccard < 1.0)) == [p for p in verified if p.jaccard < 1.0]


def test_verifying_in_chunks_on_threads_gives_the_same_table(
    seed_with_ads: str, seed_simplified: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = _windows(seed_with_ads) + _windows(seed_simplified)
    texts += [text[3:] for text in texts] + [text[:-5] for text in texts]
    sigs = signatures(texts, 3, 128, 1)
    pairs = candidate_pairs(sigs, *lsh_params(0.4, 128))
    whole = verify_table(pairs, texts, sigs, 3, 0.4, 0.7)
    assert len(pairs) > 40 and len(whole) > 20

    class Threads:
        def in_threads(self, function: Any, items: Any) -> Any:
            return in_threads(function, items, 3)

    # Chunks of a few texts, first texts and pairs: every join of chunks is exercised.
    monkeypatch.setattr(verify, "_TEXTS_AT_ONCE", 7)
    monkeypatch.setattr(verify, "_FIRSTS_AT_ONCE", 5)
    monkeypatch.setattr(verify, "_PAIRS_AT_ONCE", 11)
    chunked = verify_table(pairs, texts, sigs, 3, 0.4, 0.7, Threads())
    assert list(chunked) == list(whole)
    # Blocks of a few groups of texts, each block's shingle sets made and let go in turn.
    monkeypatch.setattr(verify, "_CHARACTERS_AT_ONCE", 300)
    blocked = verify_table(pairs, texts, sigs, 3, 0.4, 0.7, Threads())
    assert list(blocked) == list(whole)
    # A cluster's worker scores a block given its texts' code points rather than strings:
    # the same scores, across the chunks' joins, characters past U+FFFF and short texts too.
    rare = [text[:20] + "𠀀𪚥" + text[20:] for text in texts[:10]]
    block = [*texts, *rare, "", "天"]
    more = [(i, len(texts) + i) for i in range(10)] + [(0, len(block) - 2), (1, len(block) - 1)]
    local = np.concatenate((pairs, np.array(more, dtype=np.int64)))
    codes = np.array([ord(c) for c in "".join(block)], dtype=np.uint32)
    lengths = np.array([len(t) for t in block], dtype=np.int64)
    given_codes = verify.scored_pairs(codes, lengths, local, 3)
    given_texts = verify._scored_block(local, block, 3, map)
    # Here, the scan's texts are one run of UTF-16 (TextRun), each chunk's code points made
    # on the threads.
    run = TextRun.of(block)
    every = np.arange(len(block))
    given_run = verify._scored_block(local, verify.RunRows(run, every, run.lengths(every)), 3, map)
    for scores, from_run, expected in zip(given_codes, given_run, given_texts, strict=True):
        assert scores.tolist() == from_run.tolist() == expected.tolist()
    assert (given_texts[0][-12:-2] > 0.5).all()  # the rare characters' copies still match
    assert list(verify_table(pairs, TextRun.of(texts), sigs, 3, 0.4, 0.7, Threads())) == list(whole)


def test_threads_run_only_a_few_chunks_ahead_of_the_one_taken(seed_with_ads: str) -> None:
    """in_threads gives the results in order and starts at most two chunks a thread beyond
    the one taken: a finished chunk's result (a block's shingle sets) waits until taken, so
    those ahead must stay few, however many chunks there are."""
    chunks = [[text] for text in _windows(seed_with_ads)] * 4
    assert len(chunks) > 40
    started = 0
    lock = threading.Lock()

    def shingle_set(chunk: list[str]) -> Any:
        nonlocal started
        with lock:
            started += 1
        return verify._shingle_sets(chunk, 3)

    taken = 0
    for got, chunk in zip(in_threads(shingle_set, chunks, 3), chunks, strict=True):
        taken += 1
        assert started - taken <= 2 * 3
        expected = verify._shingle_sets(chunk, 3)
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
        time.sleep(0.001)  # a slow consumer: the threads would otherwise run through them all
    assert taken == started == len(chunks)


def test_verification_blocks_hold_whole_groups_of_candidates(
    seed_with_ads: str, seed_simplified: str
) -> None:
    """Each block of texts verified together holds whole connected groups of the candidate
    pairs, so every pair's two texts are in its block; every text and pair is in one block."""
    texts = _windows(seed_with_ads) + _windows(seed_simplified)
    texts += [text[3:] for text in texts] + [text[:-5] for text in texts]
    sigs = signatures(texts, 3, 128, 1)
    pairs = candidate_pairs(sigs, *lsh_params(0.4, 128))
    involved = np.unique(pairs)
    local = np.searchsorted(involved, pairs)
    lengths = np.array([len(texts[i]) for i in involved.tolist()], dtype=np.int64)
    blocks = list(verify._text_blocks(local, lengths, 2_000))
    assert len(blocks) > 3
    for block_texts, block_pairs in blocks:
        assert set(local[block_pairs].ravel().tolist()) <= set(block_texts.tolist())
    assert sorted(t for b, _ in blocks for t in b.tolist()) == list(range(len(involved)))
    assert sorted(p for _, b in blocks for p in b.tolist()) == list(range(len(pairs)))
    # A block closes once it holds the characters asked for: all but the last reach it.
    assert all(lengths[b].sum() >= 2_000 for b, _ in blocks[:-1])


def test_banding_on_threads_gives_the_same_pairs(seed_with_ads: str, seed_simplified: str) -> None:
    texts = _windows(seed_with_ads) + _windows(seed_simplified)
    texts += [text[3:] for text in texts]
    sigs = signatures(texts, 3, 128, 1)

    class Threads:
        def in_threads(self, function: Any, items: Any) -> Any:
            return in_threads(function, items, 4)

    bands, rows = lsh_params(0.4, 128)
    alone = candidate_pairs(sigs, bands, rows)
    among = np.arange(0, len(texts), 2, dtype=np.int64)
    assert len(alone) > 10
    # A fresh table each time: its first read (joining its parts) is from several threads.
    assert np.array_equal(candidate_pairs(sigs, bands, rows, threads=Threads()), alone)
    assert np.array_equal(
        candidate_pairs(sigs, bands, rows, among, Threads()),
        candidate_pairs(sigs, bands, rows, among),
    )


def test_candidate_pairs_are_every_pair_sharing_a_band(
    seed_with_ads: str, seed_simplified: str
) -> None:
    """Against pairs made one band at a time from a dict of buckets: bands merged as they
    come give every pair once, among all passages or some."""
    from itertools import combinations

    from dedup.candidates import band_keys

    texts = _windows(seed_with_ads) + _windows(seed_simplified)
    texts += [text[3:] for text in texts] + [text[:-7] for text in texts]
    sigs = signatures(texts, 3, 128, 1)
    bands, rows = lsh_params(0.4, 128)
    keys = band_keys(SignatureTable.of(sigs), bands, rows)
    for among, least in ((np.arange(len(texts)), 20), (np.arange(1, len(texts), 2), 5)):
        expected = set()
        for band in range(bands):
            buckets: dict[int, list[int]] = {}
            for row in among.tolist():
                buckets.setdefault(int(keys[row, band]), []).append(row)
            expected |= {pair for rows_ in buckets.values() for pair in combinations(rows_, 2)}
        found = candidate_pairs(sigs, bands, rows, among.astype(np.int64))
        assert [tuple(pair) for pair in found.tolist()] == sorted(expected)
        assert len(expected) > least


def _blocks_by_substrings(a: str, b: str, ngram: int) -> list[list[int]]:
    """shared_blocks as first written, on a dict of b's n-gram strings: the reference, as
    rows ``[a_start, b_start, length]``."""
    if len(a) < ngram or len(b) < ngram:
        return []
    positions: dict[str, list[int]] = {}
    for index in range(len(b) - ngram + 1):
        positions.setdefault(b[index : index + ngram], []).append(index)
    blocks, cursor, index = [], 0, 0
    while index <= len(a) - ngram:
        candidates = positions.get(a[index : index + ngram])
        if not candidates:
            index += 1
            continue
        start = next((p for p in candidates if p >= cursor), candidates[0])
        length = ngram
        while index + length < len(a) and start + length < len(b):
            if a[index + length] != b[start + length]:
                break
            length += 1
        blocks.append([index, start, length])
        cursor, index = start + length, index + length
    return blocks


def test_shared_blocks_are_the_greedy_stretches_of_the_reference(
    seed_simplified: str, seed_with_ads: str, seed_traditional: str
) -> None:
    """The palette's stretches (compiled, on n-gram keys checked character by character)
    are those the plain loop over a dict of n-gram strings finds: a scene and its edited
    copies (cut, moved, repeated), and different novels that share only common phrases."""
    scene = normalize(seed_simplified).text[:3000]
    edited = scene[:700] + scene[1500:2200] + "他说了。" * 30 + scene[700:1500] + scene[2200:]
    others = [normalize(text).text[:3000] for text in (seed_with_ads, seed_traditional)]
    compared = 0
    for a, b in [(edited, scene), (scene, edited), (others[0], scene), (scene, others[1])]:
        for ngram in (3, 5):
            index = verify.ngram_index(b, ngram)
            found = verify.shared_blocks(a, b, ngram, index).tolist()
            assert found == verify.shared_blocks(a, b, ngram).tolist()
            assert found == _blocks_by_substrings(a, b, ngram)
            compared += len(found)
    assert compared > 100


@settings(max_examples=200, deadline=None)
@given(
    st.text("了他说。ab", max_size=60), st.text("了他说。ab", max_size=60), st.sampled_from([2, 3])
)
def test_shared_blocks_of_repetitive_texts_are_the_references(a: str, b: str, ngram: int) -> None:
    assert verify.shared_blocks(a, b, ngram).tolist() == _blocks_by_substrings(a, b, ngram)
