"""Cluster stage: verified pairs -> clusters, each with a deterministic representative."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from dedup.models import Cluster, Pair, Passage
from dedup.verify import Similarity


class UnionFind:
    def __init__(self, size: int) -> None:
        self.parent = list(range(size))

    def find(self, item: int) -> int:
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:  # path compression
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, first: int, second: int) -> None:
        a, b = self.find(first), self.find(second)
        if a != b:
            # The smaller index becomes the root, so the result never depends on pair order.
            self.parent[max(a, b)] = min(a, b)


def representative(members: Sequence[Passage]) -> Passage:
    """The longest passage (the fullest copy of the scene); ties go to the first in reading
    order."""
    return min(members, key=lambda member: (-len(member.text), member.sort_key))


def cluster_pairs(passages: Sequence[Passage], verified: Sequence[Similarity]) -> list[Cluster]:
    groups = UnionFind(len(passages))
    for pair in verified:
        groups.union(pair.first, pair.second)
    members: dict[int, list[int]] = defaultdict(list)
    pairs: dict[int, list[Pair]] = defaultdict(list)
    for index in sorted({i for pair in verified for i in (pair.first, pair.second)}):
        members[groups.find(index)].append(index)
    for pair in verified:
        a, b = sorted((passages[pair.first], passages[pair.second]), key=lambda p: p.sort_key)
        pairs[groups.find(pair.first)].append(
            Pair(
                a.id,
                b.id,
                pair.jaccard,
                pair.containment,
                pair.minhash_jaccard,
                pair.identical_chars,
            )
        )

    unnamed = []
    for root, indexes in members.items():
        cluster_members = tuple(sorted((passages[i] for i in indexes), key=lambda p: p.sort_key))
        order = {member.id: position for position, member in enumerate(cluster_members)}
        cluster_pairs_ = tuple(sorted(pairs[root], key=lambda pair: (order[pair.a], order[pair.b])))
        unnamed.append((cluster_members, cluster_pairs_))
    # Biggest clusters first; among equals, by the first member in reading order.
    unnamed.sort(key=lambda cluster: (-len(cluster[0]), cluster[0][0].sort_key))
    return [
        Cluster(
            id=f"c{number}",
            representative=representative(cluster_members).id,
            members=cluster_members,
            pairs=cluster_pairs_,
        )
        for number, (cluster_members, cluster_pairs_) in enumerate(unnamed, start=1)
    ]
