"""Report stage: the report as files (report.json, index.html, CSV, JSONL) and as a summary."""

from dedup.config import DEFAULT_FORMATS, FORMATS
from dedup.report.record import load_report
from dedup.report.terminal import format_explanation, format_summary
from dedup.report.writer import write_report

__all__ = [
    "DEFAULT_FORMATS",
    "FORMATS",
    "format_explanation",
    "format_summary",
    "load_report",
    "write_report",
]
