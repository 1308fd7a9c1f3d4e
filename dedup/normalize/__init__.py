"""Normalize stage: the same scene must read the same on every site.

Only the characters that carry the story are kept (letters, Han characters, digits), converted
to one script and one form, each step in a module of its own: ``boilerplate`` (URLs, domains,
slogans), ``line_keys`` (lines a source repeats, learned by ``repeated_lines``), the
placeholder, punctuation and width steps on the ``tables`` of characters, ``opencc`` (the
script step, OpenCC run only where it can change something) and the variants table; ``steps``
runs them in order. The original text is never changed: every normalized character keeps the
offset of the original character it came from.
"""

from dedup.normalize.line_keys import line_key, line_key_array, line_keys, repeated_lines_needed
from dedup.normalize.records import NormalizeConfig, NormalizedText, NormalizeStats
from dedup.normalize.steps import (
    BATCH_CHARS,
    in_batches,
    normalize,
    normalize_many,
    prepare_tables,
)

__all__ = [
    "BATCH_CHARS",
    "NormalizeConfig",
    "NormalizeStats",
    "NormalizedText",
    "in_batches",
    "line_key",
    "line_key_array",
    "line_keys",
    "normalize",
    "normalize_many",
    "prepare_tables",
    "repeated_lines_needed",
]
