"""The README shows what dedup prints today (tests/readme_examples.py reruns its examples)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import readme_examples
from tests.readme_examples import README, examples, run, scratch, shape

EXAMPLES = examples(README.read_text("utf-8"))


def test_the_readme_has_its_examples() -> None:
    commands = [example.command for example in EXAMPLES]
    assert "dedup scan corpus_samples/" in commands
    assert any(command.startswith("dedup explain") for command in commands)
    assert any(command.startswith("pytest") for command in commands)


@pytest.mark.parametrize(
    "example",
    [e for e in EXAMPLES if not e.command.startswith("pytest")],
    ids=lambda example: example.command,
)
def test_a_pasted_output_is_what_the_command_prints(example: readme_examples.Example) -> None:
    with scratch() as folder:
        printed = run(example.command, Path(folder))
    assert shape(printed) == shape(example.shown), (
        "the README's output is stale: run python tests/readme_examples.py to paste it again"
    )


def test_the_pasted_test_count_is_the_suite_s(request: pytest.FixtureRequest) -> None:
    (example,) = [e for e in EXAMPLES if e.command.startswith("pytest")]
    counts = dict(
        (word, int(number)) for number, word in re.findall(r"(\d+) (passed|skipped)", example.shown)
    )
    collected = len(request.session.items)
    part = request.config.getoption("keyword") or request.config.args != ["tests"]
    if part and collected != sum(counts.values()):
        pytest.skip("only part of the suite was collected")
    assert sum(counts.values()) == collected, (
        f"the README says {sum(counts.values())} tests, the suite has {collected}"
    )
