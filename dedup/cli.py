"""The ``dedup`` command: parse options, call the library, turn its errors into exit codes."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from dedup import __version__
from dedup.config import (
    DEFAULT_ID_FIELDS,
    DEFAULT_TEXT_FIELDS,
    DEFAULT_TITLE_FIELDS,
    NORMALIZE_STEPS,
    SCRIPTS,
    ScanConfig,
)
from dedup.errors import DedupError, ExitStatus
from dedup.pipeline import normalize_file, scan
from dedup.report import format_explanation, format_summary, write_report

F = TypeVar("F", bound=Callable[..., Any])
_defaults = ScanConfig()


def matching_options(function: F) -> F:
    """Options that change what counts as a duplicate."""
    options = [
        click.option(
            "--script",
            type=click.Choice(SCRIPTS),
            default=_defaults.script,
            show_default=True,
            help="Script every passage is converted to before comparison.",
        ),
        click.option(
            "--ngram",
            type=click.IntRange(1, 16),
            default=_defaults.ngram,
            show_default=True,
            help="Characters per shingle.",
        ),
        click.option(
            "--num-perm",
            type=click.IntRange(16, 1024),
            default=_defaults.num_perm,
            show_default=True,
            help="MinHash permutations (signature length).",
        ),
        click.option(
            "--threshold",
            type=click.FloatRange(0, 1, min_open=True),
            default=_defaults.threshold,
            show_default=True,
            help="Jaccard similarity at which two passages are duplicates.",
        ),
        click.option(
            "--containment",
            type=click.FloatRange(0, 1, min_open=True),
            default=_defaults.containment,
            show_default=True,
            help="Share of the shorter passage found in the longer one that also makes a duplicate.",
        ),
        click.option(
            "--skip-step",
            "skip_steps",
            type=click.Choice(NORMALIZE_STEPS),
            multiple=True,
            help="Normalization step to switch off (repeatable); see dedup normalize --explain.",
        ),
        click.option(
            "--passage-chars",
            type=click.IntRange(50),
            default=_defaults.passage_chars,
            show_default=True,
            help="Target passage (scene window) length in characters, punctuation not counted.",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def input_options(function: F) -> F:
    """Options that say how to read the dump."""
    options = [
        click.option(
            "--text-field",
            "text_fields",
            multiple=True,
            help=f"JSON field holding the text (repeatable; default: {', '.join(DEFAULT_TEXT_FIELDS)}).",
        ),
        click.option(
            "--title-field",
            "title_fields",
            multiple=True,
            help=f"JSON field holding the chapter title (default: {', '.join(DEFAULT_TITLE_FIELDS)}).",
        ),
        click.option(
            "--id-field",
            "id_fields",
            multiple=True,
            help=f"JSON/CSV field holding a record's own id (default: {', '.join(DEFAULT_ID_FIELDS)}).",
        ),
        click.option(
            "--source-field",
            "source_fields",
            multiple=True,
            help="JSON/CSV field naming the record's source (site), instead of its folder.",
        ),
        click.option(
            "--max-file-mb",
            type=click.IntRange(1),
            default=_defaults.max_file_mb,
            show_default=True,
            help="Skip any input larger than this once decompressed (guards against zip bombs).",
        ),
        click.option(
            "--encoding",
            default=None,
            help="Read every file in this encoding instead of detecting it (e.g. gb18030, big5hkscs).",
        ),
        click.option(
            "--errors",
            type=click.Choice(["strict", "replace"]),
            default="strict",
            show_default=True,
            help="'replace' reads files with invalid byte sequences, with replacement characters.",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dedup")
def cli() -> None:
    """Find near-duplicate scenes across scraped Chinese web-novel dumps."""


@cli.command("scan")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--out",
    "-o",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("dedup-report"),
    show_default=True,
    help="Folder the report is written to.",
)
@matching_options
@input_options
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(0),
    default=0,
    help="Worker processes (default: 0, one per core).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bars and no summary.")
@click.option(
    "--strict", is_flag=True, help="Exit with status 3 if any input was skipped (after writing)."
)
def scan_command(
    paths: tuple[str, ...],
    out_dir: Path,
    text_fields: tuple[str, ...],
    title_fields: tuple[str, ...],
    id_fields: tuple[str, ...],
    skip_steps: tuple[str, ...],
    jobs: int,
    quiet: bool,
    strict: bool,
    **options: Any,
) -> None:
    """Scan the files under PATHS and report clusters of near-duplicate passages.

    Each folder directly under a scanned folder is one source (site). Use - to read the paths
    from standard input, one per line (find dumps/ -name '*.txt' | dedup scan -).
    """
    if "-" in paths:
        stdin_paths = [line.strip() for line in sys.stdin if line.strip()]
        paths = tuple(path for path in paths if path != "-") + tuple(stdin_paths)
        if not paths:
            raise click.UsageError("no paths on standard input")
    config = ScanConfig(
        text_fields=text_fields or DEFAULT_TEXT_FIELDS,
        title_fields=title_fields or DEFAULT_TITLE_FIELDS,
        id_fields=id_fields or DEFAULT_ID_FIELDS,
        skip_steps=tuple(skip_steps),
        jobs=jobs,
        show_progress=not quiet and sys.stderr.isatty(),
        **options,
    )
    report = scan(paths, config)
    for entry in report.skipped:
        click.echo(f"dedup: skipped {entry.path}: {entry.reason}", err=True)
    written = write_report(report, out_dir)
    if not quiet:
        click.echo(format_summary(report))
        click.echo(f"\nreport written to {written[0].as_posix()}")
    if strict and report.skipped:
        sys.exit(ExitStatus.INPUT_SKIPPED)


@cli.command("normalize")
@click.argument("path")
@click.option(
    "--script",
    type=click.Choice(SCRIPTS),
    default=_defaults.script,
    show_default=True,
    help="Script to convert to.",
)
@click.option(
    "--skip-step",
    "skip_steps",
    type=click.Choice(NORMALIZE_STEPS),
    multiple=True,
    help="Normalization step to switch off (repeatable).",
)
@click.option("--explain", is_flag=True, help="Show on stderr what each step removed or changed.")
@input_options
def normalize_command(path: str, explain: bool, **options: Any) -> None:
    """Print the text of PATH (a file, or - for standard input) as dedup compares it.

    Each chapter is printed on a line of its own, after its heading. With --explain, every
    step's counts and examples go to stderr, so you can see why two passages match or not.
    """
    options["text_fields"] = options["text_fields"] or DEFAULT_TEXT_FIELDS
    options["title_fields"] = options["title_fields"] or DEFAULT_TITLE_FIELDS
    options["id_fields"] = options["id_fields"] or DEFAULT_ID_FIELDS
    options["skip_steps"] = tuple(options["skip_steps"])
    config = ScanConfig(**options)
    data = sys.stdin.buffer.read() if path == "-" else None
    result = normalize_file(path, config, data=data, explain=explain)
    for warning in result.warnings:
        click.echo(f"dedup: {warning}", err=True)
    for title, text in result.chapters:
        if title:
            click.echo(f"# {title}")
        click.echo(text)
    if explain:
        click.echo(format_explanation(result), err=True)


def main(prog_name: str | None = None) -> None:
    logging.basicConfig(level=logging.WARNING, format="dedup: %(levelname)s: %(message)s")
    try:
        cli.main(prog_name=prog_name, standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("dedup: interrupted", err=True)
        sys.exit(ExitStatus.INTERRUPTED)
    except click.ClickException as error:
        error.show()
        sys.exit(ExitStatus.USAGE if isinstance(error, click.UsageError) else ExitStatus.ERROR)
    except DedupError as error:
        click.echo(f"dedup: error: {error}", err=True)
        sys.exit(ExitStatus.ERROR)
    except KeyboardInterrupt:
        click.echo("dedup: interrupted", err=True)
        sys.exit(ExitStatus.INTERRUPTED)
    except OSError as error:
        where = f" {error.filename}" if error.filename else ""
        click.echo(f"dedup: error:{where}: {error.strerror or error}", err=True)
        sys.exit(ExitStatus.ERROR)
