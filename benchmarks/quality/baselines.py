"""The tools a user would try instead of dedup, run on the same chapter files.

Runs inside the separate virtual environment ``run.py`` creates (text-dedup, jieba and
datasketch from PyPI); it never imports dedup. Reads documents as JSON Lines ({"path", "text"},
decoded by run.py) and prints the predicted duplicate file pairs as JSON.

    python baselines.py METHOD DOCS.jsonl

METHOD: text-dedup (its MinHash with default settings), text-dedup-chars (the same with every
character a token, its best settings for Chinese), datasketch-5gram (MinHashLSH over
whitespace-free character 5-grams, no script normalization), jieba-words (MinHashLSH over jieba
word 3-grams).
"""

from __future__ import annotations

import itertools
import json
import re
import sys
import time
from collections import defaultdict

import numpy as np


def _components(count: int, edges: list[tuple[int, int]]) -> list[list[int]]:
    parent = list(range(count))

    def find(item: int) -> int:
        while parent[item] != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    for a, b in edges:
        parent[find(a)] = find(b)
    groups: dict[int, list[int]] = defaultdict(list)
    for index in range(count):
        groups[find(index)].append(index)
    return [group for group in groups.values() if len(group) > 1]


def text_dedup(texts: list[str], spaced: bool, threshold: float) -> list[tuple[int, int]]:
    from text_dedup import minhash as td
    from text_dedup.utils import optimal_param, sha1_hash

    num_perm, ngram, min_length = 250, 5, 5  # text-dedup's defaults
    if spaced:
        texts = [" ".join("".join(text.split())) for text in texts]
    dtype, max_hash, prime = np.uint64, np.uint32((1 << 32) - 1), np.uint64((1 << 61) - 1)
    bands, rows = optimal_param(
        threshold, num_perm, false_positive_weight=0.5, false_negative_weight=0.5
    )
    ranges = [(i * rows, (i + 1) * rows) for i in range(bands)]
    rng = np.random.RandomState(42)
    permutations = (
        rng.randint(1, prime, size=(num_perm,), dtype=dtype),
        rng.randint(0, prime, size=(num_perm,), dtype=dtype),
    )
    tables: list[dict[bytes, set[int]]] = [defaultdict(set) for _ in range(bands)]
    for index, text in enumerate(texts):
        if len(td.NON_ALPHA.split(text.lower())) < min_length:
            continue  # text-dedup leaves short documents out
        embedded = td.embed_func(
            text, index, num_perm=num_perm, ngram_size=ngram, min_length=min_length,
            hashranges=ranges, permutations=permutations,
            hash_func=lambda data: sha1_hash(data, d=32), dtype=dtype, max_hash=max_hash,
            modulo_prime=prime,
        )  # fmt: skip
        for band, key in enumerate(embedded[td.SIGNATURE_COLUMN]):
            tables[band][key].add(index)
    edges = [(min(bucket), other) for table in tables for bucket in table.values()
             if len(bucket) > 1 for other in bucket]  # fmt: skip
    return _pairs(_components(len(texts), edges))


def _pairs(groups: list[list[int]]) -> list[tuple[int, int]]:
    return [pair for group in groups for pair in itertools.combinations(sorted(group), 2)]


def lsh(shingle_sets: list[set[str]], threshold: float = 0.5) -> list[tuple[int, int]]:
    from datasketch import MinHash, MinHashLSH

    index = MinHashLSH(threshold=threshold, num_perm=128)
    sketches = []
    for number, shingles in enumerate(shingle_sets):
        sketch = MinHash(num_perm=128)
        sketch.update_batch([s.encode("utf-8") for s in shingles])
        index.insert(number, sketch)
        sketches.append(sketch)
    found = set()
    for number, sketch in enumerate(sketches):
        for other in index.query(sketch):
            if other != number:
                found.add((min(number, other), max(number, other)))
    return sorted(found)


def main() -> None:
    method, docs = sys.argv[1], sys.argv[2]
    with open(docs, encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines]
    texts = [record["text"] for record in records]
    started = time.perf_counter()
    if method == "text-dedup":
        pairs = text_dedup(texts, spaced=False, threshold=0.7)
    elif method == "text-dedup-chars":
        pairs = text_dedup(texts, spaced=True, threshold=0.5)
    elif method == "datasketch-5gram":
        flat = ["".join(text.split()) for text in texts]
        pairs = lsh([{t[i : i + 5] for i in range(len(t) - 4)} for t in flat])
    elif method == "jieba-words":
        import jieba

        jieba.setLogLevel(60)
        words = [
            [w for w in jieba.lcut("".join(t.split())) if not re.fullmatch(r"\W+", w)]
            for t in texts
        ]
        pairs = lsh([{"".join(w[i : i + 3]) for i in range(len(w) - 2)} for w in words])
    else:
        raise SystemExit(f"unknown method {method}")
    seconds = time.perf_counter() - started
    print(json.dumps({"pairs": [[records[a]["path"], records[b]["path"]] for a, b in pairs],
                      "seconds": seconds}))  # fmt: skip


if __name__ == "__main__":
    main()
