"""dedup.align (seed -> extend -> chain -> filter) and dedup.offset_steps, on real text."""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from dedup.align import WINNOW_WINDOW, align, winnowed_seeds
from dedup.codepoints import code_points
from dedup.config import SEED_CHARS, AlignConfig
from dedup.normalize import NormalizeConfig, normalize
from dedup.offset_steps import BIG_STEP, StepPacker, offset_steps, offsets_in_runs

CONFIG = AlignConfig()


def _story(text: str) -> npt.NDArray[np.uint32]:
    return code_points(normalize(text, NormalizeConfig()).text)


def test_a_scene_inside_other_prose_is_one_span_with_exact_ends(
    hongloumeng_simplified: str, seed_simplified: str
) -> None:
    source = _story(hongloumeng_simplified)[5000:9000]
    host = _story(seed_simplified)
    scene = source[1200:1500].copy()
    b = np.concatenate((host[:1000], scene, host[1000:2000]))
    (span,) = align(source, b, CONFIG).tolist()
    assert span == [1200, 1500, 1000, 1300, 300]


def test_typos_renamed_characters_and_a_censored_word_are_bridged(
    hongloumeng_simplified: str, seed_simplified: str
) -> None:
    source = _story(hongloumeng_simplified)[2000:2600]
    copy = source.copy()
    copy[40] = ord("甴")  # a typo
    copy = np.concatenate((copy[:200], code_points("宋清风"), copy[202:]))  # a renamed person
    copy = np.concatenate((copy[:400], copy[402:]))  # a censored word, dropped
    host = _story(seed_simplified)
    b = np.concatenate((host[:500], copy, host[500:900]))
    (span,) = align(source, b, CONFIG).tolist()
    a_start, a_end, b_start, b_end, identical = span
    assert (a_start, a_end) == (0, 600)
    assert (b_start, b_end) == (500, 500 + len(copy))
    assert 590 <= identical < 600


def test_a_scene_that_begins_with_short_stretches_is_found_from_its_first_character(
    hongloumeng_simplified: str, seed_simplified: str
) -> None:
    # Far from any stretch found, seeds are looked up every few positions only: the scene's
    # first stretches (9 and 10 characters between changed ones), too short to hold one of
    # those, are found by looking back from the long stretch after them.
    source = _story(hongloumeng_simplified)[3000:3400]
    copy = source.copy()
    copy[9] = ord("甴")
    copy[20] = ord("甴")
    host = _story(seed_simplified)
    for at in range(700, 708):  # every offset of the scene against the strided lookups
        b = np.concatenate((host[:at], copy, host[at : at + 900]))
        (span,) = align(b, source, CONFIG).tolist()  # the host is the side scanned
        assert span[:4] == [at, at + 400, 0, 400]
        assert span[4] == 398


def test_different_novels_with_similar_battle_scenes_share_no_span(
    seed_simplified: str, seed_with_ads: str, seed_traditional: str
) -> None:
    seeds = [_story(text) for text in (seed_simplified, seed_with_ads, seed_traditional)]
    for number, a in enumerate(seeds):
        for b in seeds[number + 1 :]:
            assert len(align(a, b, CONFIG)) == 0


def test_a_stretch_repeated_on_one_side_is_matched_once(hongloumeng_simplified: str) -> None:
    """Spans never overlap on either side: the copy with more identical characters wins."""
    text = _story(hongloumeng_simplified)
    scene = text[3000:3400]
    a = np.concatenate((text[:500], scene, text[500:900], scene[:300]))
    spans = align(a, scene.copy(), CONFIG)
    assert spans[:, :4].tolist() == [[500, 900, 0, 400]]


def test_a_string_repeated_many_times_seeds_nothing() -> None:
    laugh = code_points("哈" * 400)
    assert len(align(laugh, laugh.copy(), CONFIG)) == 0


def test_short_shared_phrases_are_filtered(seed_simplified: str) -> None:
    host = _story(seed_simplified)
    phrase = host[100:140]  # 40 identical characters: under min_identical
    other = np.concatenate((code_points("天" * 5), phrase, code_points("地" * 5)))
    assert len(align(host, other, CONFIG)) == 0
    assert len(align(host, other, AlignConfig(min_identical=30))) == 1


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_shared_run_of_window_plus_seed_chars_shares_a_winnowed_seed(
    data: st.DataObject,
) -> None:
    """Winnowing's guarantee, wherever the passage cuts fall around the shared run."""
    alphabet = st.integers(0x4E00, 0x4E00 + 30)
    run = data.draw(st.lists(alphabet, min_size=WINNOW_WINDOW + SEED_CHARS - 1, max_size=60))
    before = data.draw(st.lists(alphabet, max_size=50))
    after = data.draw(st.lists(alphabet, max_size=50))
    other_before = data.draw(st.lists(alphabet, max_size=50))
    one = np.array(before + run + after, dtype=np.uint32)
    two = np.array(other_before + run, dtype=np.uint32)
    seeds_one, _ = winnowed_seeds(
        one, np.array([0]), np.array([len(one)]), SEED_CHARS, WINNOW_WINDOW
    )
    seeds_two, _ = winnowed_seeds(
        two, np.array([0]), np.array([len(two)]), SEED_CHARS, WINNOW_WINDOW
    )
    assert set(seeds_one.tolist()) & set(seeds_two.tolist())


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 1000), min_size=1, max_size=200),
    st.lists(st.integers(1, 60), min_size=1, max_size=5),
)
def test_offset_steps_give_back_every_offset(gaps: list[int], cuts: list[int]) -> None:
    offsets = np.cumsum(np.array(gaps, dtype=np.int64))
    bounds = np.unique(np.clip(np.cumsum(cuts), 0, len(offsets)))
    starts = np.concatenate(([0], bounds[:-1])) if len(bounds) else np.array([0])
    ends = bounds if len(bounds) else np.array([len(offsets)])
    starts, ends = starts[starts < ends], ends[starts < ends]
    steps, big = offset_steps(offsets, starts.astype(np.int64), ends.astype(np.int64))
    assert (big[:, 1] >= BIG_STEP).all()
    assert (steps[big[:, 0]] == BIG_STEP).all() and (steps == BIG_STEP).sum() == len(big)
    first_step = np.cumsum(ends - starts) - (ends - starts)
    for window, (start, end) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        index = np.arange(end - start, dtype=np.int64)
        found = offsets_in_runs(
            [(steps, big)],
            np.full(len(index), first_step[window], dtype=np.int64),
            np.full(len(index), offsets[start], dtype=np.int64),
            index,
        )
        assert found.tolist() == offsets[start:end].tolist()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from([0, 1, 1, 1, 2, 2, 3, 4, 9, 254, 255, 256, 4000]), max_size=200),
    st.lists(st.integers(1, 60), min_size=1, max_size=6),
    st.lists(st.integers(0, 6), max_size=6),
)
def test_steps_packed_as_they_arrive_give_back_every_offset(
    gaps: list[int], cuts: list[int], part_ends: list[int]
) -> None:
    """Packed two bits a step, a part of the windows at a time as the main process packs a
    file's at a time, the steps map every normalized character back as the steps made do."""
    offsets = np.cumsum(np.array([0, *gaps], dtype=np.int64))
    bounds = np.unique([*np.clip(np.cumsum(cuts), 1, len(offsets)), len(offsets)])
    starts = np.concatenate(([0], bounds[:-1])).astype(np.int64)
    ends = bounds.astype(np.int64)
    lengths = ends - starts
    packer = StepPacker()
    windows = np.unique(np.clip([0, *part_ends, len(starts)], 0, len(starts)))
    for first, last in itertools.pairwise(windows.tolist()):
        steps, big = offset_steps(offsets, starts[first:last], ends[first:last])
        packer.append(steps, big)
    packed = packer.packed(lengths)
    passage = np.repeat(np.arange(len(starts)), lengths)
    index = np.concatenate([np.arange(length) for length in lengths.tolist()])
    found = packed.original_offsets(passage, index, offsets[starts][passage])
    assert found.tolist() == offsets.tolist()


def test_a_stretch_of_repeated_markup_is_not_shared_text(hongloumeng_simplified: str) -> None:
    """A site's markup (&nbsp; twenty times) before two different comments: identical, long,
    and saying nothing (found in the quality benchmark's annotated 红楼梦 pages)."""
    text = _story(hongloumeng_simplified)
    markup = _story("&nbsp;" * 20 + "```(")
    a = np.concatenate((text[:300], markup, text[1000:1300]))
    b = np.concatenate((text[5000:5300], markup, text[6000:6300]))
    assert len(align(a, b, CONFIG)) == 0
    scene = text[2000:2100]  # while a real stretch beside it still is
    spans = align(np.concatenate((a, scene)), np.concatenate((b, scene)), CONFIG)
    end = len(a) + len(scene)
    assert spans.tolist() == [[len(a), end, len(b), len(b) + len(scene), 100]]
