"""Text as an array of code points and back: how the stages hand text to numpy and to their
compiled loops (one element per character, whatever the plane)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dedup.kernels.jit import compiled

__all__ = [
    "TextRun",
    "code_points",
    "from_code_points",
    "utf16_characters",
    "utf16_code_points",
    "utf16_gathered",
    "utf16_units",
]


def code_points(text: str) -> npt.NDArray[np.uint32]:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def from_code_points(codes: npt.NDArray[np.uint32]) -> str:
    return codes.astype(np.uint32).tobytes().decode("utf-32-le", "surrogatepass")


def utf16_units(texts: Sequence[str]) -> tuple[bytes, npt.NDArray[np.int64]]:
    """The texts in UTF-16 (little-endian), one after another, and how many code units each
    took (its characters, and one more for each past U+FFFF)."""
    encoded = [text.encode("utf-16-le") for text in texts]
    return b"".join(encoded), np.fromiter(map(len, encoded), np.int64, len(encoded)) // 2


@compiled
def utf16_code_points(
    units: npt.NDArray[np.uint16], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint32]:
    """The code points of the UTF-16 texts ``units[starts[i]:ends[i]]``, one after another:
    what decoding each text and encoding their join as UTF-32 gives, without a string made
    (a surrogate pair is one character; the texts hold no lone surrogate, being encoded)."""
    codes = np.empty(int((ends - starts).sum()), dtype=np.uint32)
    at = 0
    for text in range(len(starts)):
        unit, end = starts[text], ends[text]
        while unit < end:
            code = np.uint32(units[unit])
            if 0xD800 <= code < 0xDC00 and unit + 1 < end:
                low = np.uint32(units[unit + 1])
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                unit += 1
            codes[at] = code
            at += 1
            unit += 1
    return codes[:at]


@compiled
def utf16_characters(
    units: npt.NDArray[np.uint16], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """How many characters each UTF-16 text ``units[starts[i]:ends[i]]`` holds (a surrogate
    pair is one)."""
    counts = np.empty(len(starts), dtype=np.int64)
    for text in range(len(starts)):
        count = 0
        for unit in range(starts[text], ends[text]):
            if not 0xDC00 <= units[unit] < 0xE000:  # a low surrogate ends a pair already counted
                count += 1
        counts[text] = count
    return counts


@compiled
def utf16_gathered(
    units: npt.NDArray[np.uint16], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint16]:
    """The UTF-16 texts ``units[starts[i]:ends[i]]``, one after another."""
    gathered = np.empty(int((ends - starts).sum()), dtype=np.uint16)
    at = 0
    for text in range(len(starts)):
        size = ends[text] - starts[text]
        gathered[at : at + size] = units[starts[text] : ends[text]]
        at += size
    return gathered


@dataclass(frozen=True, slots=True, eq=False)
class TextRun:
    """Passages' normalized texts one after another in UTF-16 (passage ``i``'s is code units
    ``ends[i - 1]`` to ``ends[i]``; an empty one was not handed back: a passage's text is
    never empty, and a worker hands each distinct text back once, dedup.engine.copies).

    The one form texts take between processes: a worker hands a file's back so, a cluster's
    worker keeps them so (dedup.engine.shuffle), and the main process holds the scan's so,
    all files' joined. Not a str each: a str of Han text takes 4 bytes a character once one
    of its characters lies past U+FFFF (rare ideographs do) and 70-odd bytes of its own, and
    pickles as UTF-8 (3 a character) to be decoded again where it goes; these units move as
    they are, 2 a character, and the stages read them as they are (the alignment in UTF-16,
    verification as code points made by a compiled loop)."""

    code_units: npt.NDArray[np.uint16]
    ends: npt.NDArray[np.int64]

    @classmethod
    def of(cls, texts: Sequence[str | None]) -> TextRun:
        """The run of ``texts`` (None: not handed back, held as an empty text)."""
        utf16, units = utf16_units([text or "" for text in texts])
        return cls(np.frombuffer(bytearray(utf16), dtype=np.uint16), np.cumsum(units))

    @classmethod
    def joined(cls, parts: list[TextRun]) -> TextRun:
        """The runs of ``parts`` one after another, ``parts`` emptied as each is copied: the
        scan's texts are held once, not in their parts and joined alike."""
        size = sum(len(part.code_units) for part in parts)
        units = np.empty(size, dtype=np.uint16)
        ends = np.empty(sum(len(part) for part in parts), dtype=np.int64)
        used = rows = 0
        parts.reverse()
        while parts:
            part = parts.pop()
            units[used : used + len(part.code_units)] = part.code_units
            ends[rows : rows + len(part)] = part.ends + used
            used, rows = used + len(part.code_units), rows + len(part)
        return cls(units, ends)

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, row: int) -> str:
        start = int(self.ends[row - 1]) if row else 0
        return self.code_units[start : int(self.ends[row])].tobytes().decode("utf-16-le")

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, TextRun):
            return NotImplemented
        return np.array_equal(self.ends, other.ends) and np.array_equal(
            self.code_units, other.code_units
        )

    __hash__ = None  # type: ignore[assignment]

    def texts(self) -> list[str | None]:
        """Each text as a str (None where it was not handed back)."""
        return [self[row] or None for row in range(len(self))]

    def held(self) -> npt.NDArray[np.bool_]:
        """Which passages' texts were handed back (are not empty)."""
        return np.diff(self.ends, prepend=0) > 0

    def emptied(self, keep: npt.NDArray[np.bool_]) -> TextRun:
        """The same texts, those not ``keep`` (a flag a passage) left out, empty."""
        if keep.all():
            return self
        counts = np.diff(self.ends, prepend=0)
        return TextRun(self.code_units[np.repeat(keep, counts)], np.cumsum(counts * keep))

    def starts(self) -> npt.NDArray[np.int64]:
        """Where each text starts in the code units."""
        return self.ends - np.diff(self.ends, prepend=0)

    def units(
        self, rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.uint16], npt.NDArray[np.int64]]:
        """The UTF-16 code units of the texts of ``rows``, one text after another, and how
        many each took."""
        starts, ends = self._bounds(rows)
        return utf16_gathered(self._units(), starts, ends), ends - starts

    def code_points(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.uint32]:
        """The code points of the texts of ``rows``, one text after another: as the texts'
        join encoded in UTF-32, without a string made."""
        return utf16_code_points(self._units(), *self._bounds(rows))

    def lengths(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """How many characters each text of ``rows`` holds."""
        return utf16_characters(self._units(), *self._bounds(rows))

    def _units(self) -> npt.NDArray[np.uint16]:
        # Read-only, as the loops that read them are compiled (and shipped) for; the array
        # itself is writable wherever it was made (joined, unpickled), as the alignment's
        # loops, given it whole (dedup.matches.NormalizedTexts), are compiled for.
        units = self.code_units.view()
        units.flags.writeable = False
        return units

    def _bounds(
        self, rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Where the texts of ``rows`` start and end in the run's code units."""
        return np.where(rows > 0, self.ends[np.maximum(rows - 1, 0)], 0), self.ends[rows]

    def __sizeof__(self) -> int:
        # What Dask counts a kept run as (sys.getsizeof): its scheduler places a task by the
        # bytes of its inputs each worker holds, and counted as an empty object, the texts
        # were moved to wherever a task went.
        return object.__sizeof__(self) + self.code_units.nbytes + self.ends.nbytes
