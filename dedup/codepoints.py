"""Text as an array of code points and back: how the stages hand text to numpy and to their
compiled loops (one element per character, whatever the plane)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["code_points", "from_code_points"]


def code_points(text: str) -> npt.NDArray[np.uint32]:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def from_code_points(codes: npt.NDArray[np.uint32]) -> str:
    return codes.astype(np.uint32).tobytes().decode("utf-32-le", "surrogatepass")
