"""Records of the normalize stage: its options, what its steps did, and a normalized text
with the offsets of its characters in the original.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from dedup.config import NormalizeConfig

__all__ = ["NormalizeConfig", "NormalizeStats", "NormalizedText"]

EXAMPLES = 5


@dataclass
class NormalizeStats:
    """What the steps did: counts of characters (and spans) removed or changed."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, name: str, count: int, example: str | None = None) -> None:
        if count:
            self.counts[name] = self.counts.get(name, 0) + count
        if example is not None:
            found = self.examples.setdefault(name, [])
            if len(found) < EXAMPLES and example not in found:
                found.append(example)

    def merge(self, other: NormalizeStats, examples: bool = False) -> None:
        for name, count in other.counts.items():
            self.counts[name] = self.counts.get(name, 0) + count
        if examples:
            for name, found in other.examples.items():
                for example in found:
                    self.add(name, 0, example)


@dataclass(frozen=True, slots=True)
class NormalizedText:
    """``text[i]`` came from ``original[offsets[i]]``; ``converted[i]`` says whether script
    conversion changed that character (a Traditional original, when the target is Simplified)."""

    text: str
    offsets: npt.NDArray[np.int64]
    converted: npt.NDArray[np.bool_]
    stats: NormalizeStats
    # The code points of ``text`` and of the original, as normalize had them: passages are cut
    # from these, and encoding each chapter again cost a tenth of the cutting. None when
    # unknown.
    codes: npt.NDArray[np.uint32] | None = None
    original_codes: npt.NDArray[np.uint32] | None = None
