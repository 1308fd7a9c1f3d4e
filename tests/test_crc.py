from __future__ import annotations

import zlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dedup.kernels.crc import crc32_utf8

# One, two, three and four bytes in UTF-8.
ALPHABET = "aZ9éΣא中文章。𠀀😀\n"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=30), st.data())
def test_crc32_of_any_stretch_equals_zlibs(text: str, data: st.DataObject) -> None:
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    start = data.draw(st.integers(min_value=0, max_value=len(text)))
    stop = data.draw(st.integers(min_value=start, max_value=len(text)))
    assert crc32_utf8(codes, start, stop) == zlib.crc32(text[start:stop].encode("utf-8"))
