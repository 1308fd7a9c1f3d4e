"""report.json, the complete and stable record of a scan (format described in docs/report-format.md),
and run.json, the facts of one run (timings, worker count) that differ between identical runs."""

from __future__ import annotations

import json
from pathlib import Path

from dedup.models import Report

REPORT_FILE = "report.json"
RUN_FILE = "run.json"


def report_to_json(report: Report) -> str:
    return json.dumps(report.to_dict(), ensure_ascii=False, indent=2) + "\n"


def run_to_json(report: Report) -> str:
    run = {
        "dedup_version": report.dedup_version,
        "jobs": report.jobs,
        "seconds": {stage: round(seconds, 3) for stage, seconds in report.timings.items()},
    }
    return json.dumps(run, ensure_ascii=False, indent=2) + "\n"


def write_report(report: Report, directory: Path) -> list[Path]:
    """Write report.json and run.json into ``directory`` (created if needed)."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, content in ((REPORT_FILE, report_to_json(report)), (RUN_FILE, run_to_json(report))):
        path = directory / name
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return written
