"""A realistic scraped dump: mirror sites that each republish the books their own way.

    python benchmarks/mirror_sites.py OUT --mb 250 [--shared ../shared] [--pages | --records [--ids]]

Made from every text of ``../shared/corpora/`` (decoded as dedup decodes them), book by book
in a fixed shuffled order until the size is reached. A *network* is five sites: the first
carries each book, the others 70% of the books each. Of a mirror's copies half are verbatim
but for the site's own ad lines and line wrapping, half are scraped with noise (0.5% typos and
homophone swaps, 0.5% censored words) and, for 30% of those, converted to Taiwan script. Past
the first network (a dump larger than one network makes), every site of a network is a mirror.
So most passages are near copies, as on real mirror networks, not exact ones (the share of
exact copies after normalization is printed by ``bench_scan.py``).

With ``--pages`` each site writes each book as pages of about 12 KB (a folder a book, a file
a page, cut at the first line end past 12 KB: each site at its own places), as sites that
page their chapters are scraped: the same text in a hundred times as many files. With
``--records`` each book is a JSON Lines file of those pages, a record each (``title``,
``text``), as aggregators and training sets keep text; with ``--ids`` too, each record has the
page's address on its site for an ``id``, as a crawl's records do.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.quality.variants import ADS, censored, convert, typos
from dedup.errors import DecodeFailure
from dedup.read.decode import decode_bytes

SITES = 5
CARRIED = 0.7
MIN_HAN = 20_000  # texts shorter than this (poems, READMEs) are not books
PAGE_BYTES = 12_000


def books(shared: Path) -> list[tuple[str, str]]:
    """(name, text) of every book in the corpora, in a fixed shuffled order."""
    manifest = (shared / "corpora" / "MANIFEST.tsv").read_text("utf-8").splitlines()
    header = manifest[0].split("\t")
    path_at, han_at = header.index("path"), header.index("han_chars")
    found = []
    for line in manifest[1:]:
        fields = line.split("\t")
        if int(fields[han_at] or 0) < MIN_HAN:
            continue
        data = (shared / "corpora" / fields[path_at]).read_bytes()
        try:
            text = decode_bytes(data, None, "replace").text
        except DecodeFailure:  # a compressed or binary file (a Parquet, say): not a book
            continue
        name = fields[path_at].replace("/", "_").rsplit(".", 1)[0]
        found.append((name, text))
    found.sort()
    random.Random(18).shuffle(found)
    return found


def _site_copy(text: str, site: int, rng: random.Random) -> str:
    """A mirror's copy of a book: its own ads and wrapping, or scrape noise."""
    if rng.random() < 0.5:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        width = 30 + 4 * site
        out = []
        for number, line in enumerate(lines):
            out += [line[i : i + width] for i in range(0, len(line), width)] or [""]
            if number % 40 == 39:
                out.append(ADS[site % len(ADS)])
        return "\n".join(out) + "\n"
    noisy = censored(typos(text, rng, 0.005), rng, 0.005)
    return convert(noisy, "s2tw") if rng.random() < 0.3 else noisy


def build_mirror_dump(
    shared: Path,
    target_bytes: int,
    out: Path,
    pages: bool = False,
    records: bool = False,
    ids: bool = False,
) -> int:
    """Write the dump into ``out`` (each book in pages, if ``pages``, or as a JSON Lines file
    of a record a page, if ``records``, each with an id, if ``ids``); returns the bytes of
    text written."""
    written = 0
    library = books(shared)
    network = 0
    while written < target_bytes:
        rng = random.Random(network)
        for name, text in library:
            for site in range(SITES):
                original = network == 0 and site == 0
                if not original and site and rng.random() >= CARRIED:
                    continue
                content = text if original else _site_copy(text, site, rng)
                path = out / f"net{network}-site{site}" / f"{name}.txt"
                data = content.encode("utf-8")
                _write(path, data, pages, records, ids)
                written += len(data)
                if written >= target_bytes:
                    return written
        network += 1
    return written


def build_paged_mirror_dump(shared: Path, target_bytes: int, out: Path) -> int:
    """The mirror dump with each book in pages of about PAGE_BYTES."""
    return build_mirror_dump(shared, target_bytes, out, pages=True)


def build_records_mirror_dump(shared: Path, target_bytes: int, out: Path) -> int:
    """The mirror dump with each book a JSON Lines file of a record a page."""
    return build_mirror_dump(shared, target_bytes, out, records=True)


def _write(path: Path, data: bytes, pages: bool, records: bool, ids: bool) -> None:
    """``data`` at ``path``; as pages ``path.stem/00000.txt``… cut at line ends; or as a
    record a page in ``path.stem.jsonl``."""
    if not pages and not records:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return
    cut, start = [], 0
    while start < len(data):
        end = data.find(b"\n", start + PAGE_BYTES)
        end = len(data) if end < 0 else end + 1
        cut.append(data[start:end])
        start = end
    if records:
        path.parent.mkdir(parents=True, exist_ok=True)
        site = f"https://{path.parent.name}.example.com/{path.stem}"
        lines = []
        for number, page in enumerate(cut):
            record = {"id": f"{site}/{number:05d}.html"} if ids else {}
            record |= {"title": f"{path.stem} {number}", "text": page.decode("utf-8")}
            lines.append(json.dumps(record, ensure_ascii=False))
        path.with_suffix(".jsonl").write_text("\n".join(lines) + "\n", "utf-8")
        return
    folder = path.with_suffix("")
    folder.mkdir(parents=True, exist_ok=True)
    for number, page in enumerate(cut):
        (folder / f"{number:05d}{path.suffix}").write_bytes(page)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parents[1]
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=250)
    parser.add_argument("--shared", type=Path, default=here.parent / "shared")
    layout = parser.add_mutually_exclusive_group()
    layout.add_argument("--pages", action="store_true", help="each book in pages of 12 KB")
    layout.add_argument("--records", action="store_true", help="a JSON Lines record a page")
    parser.add_argument("--ids", action="store_true", help="with --records: an id a record")
    args = parser.parse_args()
    if args.ids and not args.records:
        parser.error("--ids goes with --records")
    written = build_mirror_dump(
        args.shared, int(args.mb * 1e6), args.out, args.pages, args.records, args.ids
    )
    print(f"{written / 1e6:.1f} MB in {args.out}")


if __name__ == "__main__":
    main()
