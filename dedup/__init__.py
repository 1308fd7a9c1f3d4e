"""Find near-duplicate scenes across scraped Chinese web-novel dumps.

The library does everything the ``dedup`` command does::

    import dedup
    report = dedup.scan(["corpus_samples/"], threshold=0.5)
    for cluster in report.clusters:
        print(cluster.id, [member.source for member in cluster.members])
    open("report.json", "w").write(report.to_json())
"""

__version__ = "0.1.0"

from dedup.config import ScanConfig
from dedup.errors import DedupError
from dedup.models import Cluster, Member, Pair, Report
from dedup.pipeline import scan

__all__ = [
    "Cluster",
    "DedupError",
    "Member",
    "Pair",
    "Report",
    "ScanConfig",
    "__version__",
    "scan",
]
