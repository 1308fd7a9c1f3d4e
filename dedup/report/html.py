"""index.html: the report a person reads. No network; a folder beside it holds its parts.

index.html carries the overview and the lists as JSON in a non-executable <script
type="application/json"> block, and a small script of our own that draws it: an overview
(sources, how much of each is duplicated, which sources share scenes, the spread of pair
similarities, timings, skipped inputs), the matches between documents, a cluster list that
sorts and filters, and for one cluster or match at a time its texts side by side in their
original script with the shared stretches in matching colours (调色盘) and the
identical-character count (雷同字数).

The texts (members' and documents') and the clusters' palettes and pairs are in parts:
``index_data/clusters-0001.js`` and ``index_data/documents-0001.js``, each some
PART_CHARS characters of text, loaded by ``<script src>`` (which a page opened from
``file://`` may do, where it may not fetch) when a view needs them. So the page opens at the
same speed for a dump of any size: it reads the lists, not the texts.

Scraped text never becomes markup: the JSON is escaped so it cannot close its block or its
call, the script puts text into the page only with textContent, and a
Content-Security-Policy allows no script but ours (by hash, and the parts ours adds) and no
network at all.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import json
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TextIO, cast

import numpy as np
import numpy.typing as npt

from dedup.arrays import key_counts
from dedup.config import Script
from dedup.fingerprint import Keys
from dedup.models import Cluster, Report, document_overlap, source_counts
from dedup.normalize import NormalizeConfig, NormalizedText, normalize
from dedup.report.palette import cluster_palette, normalized_texts, shingle_keys_of

INDEX_FILE = "index.html"
PARTS_FOLDER = "index_data"
# Characters of text in one part (about 1.2 MB of UTF-8): a view waits for one or two parts,
# and a search of the text for all of them.
PART_CHARS = 400_000
HISTOGRAM_BINS = 20
# The page's parts carry the matched documents' text (up to half of its budget of characters)
# and the members' text of the largest clusters (the rest): a quarter of the text of the dump's
# passages, at least PAGE_TEXT_FLOOR characters (a small dump's page holds all it found) and
# at most PAGE_TEXT_BUDGET (some 70 MB of parts, however large the dump), so that the page is
# a small part of the report (issue 18: the report at most half the dump). The overview
# counts everything; report.json (and the tables, asked for) hold it all.
PAGE_TEXT_BUDGET = 20_000_000
PAGE_TEXT_FLOOR = 2_000_000


def page_text_budget(report: Report) -> int:
    """The characters of text the page of ``report`` carries at most."""
    passages_text = report.summary.passages * int(report.options["passage_chars"])
    return min(PAGE_TEXT_BUDGET, max(PAGE_TEXT_FLOOR, passages_text // 4))


def _cluster_data(
    cluster: Cluster,
    ngram: int,
    config: NormalizeConfig,
    normalized: Mapping[str, NormalizedText] | None = None,
    keys: Mapping[str, Keys] | None = None,
) -> dict[str, Any]:
    members = list(cluster.members)
    # A member's id is made each time it is asked for (models.CutPassage): once each here.
    ids = [member.id for member in members]
    chosen = ids.index(cluster.representative)
    others = [(ids[n], m.text) for n, m in enumerate(members) if n != chosen]
    palette = cluster_palette(
        (ids[chosen], members[chosen].text), others, ngram, config, normalized, keys
    )
    linked = frozenset(cluster.linked_through_others)
    return {
        "id": cluster.id,
        "sources": list(cluster.sources),
        "giant": cluster.giant,
        "best": round(float(cluster.pairs.jaccard.max()), 4),
        "worst": round(float(cluster.pairs.jaccard.min()), 4),
        "members": [
            {
                "id": member_id,
                "source": member.source,
                "path": member.path,
                "record": member.record,
                "chapter": member.chapter,
                "title": member.title,
                "start": member.start,
                "end": member.end,
                "text": member.text,
                "representative": number == chosen,
                "through_others": member_id in linked,
                "identical": palette.identical.get(member_id, 0),
                "spans": palette.spans[member_id],
            }
            for number, (member, member_id) in enumerate(zip(members, ids, strict=True))
        ],
        "pairs": cluster.pairs.listed(("jaccard", "containment", "identical_chars")),
    }


def report_data(report: Report) -> dict[str, Any]:
    """The overview and the matches the page shows, as plain data (``cluster_data`` gives the
    clusters, a part at a time)."""
    options = report.options
    counts = np.zeros(HISTOGRAM_BINS, dtype=np.int64)
    for cluster in report.clusters:
        bins = (cluster.pairs.jaccard * HISTOGRAM_BINS).astype(np.int64)  # int(): truncated
        counts += np.bincount(np.minimum(bins, HISTOGRAM_BINS - 1), minlength=HISTOGRAM_BINS)
    histogram = counts.tolist()
    return {
        "version": report.dedup_version,
        "options": options,
        "summary": report.summary.to_dict(),
        "fold": search_folding(cast(Script, options["script"])),
        "sources": [
            {
                "name": source.name,
                "files": source.files,
                "passages": source.passages,
                "duplicated": source.in_clusters,
                "duplicated_chars": source.duplicated_chars,
            }
            for source in source_counts(report.inputs, report.clusters)
        ],
        "overlap": source_overlap(report.clusters),
        "histogram": histogram,
        "skipped": [entry.to_dict() for entry in report.skipped],
        "clusters_total": len(report.clusters),
        **document_data(report),
    }


def document_data(report: Report) -> dict[str, Any]:
    """The matches the page shows, with their documents' text, largest share first, up to
    half of the page's budget (:func:`page_text_budget`) of document text: ``documents``
    (each once) and ``matches`` as [id, a, b, coverage_a, coverage_b, identical_chars,
    spans], spans as [a_start, a_end, b_start, b_end, identical] relative to each
    document's own text."""
    documents, shown, _characters = _page_matches(report)
    matches = []
    for index, sides in shown:
        match = report.matches[index]
        a, b = match.a, match.b
        matches.append(
            [
                f"m{index + 1}",
                *sides,
                round(match.coverage_a, 4),
                round(match.coverage_b, 4),
                match.identical_chars,
                # the spans' offsets from their documents' starts
                (match.spans.numbers() - [a.start, a.start, b.start, b.start, 0]).tolist(),
            ]
        )
    between: Counter[tuple[str, str]] = Counter()
    for match in report.matches:
        one, two = sorted((match.a.source, match.b.source))
        between[(one, two)] += 1
    copies = document_overlap(report)
    return {
        "documents": documents,
        "matches": matches,
        "matches_total": len(report.matches),
        "match_overlap": [[a, b, n] for (a, b), n in sorted(between.items())],
        "copy_overlap": [[a, b, n[0]] for (a, b), n in sorted(copies.items()) if n[0]],
    }


def _page_matches(
    report: Report,
) -> tuple[list[dict[str, Any]], list[tuple[int, list[int]]], int]:
    """The documents the page carries, the matches it shows (index, [a, b] as positions in
    those documents) and the characters of their text: matches by their larger share, as long
    as their documents fit in half of the page's budget (the first always)."""
    order = sorted(
        range(len(report.matches)),
        key=lambda n: (-max(report.matches[n].coverage_a, report.matches[n].coverage_b), n),
    )
    budget = page_text_budget(report)
    number: dict[str, int] = {}
    documents: list[dict[str, Any]] = []
    shown: list[tuple[int, list[int]]] = []
    characters = 0
    for index in order:
        match = report.matches[index]
        new = [d for d in {match.a.id: match.a, match.b.id: match.b}.values() if d.id not in number]
        more = sum(len(document.text) for document in new)
        if shown and characters + more > budget // 2:
            break
        for document in new:
            number[document.id] = len(documents)
            documents.append({**document.location(), "text": document.text})
        characters += more
        shown.append((index, [number[match.a.id], number[match.b.id]]))
    return documents, shown, characters


def source_overlap(clusters: Sequence[Cluster]) -> list[list[Any]]:
    """``[a, b, n]``: sources a <= b (a source with itself too) share n clusters. A cluster
    carried by k sources holds k(k+1)/2 such pairs (a thousand mirrors of one scene: half a
    million), so large clusters are counted in arrays."""
    names = sorted({source for cluster in clusters for source in cluster.sources})
    index = {name: number for number, name in enumerate(names)}
    size = len(names)
    small: Counter[int] = Counter()
    keys: list[npt.NDArray[np.int64]] = []
    counts: list[npt.NDArray[np.int64]] = []
    pending = 0
    for cluster in clusters:
        ids = [index[source] for source in cluster.sources]  # ascending, as names are
        if len(ids) <= _SMALL_CLUSTER_SOURCES:
            small.update(a * size + b for position, a in enumerate(ids) for b in ids[position:])
            continue
        array = np.array(ids, dtype=np.int64)
        first, second = np.triu_indices(len(ids))
        keys.append(array[first] * size + array[second])
        counts.append(np.ones(len(first), dtype=np.int64))
        pending += len(first)
        if pending > _OVERLAP_BATCH:  # fold what has come so far, to bound memory
            merged_keys, merged_counts = key_counts(keys, counts)
            keys, counts, pending = [merged_keys], [merged_counts], len(merged_keys)
    keys.append(np.fromiter(small.keys(), dtype=np.int64, count=len(small)))
    counts.append(np.fromiter(small.values(), dtype=np.int64, count=len(small)))
    codes, totals = key_counts(keys, counts)
    return [
        [names[code // size], names[code % size], total]
        for code, total in zip(codes.tolist(), totals.tolist(), strict=True)
    ]


# Characters whose search folding is worked out: the CJK blocks (and compatibility
# ideographs) where script and variant conversion happen, and the full-width forms.
_FOLDED_RANGES = ((0x3400, 0x4DC0), (0x4E00, 0xA000), (0xF900, 0xFB00), (0xFF00, 0xFFF0))


@functools.cache
def search_folding(script: Script) -> dict[str, str]:
    """Each character normalization turns into another (its script, variant and width
    steps, as a scan applies them), for the page's search: the page folds both the query and
    the members' texts with it, so that 孙悟空 finds 孫悟空. Worked out by normalizing every such
    character, each on a line of its own (no phrase rule reaches across a line)."""
    characters = [chr(code) for low, high in _FOLDED_RANGES for code in range(low, high)]
    config = NormalizeConfig(script=script, skip=frozenset({"boilerplate", "repeated-lines"}))
    normalized = normalize("\n".join(characters), config)
    folded: dict[str, list[str]] = {}
    original = "\n".join(characters)
    for char, offset in zip(normalized.text, normalized.offsets.tolist(), strict=True):
        folded.setdefault(original[offset], []).append(char)
    return {char: "".join(into) for char, into in sorted(folded.items()) if "".join(into) != char}


_SMALL_CLUSTER_SOURCES = 16
_OVERLAP_BATCH = 1 << 22


@dataclass(frozen=True, slots=True)
class ClusterPart:
    """One of the page's parts of clusters: its number, and the clusters it holds (numbers
    into the report's clusters, in order)."""

    number: int
    clusters: tuple[int, ...]

    @property
    def name(self) -> str:
        """Its file in the parts' folder, as a path under the report's folder."""
        return f"{PARTS_FOLDER}/{part_name(CLUSTER_PARTS, self.number)}"


CLUSTER_PARTS = "clusters"


def cluster_parts(report: Report, budget: int | None = None) -> list[ClusterPart]:
    """The clusters the page shows, largest first, up to the page's budget
    (:func:`page_text_budget`) of member text less what its documents hold (always at least
    one cluster), put into parts of some PART_CHARS characters of member text."""
    if budget is None:  # what the page's documents leave
        budget = page_text_budget(report) - _page_matches(report)[2]
    numbering = PageParts()
    characters = 0
    for number, cluster in enumerate(report.clusters):
        # a member's span, not its text: the text is cut from its document when asked for
        size = sum(member.end - member.start for member in cluster.members)
        characters += size
        if number and characters > budget:
            break
        numbering.add(CLUSTER_PARTS, number, size)
    numbering.close()
    return [
        ClusterPart(number, tuple(clusters))
        for number, clusters in enumerate(numbering.parts.values(), start=1)
    ]


def cluster_data(report: Report, part: ClusterPart) -> list[dict[str, Any]]:
    """The clusters of ``part`` as the page draws them: members, palette, pairs. The members'
    texts are normalized for the palettes together (a cluster's few distinct texts alone make
    too small a batch)."""
    options = report.options
    config = NormalizeConfig(
        script=options["script"], skip=frozenset(options.get("skip_steps", ()))
    )
    clusters = [report.clusters[number] for number in part.clusters]
    texts = (member.text for cluster in clusters for member in cluster.members)
    normalized = normalized_texts(texts, config)
    ngram = int(options["ngram"])
    keys = shingle_keys_of((text.text for text in normalized.values()), ngram)
    return [_cluster_data(cluster, ngram, config, normalized, keys) for cluster in clusters]


def _script_json(data: Any) -> str:
    """JSON that cannot end its <script> block or open a comment, whatever the data holds, and
    that is a JavaScript expression too (no raw line or paragraph separators)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


class PageParts:
    """The parts of a page, each a list of items of some PART_CHARS characters of text,
    numbered from 1 by kind: ``add`` an item, then ``close``. ``write`` puts away a part
    (kind, number, items) once it is full; by default parts are kept in ``parts``."""

    def __init__(self) -> None:
        self.parts: dict[str, list[Any]] = {}
        self._open: dict[str, tuple[list[Any], int]] = {}
        self._count: dict[str, int] = {}

    def add(self, kind: str, item: Any, characters: int) -> int:
        """The number of the part ``item`` (holding ``characters`` of text) goes into."""
        items, held = self._open.get(kind, ([], 0))
        if items and held + characters > PART_CHARS:
            self._put_away(kind, items)
            items, held = [], 0
        items.append(item)
        self._open[kind] = (items, held + characters)
        return self._count.get(kind, 0) + 1

    def close(self) -> dict[str, int]:
        """Every part put away; the number of parts of each kind."""
        for kind, (items, _held) in sorted(self._open.items()):
            self._put_away(kind, items)
        self._open.clear()
        return dict(sorted(self._count.items()))

    def _put_away(self, kind: str, items: list[Any]) -> None:
        number = self._count.get(kind, 0) + 1
        self._count[kind] = number
        self.write(kind, number, items)

    def write(self, kind: str, number: int, items: list[Any]) -> None:
        self.parts[part_name(kind, number)] = items


class PartFiles(PageParts):
    """Parts written as script files into ``folder`` as each fills up."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder

    def write(self, kind: str, number: int, items: list[Any]) -> None:
        text = f"dedupPart({_script_json(kind)},{number},{_script_json(items)});\n"
        (self.folder / part_name(kind, number)).write_text(text, encoding="utf-8")


def part_name(kind: str, number: int) -> str:
    return f"{kind}-{number:04d}.js"


def page_data(
    report: Report, parts: PageParts, clusters_apart: Sequence[ClusterPart] | None = None
) -> dict[str, Any]:
    """What index.html carries (the overview, the documents and matches without their text,
    a row for each cluster shown), the texts and clusters going into ``parts``; with
    ``clusters_apart`` (:func:`cluster_parts`), the clusters' parts are left out, to be
    written by :func:`write_cluster_part`."""
    page = report_data(report)
    left = page_text_budget(report)
    for number, document in enumerate(page["documents"]):
        text = document.pop("text")
        document["part"] = parts.add("documents", [number, text], len(text))
        left -= len(text)
    shown = cluster_parts(report, left) if clusters_apart is None else clusters_apart
    rows = []
    for part in shown:
        for number in part.clusters:
            rows.append(_cluster_row(report.clusters[number], part.number))
        if clusters_apart is None:
            parts.write(CLUSTER_PARTS, part.number, cluster_data(report, part))
    page["clusters"] = rows
    page["parts_folder"] = PARTS_FOLDER
    counts = parts.close() | ({CLUSTER_PARTS: len(shown)} if shown else {})
    page["parts"] = dict(sorted(counts.items()))
    return page


def _cluster_row(cluster: Cluster, part: int) -> dict[str, Any]:
    """A cluster's row in the page's list; its members are in clusters part ``part``."""
    members = cluster.members
    representative = next(member for member in members if member.id == cluster.representative)
    return {
        "id": cluster.id,
        "sources": list(cluster.sources),
        "giant": cluster.giant,
        "best": round(float(cluster.pairs.jaccard.max()), 4),
        "size": len(members),
        "title": representative.title,
        "begins": "".join(representative.text.split())[:24],
        "part": part,
    }


def render_html(report: Report, parts: PageParts | None = None) -> str:
    """index.html's text; its parts go into ``parts`` (kept in memory, if None)."""
    buffer = io.StringIO()
    write_page(report, buffer, parts or PageParts())
    return buffer.getvalue()


def write_page(
    report: Report,
    out: TextIO,
    parts: PageParts,
    clusters_apart: Sequence[ClusterPart] | None = None,
) -> None:
    """index.html, its parts going into ``parts`` as they are made (see :func:`page_data`
    for ``clusters_apart``)."""
    static = resources.files("dedup").joinpath("report/static")
    style = static.joinpath("report.css").read_text("utf-8")
    script = static.joinpath("report.js").read_text("utf-8")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    # 'strict-dynamic': the parts our script adds run; nothing the page's text could add does
    # (it never becomes markup), and no other script at all.
    policy = (
        f"default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}' 'strict-dynamic'"
    )
    data = _script_json(page_data(report, parts, clusters_apart))
    out.write(
        '<!DOCTYPE html>\n<html lang="zh"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
        f"<title>dedup report</title><style>{style}</style></head><body>"
        "<noscript>This report needs JavaScript to draw; report.json holds the same data.</noscript>"
        '<main id="app"></main>'
        f'<script type="application/json" id="report-data">{data}</script>'
        f"<script>{script}</script></body></html>\n"
    )


def write_html(
    report: Report, directory: Path, clusters_apart: Sequence[ClusterPart] | None = None
) -> list[Path]:
    """index.html and its parts' folder in ``directory``; with ``clusters_apart``
    (:func:`cluster_parts`), the parts of those clusters are left to
    :func:`write_cluster_part`, and the folder must be made before: :func:`empty_parts_folder`
    (so that no process empties it while another writes into it)."""
    folder = directory / PARTS_FOLDER
    if clusters_apart is None:
        empty_parts_folder(directory)
    path = directory / INDEX_FILE
    with open(path, "w", encoding="utf-8") as handle:
        write_page(report, handle, PartFiles(folder), clusters_apart)
    return [path, folder]


def empty_parts_folder(directory: Path) -> None:
    """The page's parts' folder in ``directory``, made, or emptied if it was there."""
    folder = directory / PARTS_FOLDER
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()


def write_cluster_part(report: Report, directory: Path, part: ClusterPart) -> None:
    """One of the page's parts of clusters (:func:`cluster_parts`), into the parts' folder in
    ``directory``."""
    PartFiles(directory / PARTS_FOLDER).write(
        CLUSTER_PARTS, part.number, cluster_data(report, part)
    )
