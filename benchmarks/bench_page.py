"""How fast a report's index.html opens in a real (headless) Chromium.

    python benchmarks/bench_page.py REPORT_FOLDER [REPORT_FOLDER ...] [--rounds 3]

For each report folder (written by ``dedup scan DUMP -o REPORT_FOLDER``) a timing copy of its
page is put beside it (the same page without its Content-Security-Policy, with a line of
script after ours that stamps ``performance.now()`` when the page has drawn and when it has
loaded what the view asked for), opened at a few views, and removed. Prints, per view, the
milliseconds from navigation until the overview and lists were drawn, until the view's parts
had come (the load event), and the whole Chromium command's wall time; the folder's page
bytes (index.html, and its parts) beside them. The first round of each view is Chromium's
cold start and is left out when there are more.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
    "--disable-background-networking", "--disable-component-update", "--dump-dom",
]  # fmt: skip
STAMP = (
    "<script>document.body.dataset.drawn=performance.now();"
    'addEventListener("load",()=>{document.body.dataset.loaded=performance.now()});</script>'
)
TIMING_PAGE = "bench-page-timing.html"


def timing_copy(folder: Path) -> Path:
    page = (folder / "index.html").read_text("utf-8")
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page, count=1)
    page = page.replace("</body>", STAMP + "</body>", 1)
    copy = folder / TIMING_PAGE
    copy.write_text(page, "utf-8")
    return copy


def views(folder: Path) -> dict[str, str]:
    """The views timed: the overview, the largest cluster, the last cluster the page holds
    (in its last part), the largest match, and a search of the text (every part)."""
    found = re.search(
        r'id="report-data">(.*?)</script>', (folder / "index.html").read_text("utf-8"), re.S
    )
    assert found is not None, f"{folder}/index.html holds no report data"
    data = json.loads(found.group(1))
    clusters = data.get("clusters", [])
    shown = {"overview": ""}
    if clusters:
        shown["largest cluster"] = f"#cluster={clusters[0]['id']}"
        shown["last cluster"] = f"#cluster={clusters[-1]['id']}&sort=id"
    if data.get("matches"):
        shown["largest match"] = f"#match={data['matches'][0][0]}"
    shown["search 的"] = "#q=%E7%9A%84"
    return shown


def opened(page: Path, fragment: str) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as profile:
        started = time.perf_counter()
        dom = subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", page.as_uri() + fragment],
            capture_output=True, text=True, timeout=600, check=True,
        ).stdout  # fmt: skip
        wall = time.perf_counter() - started
    body = dom.split("<body", 1)[1].split(">", 1)[0]
    stamps = dict(re.findall(r'data-(drawn|loaded)="([0-9.]+)"', body))
    return float(stamps.get("drawn", "nan")), float(stamps.get("loaded", "nan")), wall * 1000


def page_bytes(folder: Path) -> tuple[int, int]:
    parts = folder / "index_data"
    held = sum(p.stat().st_size for p in parts.iterdir()) if parts.is_dir() else 0
    return (folder / "index.html").stat().st_size, held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    for folder in options.folders:
        page, parts = page_bytes(folder)
        print(f"{folder}: index.html {page / 1e6:.1f} MB, parts {parts / 1e6:.1f} MB")
        copy = timing_copy(folder)
        try:
            for name, fragment in views(folder).items():
                rounds = [opened(copy, fragment) for _ in range(options.rounds)]
                kept = rounds[1:] if len(rounds) > 1 else rounds
                drawn, loaded, wall = (statistics.median(r[i] for r in kept) for i in range(3))
                print(
                    f"  {name:<16} drawn {drawn:8.0f} ms   loaded {loaded:8.0f} ms   "
                    f"chromium {wall:8.0f} ms"
                )
        finally:
            copy.unlink()


if __name__ == "__main__":
    main()
