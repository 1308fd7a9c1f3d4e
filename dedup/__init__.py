"""Find near-duplicate scenes across scraped Chinese web-novel dumps.

The library does everything the ``dedup`` command does::

    import dedup
    report = dedup.scan(["corpus_samples/"], threshold=0.5)
    for cluster in report.clusters:
        print(cluster.id, [member.source for member in cluster.members])
    dedup.write_report(report, "dedup-report")  # the files dedup scan writes
    saved = dedup.load_report("dedup-report/report.json")  # members with their text
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dedup.version import __version__

if TYPE_CHECKING:
    from dedup.config import ScanConfig
    from dedup.errors import DedupError
    from dedup.models import (
        Cluster,
        DocumentGroup,
        Match,
        MatchedDocument,
        Member,
        Pair,
        Report,
        SharedSpan,
    )
    from dedup.pipeline import scan, scan_to
    from dedup.report.record import load_report
    from dedup.report.writer import write_report

# The names below are imported when first used, not with the package: `dedup --version`, or a
# program that only wants the error types, need not load numpy, numba and datasketch.
_LAZY = {
    "ScanConfig": "dedup.config",
    "DedupError": "dedup.errors",
    "Cluster": "dedup.models",
    "Member": "dedup.models",
    "Match": "dedup.models",
    "MatchedDocument": "dedup.models",
    "SharedSpan": "dedup.models",
    "DocumentGroup": "dedup.models",
    "Pair": "dedup.models",
    "Report": "dedup.models",
    "scan": "dedup.pipeline",
    "scan_to": "dedup.pipeline",
    "write_report": "dedup.report.writer",
    "load_report": "dedup.report.record",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'dedup' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "Cluster",
    "DedupError",
    "DocumentGroup",
    "Match",
    "MatchedDocument",
    "Member",
    "Pair",
    "Report",
    "ScanConfig",
    "SharedSpan",
    "__version__",
    "load_report",
    "scan",
    "scan_to",
    "write_report",
]
