"""Reading speed and memory: read + decode a generated multi-GB dump, in every format.

    python benchmarks/bench_read.py [--gb 1] [--jobs 2] [--shared ../shared] [--keep DIR]

Writes a dump of real text from ../shared/corpora (Simplified and Traditional novels, in UTF-8,
GB18030, Big5-HKSCS and UTF-16; as .txt, .jsonl, .csv, .txt.gz and .zip) into a temporary folder,
then runs dedup's read stage (discover, open, decompress, detect the encoding, decode, parse
records) over it in worker processes, as a scan does. Prints MB/s of input bytes and peak RSS.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import resource
import tempfile
import time
import zipfile
from concurrent.futures import ProcessPoolExecutor
from itertools import repeat
from pathlib import Path

from dedup.config import ScanConfig
from dedup.read import FoundFile, discover_inputs, read_file
from dedup.read.decode import decode_bytes

TEXTS = {
    "tennessine-corpus/红楼梦.txt": "gb18030",
    "tennessine-corpus/三国演义.txt": "utf-8",
    "gutenberg/23962-0.txt": "big5hkscs",
    "gutenberg/24264-0.txt": "utf-16",
    "hankinghu-literature-books/郁达夫大全集.txt": "utf-8",
}
PIECE_CHARS = 400_000  # about 1 MB of UTF-8 per file


def _pieces(shared: Path) -> list[tuple[str, str]]:
    pieces = []
    for name, encoding in TEXTS.items():
        text = decode_bytes((shared / "corpora" / name).read_bytes(), None, "replace").text
        text = text.encode(encoding, "replace").decode(encoding)  # only what the encoding holds
        for start in range(0, len(text), PIECE_CHARS):
            pieces.append((text[start : start + PIECE_CHARS], encoding))
    return pieces


def _write(path: Path, text: str, encoding: str, kind: str) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "jsonl":
        lines = (json.dumps({"content": p}, ensure_ascii=False) for p in text.split("\n\n"))
        data = "\n".join(lines).encode("utf-8")
    elif kind == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(["title", "content"])
        writer.writerows(["", p] for p in text.split("\n\n"))
        data = buffer.getvalue().encode("utf-8")
    else:
        data = text.encode(encoding)
    if kind == "gz":
        data = gzip.compress(data, compresslevel=1)
    if kind == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            archive.writestr("inner/a.txt", data[: len(data) // 2])
            archive.writestr("inner/b.txt", data[len(data) // 2 :])
        data = buffer.getvalue()
    path.write_bytes(data)
    return len(data)


def build(shared: Path, target: int, out: Path) -> int:
    pieces = _pieces(shared)
    kinds = [
        ("txt", ".txt"),
        ("jsonl", ".jsonl"),
        ("csv", ".csv"),
        ("gz", ".txt.gz"),
        ("zip", ".zip"),
    ]
    written = 0
    number = 0
    while written < target:
        text, encoding = pieces[number % len(pieces)]
        kind, suffix = kinds[number % len(kinds)]
        if kind in ("jsonl", "csv"):
            encoding = "utf-8"
        written += _write(
            out / f"site-{number % 7}" / f"{number:06d}{suffix}", text, encoding, kind
        )
        number += 1
    return written


def _read_one(file: FoundFile, config: ScanConfig) -> int:
    return sum(len(result.documents) for result in read_file(file, config))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parents[1]
    parser.add_argument("--gb", type=float, default=1.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--shared", type=Path, default=here.parent / "shared")
    parser.add_argument("--keep", type=Path, help="write the dump here and keep it")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        dump = args.keep or Path(tmp)
        started = time.perf_counter()
        size = build(args.shared, int(args.gb * 1e9), dump)
        print(f"wrote {size / 1e6:.0f} MB in {time.perf_counter() - started:.1f} s")
        config = ScanConfig()
        files, skipped = discover_inputs([str(dump)])
        started = time.perf_counter()
        with ProcessPoolExecutor(args.jobs) as pool:
            documents = sum(pool.map(_read_one, files, repeat(config), chunksize=4))
        elapsed = time.perf_counter() - started
    worker_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    main_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"read {len(files)} files ({len(skipped)} skipped), {documents} documents")
    print(
        f"read + decode: {elapsed:.1f} s = {size / 1e6 / elapsed:.1f} MB/s with {args.jobs} workers"
    )
    print(f"peak RSS: main {main_rss:.0f} MB, largest worker {worker_rss:.0f} MB")


if __name__ == "__main__":
    main()
