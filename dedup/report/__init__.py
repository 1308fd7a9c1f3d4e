"""Report stage: the report as files (report.json, index.html, CSV, JSONL) and as a summary."""

from dedup.report.json import DEFAULT_FORMATS, FORMATS, load_report, report_to_json, write_report
from dedup.report.terminal import format_explanation, format_summary

__all__ = [
    "DEFAULT_FORMATS",
    "FORMATS",
    "format_explanation",
    "format_summary",
    "load_report",
    "report_to_json",
    "write_report",
]
