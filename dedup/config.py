"""One validated options object, echoed into every report."""

from __future__ import annotations

import codecs
import difflib
import os
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from dedup.errors import ConfigError

Script = Literal["simplified", "traditional"]
SCRIPTS: tuple[Script, ...] = ("simplified", "traditional")
DecodeErrors = Literal["strict", "replace"]
# The normalization steps, in the order they run (see dedup.normalize); each can be skipped.
NORMALIZE_STEPS = (
    "boilerplate",
    "repeated-lines",
    "placeholders",
    "punctuation",
    "width",
    "script",
    "variants",
)
# What --format can ask for (the report's files: report.json and run.json are always written).
FORMATS = ("html", "csv", "pairs", "jsonl", "text", "json")
DEFAULT_FORMATS = ("html", "text")
DEFAULT_TEXT_FIELDS = ("content", "text", "body")
DEFAULT_TITLE_FIELDS = ("title", "chapter", "chapter_title")
DEFAULT_ID_FIELDS = ("id", "chapter_id", "url")
# Where the per-file tasks run (dedup.engine): this machine's process pool, a Dask cluster
# started here for the scan, or a running Dask cluster (its scheduler's address).
ENGINES = ("local", "dask-local", "dask")


@dataclass(frozen=True, slots=True)
class NormalizeConfig:
    """The normalize stage's part: the script to convert to, the steps switched off, the line
    keys a source repeats (learned per scan), and whether to collect examples of each step."""

    script: Script = "simplified"
    skip: frozenset[str] = frozenset()
    repeated_lines: frozenset[int] = frozenset()  # line keys (see line_key) to drop
    explain: bool = False  # collect examples of what each step did

    def on(self, step: str) -> bool:
        return step not in self.skip


@dataclass(frozen=True, slots=True)
class ReadConfig:
    """The read stage's part: which fields of a record hold what, how to decode, the caps."""

    text_fields: tuple[str, ...]
    title_fields: tuple[str, ...]
    id_fields: tuple[str, ...]
    source_fields: tuple[str, ...]
    encoding: str | None
    errors: DecodeErrors
    max_file_mb: int
    max_whole_file_mb: int
    follow_links: bool


@dataclass(frozen=True, slots=True)
class SegmentConfig:
    """The segment stage's part: passage length, overlap, and the shortest passage kept."""

    passage_chars: int
    passage_overlap: int
    min_passage_chars: int


@dataclass(frozen=True, slots=True)
class MatchConfig:
    """The fingerprint, candidates and verify stages' part: shingles, MinHash, thresholds."""

    ngram: int
    num_perm: int
    seed: int
    threshold: float
    containment: float


@dataclass(frozen=True, slots=True)
class AlignConfig:
    """The align stage's part (dedup.align): seed length, the longest gap a span bridges, and
    the least a span must hold (identical story characters). Seeds and gaps are fixed by the
    quality benchmark (docs/quality.md); the least span is an option."""

    seed_chars: int = 8
    max_gap: int = 32
    min_identical: int = 45
    # Every candidate pair of documents aligned, rather than each copy with its group's kept
    # document only and two groups once (dedup.matches.align_through_groups).
    every_pair: bool = False


SEED_CHARS = AlignConfig().seed_chars


def kept_sources(keep: str) -> list[str]:
    """The sources ``--keep source:A,B`` names, in order (none for another policy)."""
    if not keep.startswith("source:"):
        return []
    return [name.strip() for name in keep.removeprefix("source:").split(",") if name.strip()]


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """The cluster stage's part: the representative's policy and the giant-cluster size."""

    keep: str
    max_cluster_size: int


@dataclass(frozen=True, slots=True)
class ScanConfig:
    """Every option that changes what a scan finds: flat, as users give them (``scan(path,
    threshold=0.5)``, one CLI option each) and as report.json records them, with a part per
    stage (``config.read``, ``.normalize``, ``.segment``, ``.match``, ``.cluster``) for the
    stage code to take.

    ``jobs``, ``engine``, ``scheduler``, ``scratch`` and ``show_progress`` change only where,
    how fast and how visibly the scan runs, so they are left out of :meth:`to_dict` (and so
    out of the report): a ``--jobs 1`` run, a ``--jobs 2`` run and a run on a Dask cluster
    produce byte-identical reports. ``scheduler`` is a Dask scheduler's address
    (``tcp://host:8786``) or a ``distributed.Client``; giving one means ``engine="dask"``.
    ``scratch`` is a folder every Dask worker sees at the same path, where the workers keep
    what they make of the files rather than in their memory (dedup.engine.scratch); a
    dask-local cluster keeps them in its own temporary folder unless one is given.
    """

    script: Script = "simplified"
    ngram: int = 3
    num_perm: int = 128
    seed: int = 1
    threshold: float = 0.4
    containment: float = 0.7
    passage_chars: int = 400
    passage_overlap: int = 0
    min_passage_chars: int = 40
    text_fields: tuple[str, ...] = DEFAULT_TEXT_FIELDS
    title_fields: tuple[str, ...] = DEFAULT_TITLE_FIELDS
    id_fields: tuple[str, ...] = DEFAULT_ID_FIELDS
    source_fields: tuple[str, ...] = ()
    encoding: str | None = None
    errors: DecodeErrors = "strict"
    max_file_mb: int = 2048
    # Formats a reader holds whole in memory (JSON arrays, CSV, HTML, EPUB, Parquet) take
    # several times their size while parsed: they have a cap of their own.
    max_whole_file_mb: int = 256
    follow_links: bool = False
    skip_steps: tuple[str, ...] = ()
    keep: str = "longest"
    max_cluster_size: int = 200
    min_match_chars: int = 45
    every_pair: bool = False
    jobs: int = field(default=0, compare=False)
    engine: str = field(default="local", compare=False)
    # Any: a distributed.Client is taken too, and dask is an optional extra.
    scheduler: Any = field(default=None, compare=False)
    # A folder every Dask worker sees, where they keep what they make (dedup.engine.scratch).
    scratch: str | None = field(default=None, compare=False)
    show_progress: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if self.script not in SCRIPTS:
            raise ConfigError(f"script must be one of {', '.join(SCRIPTS)}, not {self.script!r}")
        if not 1 <= self.ngram <= 16:
            raise ConfigError(f"ngram must be between 1 and 16 characters, not {self.ngram}")
        if not 16 <= self.num_perm <= 1024:
            raise ConfigError(f"num_perm must be between 16 and 1024, not {self.num_perm}")
        if not 0.0 < self.threshold <= 1.0:
            raise ConfigError(f"threshold must be in (0, 1], not {self.threshold}")
        if not 0.0 < self.containment <= 1.0:
            raise ConfigError(f"containment must be in (0, 1], not {self.containment}")
        if self.min_match_chars < SEED_CHARS:
            raise ConfigError(
                f"min_match_chars must be at least {SEED_CHARS} characters, "
                f"not {self.min_match_chars}"
            )
        if self.passage_chars < 50:
            raise ConfigError(
                f"passage_chars must be at least 50 characters, not {self.passage_chars}"
            )
        if not 0 <= self.passage_overlap <= self.passage_chars // 2:
            raise ConfigError(
                f"passage_overlap must be between 0 and half of passage_chars "
                f"({self.passage_chars // 2}), not {self.passage_overlap}"
            )
        if self.min_passage_chars < self.ngram:
            raise ConfigError(
                f"min_passage_chars ({self.min_passage_chars}) must be at least ngram ({self.ngram})"
            )
        if not self.text_fields:
            raise ConfigError("give at least one text field for JSON Lines records")
        if self.errors not in ("strict", "replace"):
            raise ConfigError(f"errors must be strict or replace, not {self.errors!r}")
        unknown = sorted(set(self.skip_steps) - set(NORMALIZE_STEPS))
        if unknown:
            raise ConfigError(
                f"unknown normalization step {', '.join(unknown)}; the steps are "
                + ", ".join(NORMALIZE_STEPS)
            )
        if self.keep not in ("longest", "first") and not kept_sources(self.keep):
            raise ConfigError(
                f"keep must be longest, first or source:NAME[,NAME...], not {self.keep!r}"
            )
        if self.max_cluster_size < 2:
            raise ConfigError(f"max_cluster_size must be at least 2, not {self.max_cluster_size}")
        if self.max_file_mb < 1:
            raise ConfigError(f"max_file_mb must be at least 1, not {self.max_file_mb}")
        if self.max_whole_file_mb < 1:
            raise ConfigError(f"max_whole_file_mb must be at least 1, not {self.max_whole_file_mb}")
        if self.encoding is not None:
            try:
                codecs.lookup(self.encoding)
            except LookupError:
                raise ConfigError(
                    f"unknown encoding {self.encoding!r}; use a Python codec name such as "
                    "gb18030, big5hkscs, utf-16 or utf-8"
                ) from None
        if self.jobs < 0:
            raise ConfigError(f"jobs must be 0 (all cores) or a positive number, not {self.jobs}")
        if self.engine not in ENGINES:
            raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, not {self.engine!r}")
        if self.engine == "dask" and self.scheduler is None:
            raise ConfigError(
                "the dask engine runs on a cluster: give its scheduler's address "
                "(--scheduler tcp://HOST:8786), or use --engine dask-local for one on this machine"
            )
        if self.scheduler is not None and self.engine == "dask-local":
            raise ConfigError("give either a scheduler or --engine dask-local, not both")
        if self.scratch is not None and self.engine_name == "local":
            raise ConfigError(
                "--scratch is where a Dask cluster's workers keep what they make: give it with "
                "--scheduler or --engine dask-local (the local engine needs none)"
            )

    @property
    def read(self) -> ReadConfig:
        return ReadConfig(
            self.text_fields,
            self.title_fields,
            self.id_fields,
            self.source_fields,
            self.encoding,
            self.errors,
            self.max_file_mb,
            self.max_whole_file_mb,
            self.follow_links,
        )

    @property
    def normalize(self) -> NormalizeConfig:
        """The normalize part; each scan adds the repeated lines it learns per source."""
        return NormalizeConfig(script=self.script, skip=frozenset(self.skip_steps))

    @property
    def segment(self) -> SegmentConfig:
        return SegmentConfig(self.passage_chars, self.passage_overlap, self.min_passage_chars)

    @property
    def match(self) -> MatchConfig:
        return MatchConfig(self.ngram, self.num_perm, self.seed, self.threshold, self.containment)

    @property
    def align(self) -> AlignConfig:
        return AlignConfig(min_identical=self.min_match_chars, every_pair=self.every_pair)

    @property
    def cluster(self) -> ClusterConfig:
        return ClusterConfig(self.keep, self.max_cluster_size)

    @classmethod
    def of(cls, **options: Any) -> ScanConfig:
        """A config from keyword options, with a DedupError (not a TypeError) for a misspelt
        one."""
        names = [item.name for item in fields(cls)]
        unknown = sorted(set(options) - set(names))
        if unknown:
            hints = []
            for name in unknown:
                close = difflib.get_close_matches(name, names, n=1)
                hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise ConfigError(
                f"unknown option {', '.join(hints)}; the options are the fields of "
                "dedup.ScanConfig: " + ", ".join(names)
            )
        return cls(**options)

    @classmethod
    def with_options(cls, config: ScanConfig | None, options: dict[str, Any]) -> ScanConfig:
        """``config`` (or the defaults) with ``options`` (fields by name) applied; a misspelt
        one is a ConfigError."""
        if config is None:
            return cls.of(**options)
        return cls.of(**{**config.to_fields(), **options}) if options else config

    @classmethod
    def of_report(cls, options: dict[str, Any]) -> ScanConfig:
        """The config of the scan whose report.json records ``options`` (its lists as
        tuples; what a report records that is not a field, left out)."""
        names = {item.name for item in fields(cls)}
        given = {name: value for name, value in options.items() if name in names}
        for name, value in given.items():
            if isinstance(value, list):
                given[name] = tuple(value)
        return cls(**given)

    def to_fields(self) -> dict[str, Any]:
        """Every field by name, as ``ScanConfig(**fields)`` takes them."""
        return {item.name: getattr(self, item.name) for item in fields(self)}

    @property
    def worker_count(self) -> int:
        return self.jobs or os.cpu_count() or 1

    @property
    def engine_name(self) -> str:
        """The engine the scan runs on: a scheduler given means the dask engine."""
        return "dask" if self.scheduler is not None else self.engine

    def for_workers(self) -> ScanConfig:
        """This config as the tasks get it: without the scheduler (a Client is not sent)."""
        if self.scheduler is None and self.engine == "local":
            return self
        return replace(self, engine="local", scheduler=None, scratch=None)

    def to_dict(self) -> dict[str, Any]:
        run_only = ("jobs", "engine", "scheduler", "scratch", "show_progress")
        # Not asdict: it deep-copies each value, a Client given as the scheduler too.
        options = {name: value for name, value in self.to_fields().items() if name not in run_only}
        options["text_fields"] = list(self.text_fields)
        options["title_fields"] = list(self.title_fields)
        options["id_fields"] = list(self.id_fields)
        options["source_fields"] = list(self.source_fields)
        options["skip_steps"] = sorted(self.skip_steps)
        return options
