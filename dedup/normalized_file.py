"""``dedup normalize``: one file's chapters as a scan compares them, and what each normalization
step did to them."""

from __future__ import annotations

from dataclasses import dataclass, replace

from dedup.config import ScanConfig
from dedup.errors import InputPathError
from dedup.normalize import (
    NormalizeStats,
    normalize,
)
from dedup.normalize.repeated_lines import learn_lines, repeated_lines
from dedup.read import (
    discover_inputs,
    read_bytes,
    read_file,
)
from dedup.segment import (
    split_chapters,
)


@dataclass(frozen=True, slots=True)
class NormalizedFile:
    """``dedup normalize``: a file's chapters as dedup compares them, and what each step did."""

    path: str
    encoding: str
    chapters: tuple[tuple[str | None, str], ...]
    stats: NormalizeStats
    warnings: tuple[str, ...]


def normalize_file(
    path: str, config: ScanConfig, data: bytes | None = None, explain: bool = False
) -> NormalizedFile:
    """Normalize one file (or ``data``, read from standard input) with the scan's own steps;
    the lines it repeats across its own chapters are learned from it alone."""
    if data is not None:
        results = [read_bytes("-", "stdin", "txt", data, config)]
    else:
        files, skipped = discover_inputs([path])
        if skipped or not files:
            reason = skipped[0].reason if skipped else "no file to read"
            raise InputPathError(f"{path}: {reason}")
        results = list(read_file(files[0], config))
    repeated = (
        {} if "repeated-lines" in config.skip_steps else repeated_lines([learn_lines(results)])
    )
    if all(result.skipped is not None for result in results):
        reasons = "; ".join(
            f"{result.skipped.path}: {result.skipped.reason}"
            for result in results
            if result.skipped is not None
        )
        raise InputPathError(reasons or f"{path}: nothing to read")
    stats = NormalizeStats()
    chapters: list[tuple[str | None, str]] = []
    warnings: list[str] = []
    for result in results:
        if result.skipped is not None:
            warnings.append(f"skipped {result.skipped.path}: {result.skipped.reason}")
            continue
        warnings += [f"{result.path}: {warning}" for warning in result.warnings]
        for document in result.documents:
            normalize_config = replace(
                config.normalize,
                repeated_lines=repeated.get(document.source, frozenset()),
                explain=explain,
            )
            for chapter in split_chapters(document):
                normalized = normalize(
                    document.text[chapter.body_start : chapter.end], normalize_config
                )
                stats.merge(normalized.stats, examples=True)
                chapters.append((chapter.title, normalized.text))
    encoding = next((result.encoding for result in results if result.skipped is None), "")
    return NormalizedFile(path, encoding, tuple(chapters), stats, tuple(warnings))
