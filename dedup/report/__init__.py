"""Report stage: the report as files (``json``) and as a terminal summary (``terminal``)."""

from dedup.report.json import report_to_json, write_report
from dedup.report.terminal import format_explanation, format_summary

__all__ = ["format_explanation", "format_summary", "report_to_json", "write_report"]
