"""Write dedup/data/unicode_facts.npz: what the normalize stage's tables take from unicodedata.

    python benchmarks/make_unicode_facts.py

Every process that normalizes builds its character tables at start; computing what they need
of ``unicodedata`` (each code point's category, NFKC and lower case) took a fifth of a second
of that, on the command line's path before the workers start (docs/performance.md). The file
records the Unicode version it was made under, and dedup computes the facts instead under any
other (tests/test_tables.py holds the two equal). Run this when the Python that dedup supports
moves to another Unicode version.
"""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dedup.normalize.tables import UNICODE_FACTS_FILE, write_unicode_facts


def main() -> None:
    path = Path(__file__).resolve().parents[1] / "dedup" / "data" / UNICODE_FACTS_FILE
    write_unicode_facts(path)
    print(f"wrote {path} (Unicode {unicodedata.unidata_version}, {path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
