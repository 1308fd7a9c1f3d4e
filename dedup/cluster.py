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

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from dedup.arrays import sorted_unique
from dedup.compiled import compiled
from dedup.models import Cluster, Pair, Passage
from dedup.verify import Similarity, SimilarityTable

KEEP_POLICIES = ("longest", "first", "source:NAME,...")


def cluster_pairs(
    passages: Mapping[int, Passage],
    verified: Sequence[Similarity],
    keep: str = "longest",
    max_cluster_size: int = 200,
) -> list[Cluster]:
    """Clusters of the verified pairs; ``passages`` holds (at least) every passage a pair names,
    by its index."""
    if not len(verified):
        return []
    table = SimilarityTable.of(verified)
    first, second = table.first, table.second
    indexes = sorted_unique(np.concatenate((first, second)))
    members = [passages[index] for index in indexes.tolist()]
    ids = [member.id for member in members]
    rank = _reading_ranks(members)
    a, b = np.searchsorted(indexes, first), np.searchsorted(indexes, second)
    a, b = np.where(rank[a] < rank[b], a, b), np.where(rank[a] < rank[b], b, a)
    component = _components(a, b, len(members))

    # Members by cluster, each cluster in reading order; pairs likewise, by their two members.
    by_cluster = np.lexsort((rank, component))
    starts = np.flatnonzero(np.diff(component[by_cluster], prepend=-1))
    pair_order = np.lexsort((np.arange(len(a)), rank[b], rank[a], component[a]))
    pair_starts = np.searchsorted(component[a][pair_order], component[by_cluster][starts])
    chosen = _representatives(members, rank, by_cluster, starts, keep)

    # One Python object per distinct value: a million exact copies all score 1.0.
    jaccard, containment, estimate, identical = (
        _shared_values(column)
        for column in (
            table.jaccard,
            table.containment,
            table.minhash_jaccard,
            table.identical_chars,
        )
    )
    built = []
    groups = np.split(by_cluster, starts[1:])
    pair_groups = np.split(pair_order, pair_starts[1:])
    for group, pair_group, representative_at in zip(groups, pair_groups, chosen, strict=True):
        cluster_members = tuple(members[i] for i in group.tolist())
        pair_a, pair_b = a[pair_group], b[pair_group]
        cluster_pairs_ = tuple(
            Pair(ids[x], ids[y], jaccard[k], containment[k], estimate[k], identical[k])
            for x, y, k in zip(pair_a.tolist(), pair_b.tolist(), pair_group.tolist(), strict=True)
        )
        direct = set(pair_a[pair_b == representative_at].tolist())
        direct |= set(pair_b[pair_a == representative_at].tolist())
        through = tuple(
            ids[i] for i in group.tolist() if i != representative_at and i not in direct
        )
        giant = len(cluster_members) > max_cluster_size
        built.append(
            (
                giant,
                -len(group),
                int(rank[group[0]]),
                cluster_members,
                cluster_pairs_,
                members[representative_at].id,
                through,
            )
        )
    # Biggest clusters first (giant ones last); among equals, by the first member in reading order.
    built.sort(key=lambda c: c[:3])
    return [
        Cluster(
            id=f"c{number}",
            representative=chosen_id,
            members=cluster_members,
            pairs=cluster_pairs_,
            linked_through_others=through,
            giant=giant,
        )
        for number, (
            giant,
            _size,
            _first,
            cluster_members,
            cluster_pairs_,
            chosen_id,
            through,
        ) in enumerate(built, start=1)
    ]


def _shared_values(column: npt.NDArray[Any]) -> list[Any]:
    values: dict[Any, Any] = {}
    return [values.setdefault(value, value) for value in column.tolist()]


def _reading_ranks(members: Sequence[Passage]) -> npt.NDArray[np.int64]:
    """Each member's place in reading order (path, record, start, end), by one array sort."""
    paths = {path: number for number, path in enumerate(sorted({m.path for m in members}))}
    count = len(members)
    by_order = np.lexsort(
        (
            np.fromiter((m.end for m in members), dtype=np.int64, count=count),
            np.fromiter((m.start for m in members), dtype=np.int64, count=count),
            np.fromiter(
                (-1 if m.record is None else m.record for m in members), np.int64, count=count
            ),
            np.fromiter((paths[m.path] for m in members), dtype=np.int64, count=count),
        )
    )
    rank = np.empty(count, dtype=np.int64)
    rank[by_order] = np.arange(count)
    return rank


def _representatives(
    members: Sequence[Passage],
    rank: npt.NDArray[np.int64],
    by_cluster: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    keep: str,
) -> list[int]:
    """The member each cluster keeps, by the keep policy (see the module docstring), for all
    clusters at once."""
    if keep == "first":
        chosen: list[int] = by_cluster[starts].tolist()  # members are in reading order
        return chosen
    length = np.array([member.end - member.start for member in members], dtype=np.int64)
    preference = np.zeros(len(members), dtype=np.int64)
    if keep.startswith("source:"):
        names = [name.strip() for name in keep.removeprefix("source:").split(",")]
        ranks = {name: position for position, name in enumerate(names)}
        preference = np.array([ranks.get(m.source, len(ranks)) for m in members], dtype=np.int64)
    cluster_of = np.repeat(np.arange(len(starts)), np.diff(starts, append=len(by_cluster)))
    best = np.lexsort((rank[by_cluster], -length[by_cluster], preference[by_cluster], cluster_of))
    chosen = by_cluster[best[starts]].tolist()
    return chosen


@compiled
def _components(
    first: npt.NDArray[np.int64], second: npt.NDArray[np.int64], size: int
) -> npt.NDArray[np.int64]:
    """Union-find over the pairs: for each item, the smallest item of its connected group."""
    parent = np.arange(size)
    for pair in range(first.shape[0]):
        x, y = first[pair], second[pair]
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        while parent[y] != y:
            parent[y] = parent[parent[y]]
            y = parent[y]
        if x != y:
            parent[max(x, y)] = min(x, y)
    for item in range(size):
        parent[item] = parent[parent[item]]  # roots are smaller than their items: one step
    return parent
