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

import logging
from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from dedup.arrays import objects, sorted_unique
from dedup.columns import Similarity, SimilarityTable
from dedup.config import kept_sources
from dedup.kernels import compiled
from dedup.models import Cluster, InputFile, MemberIds, PairTable, Passage

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=np.generic)

KEEP_POLICIES = ("longest", "first", "source:NAME,...")


def cluster_pairs(
    passages: Mapping[int, Passage],
    verified: Sequence[Similarity],
    keep: str = "longest",
    max_cluster_size: int = 200,
    in_place: bool = False,
) -> list[Cluster]:
    """Clusters of the verified pairs; ``passages`` holds (at least) every passage a pair names,
    by its index. ``in_place``: ``verified`` (a SimilarityTable its caller is done with) has
    its columns overwritten and taken into the clusters' pairs rather than copied (a large
    dump's pairs are millions: the scan's peak was its pairs held twice here)."""
    if not len(verified):
        return []
    table = SimilarityTable.of(verified)
    in_place = in_place and table is verified
    first, second = table.first, table.second
    indexes = sorted_unique(np.concatenate((first, second)))
    members = list(map(passages.__getitem__, indexes.tolist()))
    member_starts, member_ends = _column(members, "start"), _column(members, "end")
    rank = _reading_ranks(members, member_starts, member_ends)
    if in_place:  # the pairs by member number, over the pairs by passage index
        first[:], second[:] = np.searchsorted(indexes, first), np.searchsorted(indexes, second)
        a, b = first, second
    else:
        a, b = np.searchsorted(indexes, first), np.searchsorted(indexes, second)
    del first, second
    swap = rank[a] > rank[b]  # each pair first to last in reading order, in place
    a[swap], b[swap] = b[swap], a[swap]
    component = components(a, b, len(members))

    # Members by cluster, each cluster in reading order; pairs likewise, by their two members.
    by_cluster = np.lexsort((rank, component))
    starts = np.flatnonzero(np.diff(component[by_cluster], prepend=-1))
    pair_order = np.lexsort((rank[b], rank[a], component[a]))  # stable: equals as verified
    pair_starts = np.searchsorted(component[a][pair_order], component[by_cluster][starts])
    chosen = _representatives(members, member_ends - member_starts, rank, by_cluster, starts, keep)

    # Members with no verified pair with their cluster's representative.
    sizes = np.diff(np.append(starts, len(by_cluster)))
    representative = np.empty(len(members), dtype=np.int64)
    representative[by_cluster] = np.repeat(np.array(chosen, dtype=np.int64), sizes)
    direct = np.zeros(len(members), dtype=np.bool_)
    direct[a[b == representative[a]]] = True
    direct[b[a == representative[b]]] = True

    # The pairs in cluster order, as columns, their members by number in their cluster (a
    # large dump's pairs are millions: the pairs by member index are let go of first).
    position = np.empty(len(members), dtype=np.int64)
    position[by_cluster] = np.arange(len(by_cluster)) - np.repeat(starts, sizes)
    pair_a = position[a[pair_order]].astype(np.int32)
    pair_b = position[b[pair_order]].astype(np.int32)
    pair_count = len(a)
    del a, b
    jaccard = _ordered(table.jaccard, pair_order, in_place)
    contained = _ordered(table.containment, pair_order, in_place)
    estimated = _ordered(table.minhash_jaccard, pair_order, in_place)
    identical = _ordered(table.identical_chars, pair_order, in_place)
    del pair_order, table
    # Taken through object arrays, not lists of a million index numbers (28 bytes each).
    ordered_members = objects(members)[by_cluster].tolist()
    through = (~direct & (np.arange(len(members)) != representative))[by_cluster]
    through_counts = np.add.reduceat(through.astype(np.int64), starts)
    through_ids = [members[i].id for i in by_cluster[through].tolist()]
    through_starts = np.concatenate(([0], np.cumsum(through_counts))).tolist()

    # Biggest clusters first (giant ones last); among equals, by the first member in reading order.
    giant = sizes > max_cluster_size
    order = np.lexsort((rank[by_cluster[starts]], -sizes, giant))
    member_bounds = [*starts.tolist(), len(by_cluster)]
    pair_bounds = [*pair_starts.tolist(), pair_count]
    held = [
        tuple(ordered_members[member_bounds[cluster] : member_bounds[cluster + 1]])
        for cluster in range(len(starts))
    ]
    return [
        Cluster(
            id=f"c{number}",
            representative=members[chosen[cluster]].id,
            members=held[cluster],
            pairs=PairTable(
                MemberIds(held[cluster]),  # made when asked for, as the members' own
                pair_a[pair_bounds[cluster] : pair_bounds[cluster + 1]],
                pair_b[pair_bounds[cluster] : pair_bounds[cluster + 1]],
                jaccard[pair_bounds[cluster] : pair_bounds[cluster + 1]],
                contained[pair_bounds[cluster] : pair_bounds[cluster + 1]],
                estimated[pair_bounds[cluster] : pair_bounds[cluster + 1]],
                identical[pair_bounds[cluster] : pair_bounds[cluster + 1]],
            ),
            linked_through_others=tuple(
                through_ids[through_starts[cluster] : through_starts[cluster + 1]]
            ),
            giant=bool(giant[cluster]),
        )
        for number, cluster in enumerate(order.tolist(), start=1)
    ]


def _ordered(
    column: npt.NDArray[T], order: npt.NDArray[np.int64], in_place: bool
) -> npt.NDArray[T]:
    """``column[order]``, written over ``column`` if ``in_place``."""
    if not in_place:
        return column[order]
    column[:] = column[order]
    return column


def _column(members: Sequence[Passage], name: str) -> npt.NDArray[np.int64]:
    return np.fromiter(map(attrgetter(name), members), dtype=np.int64, count=len(members))


def _reading_ranks(
    members: Sequence[Passage], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Each member's place in reading order (path, record, start, end), by one array sort."""
    member_paths = list(map(attrgetter("path"), members))
    paths = {path: number for number, path in enumerate(sorted(set(member_paths)))}
    records = list(map(attrgetter("record"), members))
    count = len(members)
    by_order = np.lexsort(
        (
            ends,
            starts,
            np.fromiter(map({None: -1}.get, records, records), dtype=np.int64, count=count),
            np.fromiter(map(paths.__getitem__, member_paths), dtype=np.int64, count=count),
        )
    )
    rank = np.empty(count, dtype=np.int64)
    rank[by_order] = np.arange(count)
    return rank


def _representatives(
    members: Sequence[Passage],
    length: npt.NDArray[np.int64],
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
    preference = np.zeros(len(members), dtype=np.int64)
    if keep.startswith("source:"):
        ranks = {name: position for position, name in enumerate(kept_sources(keep))}
        preference = np.array([ranks.get(m.source, len(ranks)) for m in members], dtype=np.int64)
    cluster_of = np.repeat(np.arange(len(starts)), np.diff(starts, append=len(by_cluster)))
    best = np.lexsort((rank[by_cluster], -length[by_cluster], preference[by_cluster], cluster_of))
    chosen = by_cluster[best[starts]].tolist()
    return chosen


@compiled
def components(
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


def check_kept_sources(keep: str, inputs: Sequence[InputFile]) -> None:
    """--keep source:A,B names sources; say which of them the dump does not have (a typo
    would otherwise fall back to the longest member without a word)."""
    if not keep.startswith("source:"):
        return
    named = kept_sources(keep)
    present = {source for entry in inputs for source in entry.source_passages()}
    missing = [name for name in named if name not in present]
    if not missing:
        return
    fallback = (
        "clusters are represented by their longest member"
        if len(missing) == len(named)
        else "the other sources listed are used"
    )
    logger.warning(
        "--keep %s: no source named %s in this dump (%s); the sources are %s",
        keep,
        ", ".join(missing),
        fallback,
        ", ".join(sorted(present)) or "none",
    )
