"""The version of dedup: in every report, and in setup.cfg's metadata."""

__version__ = "0.1.0"
