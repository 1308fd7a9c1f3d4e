"""The ``dedup`` command: parse options, call the library, turn its errors into exit codes."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar

import click
from click.core import ParameterSource

from dedup.config import (
    DEFAULT_FORMATS,
    DEFAULT_ID_FIELDS,
    DEFAULT_TEXT_FIELDS,
    DEFAULT_TITLE_FIELDS,
    ENGINES,
    FORMATS,
    NORMALIZE_STEPS,
    SCRIPTS,
    ScanConfig,
)
from dedup.display import printable, shown
from dedup.engine.lifetime import caused_by_interrupt, terminate_as_interrupt
from dedup.errors import ConfigError, DedupError, ExitStatus
from dedup.version import __version__

# The library (numpy, numba, OpenCC, datasketch) is imported by the command that needs it, not
# here: `dedup --version` and `dedup --help` answer at once.
if TYPE_CHECKING:
    from dedup.models import Report, Skipped
    from dedup.report.folder import ReportFolder

F = TypeVar("F", bound=Callable[..., Any])
_defaults = ScanConfig()


def _apply(function: F, options: list[Callable[[F], F]]) -> F:
    for option in reversed(options):
        function = option(function)
    return function


NGRAM_OPTION = click.option(
    "--ngram",
    type=click.IntRange(1, 16),
    default=_defaults.ngram,
    show_default=True,
    help="Characters per shingle.",
)


def comparison_options(function: F) -> F:
    """Options that change how text is normalized: scan, explain and normalize take them."""
    return _apply(
        function,
        [
            click.option(
                "--script",
                type=click.Choice(SCRIPTS),
                default=_defaults.script,
                show_default=True,
                help="Script every passage is converted to before comparison.",
            ),
            click.option(
                "--skip-step",
                "skip_steps",
                type=click.Choice(NORMALIZE_STEPS),
                multiple=True,
                help="Normalization step to switch off (repeatable); see dedup normalize --explain.",
            ),
        ],
    )


def matching_options(function: F) -> F:
    """Options that change what a scan counts as a duplicate, on top of comparison_options."""
    return _apply(function, _matching_options())


def clean_matching_options(function: F) -> F:
    """matching_options but --keep, which dedup clean has its own of (which copy stays)."""
    return _apply(function, [o for o in _matching_options() if o is not _KEEP_OPTION])


_KEEP_OPTION = click.option(
    "--keep",
    default=_defaults.keep,
    show_default=True,
    help="Which member represents a cluster: longest, first (in path order), or "
    "source:NAME,NAME (the first listed source that has one).",
)


def _matching_options() -> list[Any]:
    options: list[Any] = [
        NGRAM_OPTION,
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
            "--passage-overlap",
            type=click.IntRange(0),
            default=_defaults.passage_overlap,
            show_default=True,
            help="Characters each passage also takes from the one before it.",
        ),
        _KEEP_OPTION,
        click.option(
            "--max-cluster-size",
            type=click.IntRange(2),
            default=_defaults.max_cluster_size,
            show_default=True,
            help="Mark clusters larger than this as giant (likely site boilerplate).",
        ),
        click.option(
            "--min-match-chars",
            type=click.IntRange(8),
            default=_defaults.min_match_chars,
            show_default=True,
            help="Least identical story characters a stretch two documents share must hold "
            "to be reported as a match.",
        ),
        click.option(
            "--every-pair",
            is_flag=True,
            default=_defaults.every_pair,
            help="Align every pair of documents that share text, not only each copy with "
            "the one its group keeps and two groups once: a match for every two copies (N "
            "copies of a chapter make N(N-1)/2 matches rather than N-1). A report for "
            "dedup clean --from-report needs it.",
        ),
        click.option(
            "--passage-chars",
            type=click.IntRange(50),
            default=_defaults.passage_chars,
            show_default=True,
            help="Target passage (scene window) length in characters, punctuation not counted.",
        ),
    ]
    return options


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
            "--max-whole-file-mb",
            type=click.IntRange(1),
            default=_defaults.max_whole_file_mb,
            show_default=True,
            help="Skip any JSON array, CSV, HTML, EPUB or Parquet input larger than this once "
            "decompressed: these are parsed whole, in several times their size of memory "
            "(text and JSON Lines are read as streams).",
        ),
        click.option(
            "--follow-links",
            is_flag=True,
            help="Read links to files and folders outside the scanned folders too.",
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


def engine_options(function: F) -> F:
    """Where the tasks run: this machine's processes (default) or a Dask cluster."""
    return _apply(
        function,
        [
            click.option(
                "--engine",
                type=click.Choice(ENGINES),
                default="local",
                show_default=True,
                help="Where the work runs: local processes, a Dask cluster started here for "
                "the run (dask-local, --jobs workers), or a running Dask cluster (dask, with "
                "--scheduler), whose workers also keep the passages and run the candidates, "
                "verification and alignment. Needs pip install 'dedup[dask]' for Dask.",
            ),
            click.option(
                "--scheduler",
                metavar="ADDRESS",
                default=None,
                help="A running Dask scheduler (tcp://HOST:8786) whose workers do the work; "
                "they read the inputs at the same paths, so put them on a filesystem every "
                "worker mounts. Implies --engine dask.",
            ),
            click.option(
                "--scratch",
                metavar="DIR",
                default=None,
                help="A folder every Dask worker and this machine see at the same path, where "
                "the workers keep what they make of the files (some 2 KB a passage, removed "
                "at the end) instead of in their memory; this process then holds nothing "
                "per batch of files. dask-local uses its own temporary folder.",
            ),
        ],
    )


def _config(options: dict[str, Any], **extra: Any) -> ScanConfig:
    """A ScanConfig from parsed options: repeatable field options left empty mean the defaults."""
    options = dict(options)
    options["text_fields"] = tuple(options.get("text_fields") or DEFAULT_TEXT_FIELDS)
    options["title_fields"] = tuple(options.get("title_fields") or DEFAULT_TITLE_FIELDS)
    options["id_fields"] = tuple(options.get("id_fields") or DEFAULT_ID_FIELDS)
    options["skip_steps"] = tuple(options.get("skip_steps") or ())
    return ScanConfig(**options, **extra)


def _formats(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    chosen = tuple(part.strip() for part in value.split(",") if part.strip())
    unknown = [part for part in chosen if part not in FORMATS]
    if unknown:
        raise click.BadParameter(f"{', '.join(unknown)}: choose from {', '.join(FORMATS)}")
    return chosen


def output_options(function: F) -> F:
    return _apply(
        function,
        [
            click.option(
                "--format",
                "formats",
                default=",".join(DEFAULT_FORMATS),
                show_default=True,
                callback=_formats,
                help="Outputs, comma-separated: html (index.html), csv (matches.csv, "
                "clusters.csv), pairs (pairs.csv: every verified pair, a row each), jsonl "
                "(clusters.jsonl), text (summary on stdout) or json (summary as JSON on "
                "stdout). report.json is always written. The tables are asked for (say "
                "html,text,csv): on a large dump they are as large as report.json and the "
                "page together; dedup report DIR --format ... writes them later.",
            ),
            click.option(
                "--full-text",
                is_flag=True,
                help="Every shared document's text in report.json (without it, report.json "
                "holds where each is and its SHA-256, and dedup report reads the texts back "
                "from the inputs), and each cluster member's whole text in clusters.csv and "
                "clusters.jsonl, not an excerpt.",
            ),
        ],
    )


class _UserError(click.ClickException):
    """A DedupError shown the way every dedup error is: ``dedup: error: ...`` on stderr."""

    def show(self, file: Any = None) -> None:
        click.echo(f"dedup: error: {self.format_message()}", err=True)


class _BadOption(click.UsageError):
    """A ConfigError: an option value that cannot work, found before any work is done (exit 2,
    as click's own usage errors)."""

    def show(self, file: Any = None) -> None:
        click.echo(f"dedup: error: {self.format_message()}", err=True)


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConfigError as error:
            raise _BadOption(str(error)) from error
        except DedupError as error:
            raise _UserError(str(error)) from error


def out_option(
    default: Path | None, what: str = "Folder the report is written to."
) -> Callable[[F], F]:
    """--out/-o, a folder."""
    return click.option(
        "--out",
        "-o",
        "out_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=default,
        required=default is None,
        show_default=default is not None,
        help=what,
    )


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dedup")
def cli() -> None:
    """Find near-duplicate scenes across scraped Chinese web-novel dumps."""


@cli.command("scan")
@click.argument("paths", nargs=-1, required=True)
@out_option(Path("dedup-report"))
@comparison_options
@matching_options
@input_options
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(0),
    default=0,
    help="Worker processes (default: 0, one per core).",
)
@engine_options
@click.option("--quiet", "-q", is_flag=True, help="No progress bars and no summary.")
@click.option(
    "--strict", is_flag=True, help="Exit with status 3 if any input was skipped (after writing)."
)
@output_options
def scan_command(
    paths: tuple[str, ...],
    out_dir: Path,
    jobs: int,
    quiet: bool,
    strict: bool,
    formats: tuple[str, ...],
    full_text: bool,
    **options: Any,
) -> None:
    """Scan the files under PATHS and report the documents that share text (and clusters of
    near-duplicate passages).

    A document is a chapter of a file or record. Each folder directly under a scanned folder is one source (site). Use - to read the paths
    from standard input, one per line (find dumps/ -name '*.txt' | dedup scan -).
    """
    if "-" in paths:
        # As bytes: a path need not be UTF-8 (os.fsdecode keeps any byte, as os.walk does).
        lines = sys.stdin.buffer.read().splitlines()
        stdin_paths = [os.fsdecode(line.strip()) for line in lines if line.strip()]
        paths = tuple(path for path in paths if path != "-") + tuple(stdin_paths)
        if not paths:
            raise click.UsageError("no paths on standard input")
    config = _config(options, jobs=jobs, show_progress=not quiet and sys.stderr.isatty())
    # The report folder is checked and locked before the scan: a --out that cannot be
    # written fails now, not after an hour of scanning.
    from dedup.kernels.jit import compiled_before
    from dedup.pipeline import scan_to
    from dedup.report.folder import ReportFolder

    if config.show_progress and not compiled_before():
        click.echo(
            "dedup: compiling its loops for this machine, once (this first scan takes longer; "
            "later runs start at once)",
            err=True,
        )

    with ReportFolder(out_dir) as folder:
        report, written = scan_to(folder, paths, config, formats, full_text)
        _say_skipped(report.skipped, report.summary.files, paths)
        _summarize(report, folder, written, formats, quiet)
    if strict and report.skipped:
        sys.exit(ExitStatus.INPUT_SKIPPED)


def _say_skipped(skipped: Sequence[Skipped], read: int, paths: Sequence[str]) -> None:
    """Each skipped input with its reason, and a warning when nothing at all was read: an
    empty report alone would not say why it is empty."""
    for entry in skipped:
        click.echo(f"dedup: skipped {entry.path}: {printable(entry.reason)}", err=True)
    _say_if_nothing_read(len(skipped), read, paths)


def _say_if_nothing_read(skipped: int, read: int, paths: Sequence[str]) -> None:
    if read:
        return
    if skipped:
        warning = f"none of the {skipped} inputs could be read (each is listed above)"
    else:
        given = ", ".join(shown(path) for path in paths)
        warning = (
            f"no files found under {given}: nothing was compared; check the path (a dump's "
            "folder holds its files, or a folder of them for each source)"
        )
    click.echo(f"dedup: warning: {warning}", err=True)


def _summarize(
    report: Report,
    folder: ReportFolder,
    written: list[Path],
    formats: tuple[str, ...],
    quiet: bool,
) -> None:
    if "json" in formats:
        from dedup.report.terminal import summary_data

        click.echo(json.dumps(summary_data(report, written), ensure_ascii=False, indent=2))
    elif not quiet and "text" in formats:
        from dedup.report import format_summary

        click.echo(format_summary(report))
        names = ", ".join(
            path.name + ("/" if path.is_dir() else "")
            for path in written
            if path.name != "run.json"
        )
        click.echo(f"\nreport written to {shown(folder.given.as_posix())}/ ({names})")


@cli.command("report")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1, min_open=True),
    default=None,
    help="Keep only pairs at this Jaccard similarity or above (at least the scan's).",
)
@click.option(
    "--containment",
    type=click.FloatRange(0, 1, min_open=True),
    default=None,
    help="Keep only pairs at this containment or above, when below the threshold.",
)
@click.option("--min-size", type=click.IntRange(2), default=2, help="Leave out smaller clusters.")
@click.option(
    "--out",
    "-o",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write here instead of over DIRECTORY.",
)
@click.option("--quiet", "-q", is_flag=True, help="No summary.")
@output_options
def report_command(
    directory: Path,
    threshold: float | None,
    containment: float | None,
    min_size: int,
    out_dir: Path | None,
    quiet: bool,
    formats: tuple[str, ...],
    full_text: bool,
) -> None:
    """Rebuild every output in DIRECTORY (a scan's --out) at a stricter threshold or with
    small clusters left out, from the saved pair scores: nothing is read or fingerprinted again.
    Without --format, the files DIRECTORY holds are written again.
    """
    from dedup.report import load_report, write_report
    from dedup.report.folder import ReportFolder
    from dedup.report.rebuild import rebuild
    from dedup.report.writer import formats_written

    if click.get_current_context().get_parameter_source("formats") is ParameterSource.DEFAULT:
        formats = formats_written(directory)
    saved = load_report(directory / "report.json")
    with ReportFolder(out_dir or directory) as folder:
        rebuilt = rebuild(saved, threshold, containment, min_size)
        written = write_report(rebuilt, folder, formats, full_text=full_text)
        _summarize(rebuilt, folder, written, formats, quiet)


@cli.command("explain")
@click.argument("first")
@click.argument("second")
@click.option(
    "--color/--no-color",
    "colour",
    default=None,
    help="Colour shared text (default: when a terminal).",
)
@comparison_options
@NGRAM_OPTION
@input_options
def explain_command(first: str, second: str, colour: bool | None, **options: Any) -> None:
    """Compare two texts as a scan does and show what they share (the palette, 调色盘).

    FIRST and SECOND are files, records (dump.jsonl#12) or passages (member ids from a report,
    such as site-a/ch1.txt:1200-1650).
    """
    from dedup.explain import explain
    from dedup.report.terminal import format_comparison

    result = explain(first, second, _config(options))
    use_colour = sys.stdout.isatty() if colour is None else colour
    click.echo(format_comparison(result, use_colour), color=use_colour)


@cli.group("index")
def index_group() -> None:
    """A persistent index: add a site once, then check new dumps or submissions against all
    of it.

    INDEX is one SQLite file. dedup index add makes it; dedup index query checks new files
    against it; dedup index report reports on everything in it.
    """


INDEX_ARGUMENT = click.argument("index", type=click.Path(path_type=Path))
SOURCE_OPTION = click.option(
    "--source",
    default=None,
    help="One source name for every file given (default: each folder under a given folder is "
    "a source, as in a scan).",
)
JOBS_OPTION = click.option(
    "--jobs", "-j", type=click.IntRange(0), default=0, help="Worker processes (0: one per core)."
)
QUIET_OPTION = click.option("--quiet", "-q", is_flag=True, help="No progress bars and no summary.")


@index_group.command("add")
@INDEX_ARGUMENT
@click.argument("paths", nargs=-1, required=True)
@SOURCE_OPTION
@comparison_options
@input_options
@JOBS_OPTION
@engine_options
@QUIET_OPTION
def index_add_command(
    index: Path, paths: tuple[str, ...], source: str | None, jobs: int, quiet: bool,
    **options: Any,
) -> None:  # fmt: skip
    """Store the files under PATHS in INDEX (made if it does not exist).

    An unchanged file is left as it is; a changed one replaces its old rows. An add is written
    whole or not at all: an interrupted one leaves the index as it was before it.
    """
    from dedup import index as collection

    config = _config(options, jobs=jobs, show_progress=not quiet and sys.stderr.isatty())
    result = collection.add(index, paths, config, source)
    # An unreadable file is stored too (a report of the index lists it, as a scan does),
    # but is counted with the skipped ones, not as added.
    unreadable = {entry.path for entry in result.skipped} & set(result.added)
    added = len(result.added) - len(unreadable)
    _say_skipped(result.skipped, added + len(result.unchanged), paths)
    if not quiet:
        again = len(result.prepared_again)
        click.echo(
            f"{shown(str(index))}: {added} files added, "
            f"{len(result.unchanged)} unchanged, {len(result.skipped)} skipped"
            + (f"; {again} stored files of the same sources prepared again" if again else "")
        )


@index_group.command("query")
@INDEX_ARGUMENT
@click.argument("paths", nargs=-1, required=True)
@out_option(Path("dedup-query"))
@SOURCE_OPTION
@click.option(
    "--within",
    is_flag=True,
    help="Report duplicates between the files given too, not only with the index's.",
)
@comparison_options
@matching_options
@input_options
@JOBS_OPTION
@engine_options
@QUIET_OPTION
@output_options
def index_query_command(
    index: Path, paths: tuple[str, ...], out_dir: Path, source: str | None, within: bool,
    jobs: int, quiet: bool, formats: tuple[str, ...], full_text: bool, **options: Any,
) -> None:  # fmt: skip
    """Check the files under PATHS against everything in INDEX: the report names, for each
    shared passage and document, the stored file it matched."""
    from dedup import index as collection
    from dedup.report.folder import ReportFolder

    config = _config(options, jobs=jobs, show_progress=not quiet and sys.stderr.isatty())
    with ReportFolder(out_dir) as folder:
        report = collection.query(index, paths, config, source, within)
        _say_skipped(report.skipped, report.summary.files, paths)
        written = _write_report_files(report, folder, formats, full_text)
        _summarize(report, folder, written, formats, quiet)


@index_group.command("report")
@INDEX_ARGUMENT
@out_option(Path("dedup-report"))
@comparison_options
@matching_options
@JOBS_OPTION
@engine_options
@QUIET_OPTION
@output_options
def index_report_command(
    index: Path, out_dir: Path, jobs: int, quiet: bool, formats: tuple[str, ...],
    full_text: bool, **options: Any,
) -> None:  # fmt: skip
    """Report on everything in INDEX, from the index alone: the report a scan of its files
    would give."""
    from dedup import index as collection
    from dedup.report.folder import ReportFolder

    config = _config(options, jobs=jobs, show_progress=not quiet and sys.stderr.isatty())
    with ReportFolder(out_dir) as folder:
        report = collection.report(index, config)
        written = _write_report_files(report, folder, formats, full_text)
        _summarize(report, folder, written, formats, quiet)


@index_group.command("info")
@INDEX_ARGUMENT
def index_info_command(index: Path) -> None:
    """What INDEX holds (sources, files, passages, size) and the options it was built with."""
    from dedup import index as collection

    about = collection.info(index)
    click.echo(
        f"{shown(about.path)}: {about.files:,} files, {about.passages:,} passages, "
        f"{about.bytes:,} bytes of input, {about.size_on_disk:,} bytes on disk"
    )
    for entry in about.sources:
        click.echo(
            f"  {shown(entry.name)}: {entry.files:,} files, {entry.passages:,} passages, "
            f"{entry.bytes:,} bytes"
        )
    click.echo("built with: " + ", ".join(f"{k}={v}" for k, v in sorted(about.options.items())))


@index_group.command("remove")
@INDEX_ARGUMENT
@click.option("--source", required=True, help="The source whose files are removed.")
def index_remove_command(index: Path, source: str) -> None:
    """Remove every file of a source from INDEX."""
    from dedup import index as collection

    removed = collection.remove(index, source)
    click.echo(f"{shown(str(index))}: {removed:,} files of {shown(source)} removed")


def _write_report_files(
    report: Report, folder: ReportFolder, formats: tuple[str, ...], full_text: bool
) -> list[Path]:
    from dedup.report import write_report

    # The report's stored files are in the index, not at the paths it names: their texts go
    # into report.json, where a scan's are read back from its inputs.
    return write_report(report, folder, formats, full_text=full_text, document_texts=True)


@cli.command("clean")
@click.argument("paths", nargs=-1)
@click.option(
    "--from-report",
    "report_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Act on a report already made (the --out of a scan with --every-pair, reviewed or "
    "rebuilt with dedup report) instead of scanning PATHS.",
)
@out_option(None, "Folder the cleaned copy is written to (new or empty; never inside an input).")
@click.option(
    "--keep",
    "keep_policy",
    default="longest",
    show_default=True,
    help="Which copy stays: longest, first (in reading order), cleanest (from the file with "
    "the fewest ads, site lines and placeholders removed, and the least script conversion), "
    "or source:A,B (a copy from A, else B, else any).",
)
@click.option(
    "--coverage",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.8,
    show_default=True,
    help="Leave out a document when a kept one covers at least this share of it.",
)
@click.option(
    "--by",
    "unit",
    type=click.Choice(["document", "passage"]),
    default="document",
    show_default=True,
    help="Leave out whole documents that a kept one covers, or only the stretches a document "
    "shares with one --keep prefers (cut back to whole sentences), keeping the rest.",
)
@click.option("--dry-run", is_flag=True, help="Write only the lists of what would be removed.")
@click.option("--force", is_flag=True, help="Replace a --out folder that is not empty.")
@click.option(
    "--skip-bad", is_flag=True, help="Leave out inputs that cannot be read (default: copied)."
)
@comparison_options
@clean_matching_options
@input_options
@JOBS_OPTION
@engine_options
@QUIET_OPTION
def clean_command(
    paths: tuple[str, ...], report_dir: Path | None, out_dir: Path, keep_policy: str,
    coverage: float, unit: Literal["document", "passage"], dry_run: bool, force: bool,
    skip_bad: bool, jobs: int, quiet: bool, **options: Any,
) -> None:  # fmt: skip
    """Write a copy of PATHS without their duplicate documents (chapters, records), each in
    its own format and encoding, and list in removed.jsonl and removed.csv what was left out
    and which kept document it duplicates."""
    from dedup.clean import CleanConfig, clean, clean_from_report

    if bool(paths) == (report_dir is not None):
        raise click.UsageError("give PATHS to scan, or --from-report DIR, not both (nor neither)")
    choices = CleanConfig(keep_policy, coverage, unit, dry_run, force, skip_bad)
    if report_dir is not None:
        result = clean_from_report(report_dir, out_dir, choices)
    else:
        config = _config(options, jobs=jobs, show_progress=not quiet and sys.stderr.isatty())
        result = clean(paths, out_dir, config, choices)
    not_copied = set(result.not_copied)
    for entry in result.bad:
        then = "left out" if skip_bad else "copied unchanged"
        if entry.path in not_copied:
            then = "not copied"
        click.echo(f"dedup: {entry.path}: {printable(entry.reason)}; {then}", err=True)
    for entry in result.not_rewritten:
        click.echo(f"dedup: {entry.path}: {printable(entry.reason)}", err=True)
    if paths:
        _say_if_nothing_read(len(result.bad), result.report.summary.files, paths)
    if quiet:
        return
    from dedup.report.terminal import plural

    verb = "would leave out" if dry_run else "left out"
    unit_name = "duplicate document" if unit == "document" else "shared stretch"
    click.echo(
        f"{verb} {plural(len(result.removed), unit_name, unit_name + 'es' if unit == 'passage' else None)}: "
        f"{plural(len(result.rewritten), 'file')} written again, "
        f"{len(result.dropped):,} dropped whole, {len(result.copied):,} copied unchanged; "
        f"{result.removed_share:.1%} of the collection's bytes removed"
    )
    rows = [("source", "files", "removed", "characters", "bytes in", "bytes out")]
    rows += [
        (t.source, f"{t.files:,}", f"{t.documents_removed:,}", f"{t.chars_removed:,}",
         f"{t.bytes_in:,}", f"{t.bytes_out:,}")
        for t in result.sources
    ]  # fmt: skip
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        click.echo("  ".join(cells).rstrip())
    place = shown(out_dir.as_posix())
    what = "the lists" if dry_run else "the copy"
    click.echo(f"\n{what} written to {place}/ (removed.jsonl, removed.csv)")


@cli.command("normalize")
@click.argument("path")
@comparison_options
@click.option("--explain", is_flag=True, help="Show on stderr what each step removed or changed.")
@input_options
def normalize_command(path: str, explain: bool, **options: Any) -> None:
    """Print the text of PATH (a file, or - for standard input) as dedup compares it.

    Each chapter is printed on a line of its own, after its heading. With --explain, every
    step's counts and examples go to stderr, so you can see why two passages match or not.
    """
    config = _config(options)
    data = sys.stdin.buffer.read() if path == "-" else None
    from dedup.normalized_file import normalize_file
    from dedup.report import format_explanation

    result = normalize_file(path, config, data=data, explain=explain)
    for warning in result.warnings:
        click.echo(f"dedup: {printable(warning)}", err=True)
    try:
        for title, text in result.chapters:
            if title:
                click.echo(f"# {printable(title)}")
            click.echo(text)
        sys.stdout.flush()
    except BrokenPipeError:  # | head: the reader has what it wanted; the explanation still
        _stdout_to_nowhere()
    if explain:
        click.echo(format_explanation(result), err=True)


def _stdout_to_nowhere() -> None:
    """After the reader of standard output went away: what is still to be written there
    (and Python's flush at exit) goes nowhere rather than raising again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _not_from_dask(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.CRITICAL or not record.name.startswith(
        ("distributed", "tornado", "asyncio")
    )


def main(prog_name: str | None = None) -> None:
    """The console script: every error ends here as one ``dedup: error:`` line and an exit
    status (errors.ExitStatus). A DedupError reaches this as a click exception (_Group.invoke
    turns it into one, so that click's own runner shows it alike)."""
    logging.basicConfig(level=logging.WARNING, format="dedup: %(levelname)s: %(message)s")
    # Dask's scheduler and client log each connection at INFO, the workers a dask-local
    # cluster stops at WARNING, and a lost scheduler as tracebacks at ERROR, which dedup says
    # itself (errors.EngineError); distributed sets its level as it is imported, from dask's
    # config (a user's own setting wins).
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "critical")
    for handler in logging.getLogger().handlers:  # and its loggers that set a level of their own
        handler.addFilter(_not_from_dask)
    try:
        with terminate_as_interrupt():
            cli.main(prog_name=prog_name, standalone_mode=False)
    except BrokenPipeError:  # standard output closed early (| head): not an error of ours
        _stdout_to_nowhere()
    except SystemExit as done:  # a command's own status (scan --strict), as Python ends on it
        if done.code is None or isinstance(done.code, int):
            _exit_at_once(done.code or ExitStatus.SUCCESS)
        click.echo(done.code, err=True)
        _exit_at_once(ExitStatus.ERROR)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("dedup: interrupted", err=True)
        _exit_interrupted()
    except click.ClickException as error:
        error.show()
        sys.exit(ExitStatus.USAGE if isinstance(error, click.UsageError) else ExitStatus.ERROR)
    except OSError as error:  # one the library did not name: say which file, at least
        where = f" {shown(error.filename)}" if isinstance(error.filename, str) else ""
        click.echo(f"dedup: error:{where}: {error.strerror or error}", err=True)
        sys.exit(ExitStatus.ERROR)
    except Exception as error:
        if not caused_by_interrupt(error):
            raise
        click.echo("dedup: interrupted", err=True)
        _exit_interrupted()
    _exit_at_once(ExitStatus.SUCCESS)


def _exit_at_once(status: int) -> NoReturn:
    """Exit with ``status`` once a command is done, without Python's teardown, which frees a
    large scan's records one object at a time: seconds of a user's wait for nothing
    (docs/performance.md). Nothing is left that needs it: the workers are stopped, the
    report folder renamed into place and every file of ours closed as the command
    returned; the logs and standard streams are flushed here."""
    logging.shutdown()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _stdout_to_nowhere()
    sys.stderr.flush()
    os._exit(status)


def _exit_interrupted() -> NoReturn:
    """Exit with status 130. Not by sys.exit: an interrupt that arrived inside an import (the
    library is imported by the command that needs it) leaves CPython set to end the process
    by SIGINT instead, whatever status is asked for. Everything that needed cleaning was
    cleaned as the interrupt unwound (the partial report removed, the workers stopped)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(ExitStatus.INTERRUPTED)
