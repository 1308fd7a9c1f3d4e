"""Texts as UTF-16 runs (dedup.codepoints.TextRun): what the workers hand back and the main
process holds, read as the strings they were made from."""

from __future__ import annotations

import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dedup.codepoints import TextRun, code_points

# Real text, with characters past U+FFFF (CJK Extension B) that take two code units.
_texts = st.lists(
    st.one_of(
        st.none(),
        st.text(min_size=1, max_size=30),
        st.text(alphabet=st.sampled_from("他說的天堂𠀀𪚥，。\n"), min_size=1, max_size=30),
    ),
    max_size=12,
)


def _rows(data: st.DataObject, count: int) -> np.ndarray:
    rows = data.draw(st.lists(st.integers(0, count - 1), max_size=20)) if count else []
    return np.array(rows, dtype=np.int64)


@settings(max_examples=300, deadline=None)
@given(_texts, st.data())
def test_a_run_reads_as_the_texts_it_was_made_from(
    texts: list[str | None], data: st.DataObject
) -> None:
    run = TextRun.of(texts)
    assert run.texts() == texts
    assert run.held().tolist() == [text is not None for text in texts]
    rows = _rows(data, len(texts))
    chosen = [texts[row] or "" for row in rows.tolist()]
    assert run.lengths(rows).tolist() == [len(text) for text in chosen]
    assert run.code_points(rows).tolist() == code_points("".join(chosen)).tolist()
    units, counts = run.units(rows)
    assert units.tobytes().decode("utf-16-le") == "".join(chosen)
    assert counts.tolist() == [len(text.encode("utf-16-le")) // 2 for text in chosen]
    starts = run.starts()
    assert [
        run.code_units[start : start + count].tobytes().decode("utf-16-le")
        for start, count in zip(starts.tolist(), np.diff(run.ends, prepend=0).tolist(), strict=True)
    ] == [text or "" for text in texts]
    # As handed from a worker to this process.
    assert pickle.loads(pickle.dumps(run)) == run


@settings(max_examples=300, deadline=None)
@given(st.lists(_texts, max_size=5), st.data())
def test_runs_joined_and_emptied_are_the_runs_of_the_texts_so(
    parts: list[list[str | None]], data: st.DataObject
) -> None:
    runs = [TextRun.of(texts) for texts in parts]
    joined = TextRun.joined(runs)
    every = [text for texts in parts for text in texts]
    assert joined == TextRun.of(every)
    assert runs == []  # each part let go of as it was copied
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=len(every), max_size=len(every))))
    kept = [text if flag else None for text, flag in zip(every, keep.tolist(), strict=True)]
    assert joined.emptied(keep.astype(np.bool_)) == TextRun.of(kept)


def test_a_run_of_real_text_holds_two_bytes_a_character(seed_traditional: str) -> None:
    texts = [
        seed_traditional[start : start + 400] for start in range(0, len(seed_traditional), 400)
    ]
    run = TextRun.of(texts)
    assert run.code_units.nbytes == 2 * sum(map(len, texts))
    assert run.texts() == texts
    assert run[3] == texts[3]
    assert run != TextRun.of(texts[::-1])
