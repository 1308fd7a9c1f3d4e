"""A persistent index: add a site or a submission once, then check new files against all of it
(``query``), or report on everything stored (``report``). One SQLite file
(dedup.index.store); what it does with it in dedup.index.collection."""

from dedup.index.collection import (
    AddResult,
    IndexInfo,
    SourceInfo,
    add,
    info,
    query,
    remove,
    report,
)

__all__ = ["AddResult", "IndexInfo", "SourceInfo", "add", "info", "query", "remove", "report"]
