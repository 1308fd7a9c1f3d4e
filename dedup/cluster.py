"""Cluster stage: verified pairs -> clusters, each with a deterministic representative.

Rules (documented in docs/report-format.md):
- Clusters are the connected groups of verified pairs (union-find).
- The representative is chosen by the keep policy: ``longest`` (the fullest copy of the scene),
  ``first`` (the first in reading order: path, record, offset), or ``source:A,B,...`` (a member
  from the first listed source that has one, the longest among those); ties always go to the
  first in reading order.
- No silent chaining: a member with no verified pair with the representative (A≈B, B≈C, but A
  and C not verified alike) is listed in ``linked_through_others``, so a reader sees which
  members only belong through another.
- A cluster with more than ``max_cluster_size`` members is almost always site boilerplate that
  survived normalization: it is marked ``giant`` and listed after the others.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

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


KEEP_POLICIES = ("longest", "first", "source:NAME,...")


def representative(members: Sequence[Passage], keep: str = "longest") -> Passage:
    """The member to keep, by the keep policy (see the module docstring)."""
    if keep == "first":
        return min(members, key=lambda member: member.sort_key)
    if keep.startswith("source:"):
        preference = [name.strip() for name in keep.removeprefix("source:").split(",")]
        rank = {name: position for position, name in enumerate(preference)}
        return min(
            members,
            key=lambda m: (rank.get(m.source, len(rank)), -(m.end - m.start), m.sort_key),
        )
    return min(members, key=lambda member: (-(member.end - member.start), member.sort_key))


def cluster_pairs(
    passages: Mapping[int, Passage],
    verified: Sequence[Similarity],
    keep: str = "longest",
    max_cluster_size: int = 200,
) -> list[Cluster]:
    """Clusters of the verified pairs; ``passages`` holds (at least) every passage a pair names,
    by its index."""
    groups = UnionFind(max(passages, default=-1) + 1)
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

    built = []
    for root, indexes in members.items():
        cluster_members = tuple(sorted((passages[i] for i in indexes), key=lambda p: p.sort_key))
        order = {member.id: position for position, member in enumerate(cluster_members)}
        cluster_pairs_ = tuple(sorted(pairs[root], key=lambda pair: (order[pair.a], order[pair.b])))
        chosen = representative(cluster_members, keep).id
        direct = {pair.a for pair in cluster_pairs_ if pair.b == chosen}
        direct |= {pair.b for pair in cluster_pairs_ if pair.a == chosen}
        through = tuple(m.id for m in cluster_members if m.id != chosen and m.id not in direct)
        giant = len(cluster_members) > max_cluster_size
        built.append((cluster_members, cluster_pairs_, chosen, through, giant))
    # Biggest clusters first (giant ones last); among equals, by the first member in reading order.
    built.sort(key=lambda c: (c[4], -len(c[0]), c[0][0].sort_key))
    return [
        Cluster(
            id=f"c{number}",
            representative=chosen,
            members=cluster_members,
            pairs=cluster_pairs_,
            linked_through_others=through,
            giant=giant,
        )
        for number, (cluster_members, cluster_pairs_, chosen, through, giant) in enumerate(
            built, start=1
        )
    ]
