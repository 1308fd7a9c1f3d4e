"""Write dedup/data/opencc_tables.json: where OpenCC's conversions can change anything.

    python benchmarks/make_opencc_tables.py

dedup.normalize.opencc converts only the stretches of text that an OpenCC dictionary can change (see its
docstring for why that is exact). That needs two character sets per conversion, read here from
the dictionaries of the installed opencc package (dumped to text by the ``opencc_dict`` tool
its wheel ships):

- ``phrase_chars``: characters of any dictionary's multi-character keys, and characters whose
  own entry turns them into one of those (or into several characters): only these can be
  matched together with a neighbour, in segmentation or in conversion;
- ``changing_chars``: characters that some dictionary entry of the conversion replaces (the
  differing positions of a same-length entry, every character of an entry that changes length).

Each dictionary and configuration file is recorded with its SHA-256: at run time dedup uses the
sets only when the installed files are these very files. Run this after upgrading opencc.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import opencc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dedup.normalize.opencc import FAST_CONFIGS, TABLES_FILE, opencc_data_dir

HERE = Path(__file__).resolve().parents[1]


def dict_files(node: Any) -> Iterator[str]:
    """Every ocd2 file a configuration's dictionary node names, groups included."""
    if node.get("type") == "group":
        for child in node["dicts"]:
            yield from dict_files(child)
    else:
        yield node["file"]


def entries(data: Path, name: str, dump_dir: Path) -> list[tuple[str, str]]:
    tool = Path(opencc.__file__).parent / "clib" / "bin" / "opencc_dict"
    out = dump_dir / f"{name}.txt"
    subprocess.run(
        [str(tool), "-i", str(data / name), "-o", str(out), "-f", "ocd2", "-t", "text"],
        check=True,
    )
    pairs = []
    for line in out.read_text("utf-8").splitlines():
        key, values = line.split("\t")
        pairs.append((key, values.split(" ")[0]))  # OpenCC converts to the first value
    return pairs


def changed_chars(key: str, value: str) -> set[str]:
    if key == value:
        return set()
    if len(key) != len(value):
        return set(key)
    return {old for old, new in zip(key, value, strict=True) if old != new}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    data = opencc_data_dir()
    tables: dict[str, Any] = {"opencc": opencc.__version__, "configs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for config in FAST_CONFIGS:
            spec = json.loads((data / f"{config}.json").read_text("utf-8"))
            normalization = [
                f for step in spec.get("normalization", []) for f in dict_files(step["dict"])
            ]
            segmentation = list(dict_files(spec["segmentation"]["dict"]))
            conversion = [f for step in spec["conversion_chain"] for f in dict_files(step["dict"])]
            phrase_chars: set[str] = set()
            changing: set[str] = set()
            alone: dict[str, set[str]] = {}  # single-character keys and their values
            for name in [*normalization, *segmentation, *conversion]:
                for key, value in entries(data, name, Path(tmp)):
                    if len(key) > 1:
                        phrase_chars.update(key)
                    else:
                        alone.setdefault(key, set()).add(value)
                    if name not in segmentation or name in conversion:
                        changing.update(changed_chars(key, value))
            # A character that becomes a phrase character (or several characters) can join a
            # neighbour in the next step of the chain: it is one too. Repeat until nothing moves.
            grown = True
            while grown:
                joining = {
                    key
                    for key, values in alone.items()
                    if key not in phrase_chars
                    and any(len(value) != 1 or value in phrase_chars for value in values)
                }
                phrase_chars |= joining
                grown = bool(joining)
            files = sorted({f"{config}.json", *normalization, *segmentation, *conversion})
            tables["configs"][config] = {
                "files": {name: sha256(data / name) for name in files},
                "phrase_chars": "".join(sorted(phrase_chars)),
                "changing_chars": "".join(sorted(changing)),
            }
    out = HERE / "dedup" / "data" / TABLES_FILE
    out.write_text(json.dumps(tables, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    for config, table in tables["configs"].items():
        print(
            f"{config}: {len(table['phrase_chars'])} phrase characters, "
            f"{len(table['changing_chars'])} changing characters"
        )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
