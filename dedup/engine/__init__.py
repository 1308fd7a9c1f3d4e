"""Where and how fast the stages run: the local engine (a pool of worker processes), the
per-file task it runs, gathering the workers' results, reading member texts back, and the
tricks that keep a large scan's memory and time down (docs/architecture.md)."""
