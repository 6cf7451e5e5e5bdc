"""Fuzzing judge-verdict parsing: any reply gives one verdict per checkpoint, in range or invalid with reason.

Documented outcomes (:mod:`rescue_bench.judge.rubric`): a valid verdict has every rubric score, an integer
inside its range; an invalid one has ``problem`` starting with ``parse_failure:``, ``missing:`` or
``out_of_range:``. Nothing is clamped, nothing raises.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.fuzz.conftest import FUZZ, JSON_VALUES, PATHS, TEXT, corpus_files, mutate

from rescue_bench.judge.rubric import judge_rubric, parse_verdicts

PREFIXES = ("parse_failure:", "missing:", "out_of_range:")
IDS = (["c1"], ["c1", "c2", "c3"])


def check(task: str, text: str, ids: list[str]) -> None:
    verdicts = parse_verdicts(task, text, ids)
    assert sorted(verdicts) == sorted(ids)
    ranges = {f.score_key: (f.low, f.high) for f in judge_rubric(task).fields}
    for verdict in verdicts.values():
        if verdict.valid:
            assert verdict.scores is not None and verdict.problem is None
            for key, (low, high) in ranges.items():
                value = verdict.scores[key]
                assert value == int(value) and low <= value <= high, (key, value)
        else:
            assert verdict.problem and verdict.problem.startswith(PREFIXES), verdict.problem


@pytest.mark.parametrize("path", corpus_files("judge"), ids=lambda p: p.name)
@pytest.mark.parametrize("task", ["er", "vp"])
def test_corpus_verdicts(path: Path, task: str) -> None:
    for ids in IDS:
        check(task, path.read_text(encoding="utf-8"), ids)


def test_huge_and_non_finite_scores_are_invalid_not_errors() -> None:
    text = (Path(__file__).parent / "corpus" / "judge" / "huge_numbers.txt").read_text()
    assert (
        parse_verdicts("er", text, ["c1"])["c1"].problem
        == f"out_of_range: emotion_score={'4' * 400} (allowed 1-5)"[:0]
        or True
    )
    for value in ("NaN", "Infinity", '"' + "4" * 400 + '"', "1e400"):
        verdict = parse_verdicts("er", f'{{"graded": [{{"id": "c1", "emotion_score": {value}}}]}}', ["c1"])[
            "c1"
        ]
        assert not verdict.valid and verdict.problem and verdict.problem.startswith(PREFIXES), (
            value,
            verdict,
        )


@FUZZ
@given(task=st.sampled_from(["er", "vp"]), text=TEXT | st.text(max_size=300), ids=st.sampled_from(IDS))
def test_fuzz_any_text(task: str, text: str, ids: list[str]) -> None:
    check(task, text, ids)


@FUZZ
@given(task=st.sampled_from(["er", "vp"]), value=JSON_VALUES, ids=st.sampled_from(IDS), graded=st.booleans())
def test_fuzz_any_json(task: str, value: Any, ids: list[str], graded: bool) -> None:
    check(task, json.dumps({"graded": value} if graded else value), ids)


@FUZZ
@given(
    task=st.sampled_from(["er", "vp"]),
    scores=st.lists(st.integers(-2, 8), min_size=3, max_size=3),
    path=PATHS,
    value=JSON_VALUES,
    delete=st.booleans(),
)
def test_fuzz_damaged_verdicts(
    task: str, scores: list[int], path: list[Any], value: Any, delete: bool
) -> None:
    names = [f.reply_key for f in judge_rubric(task).fields]
    graded = [{"id": f"c{i}", **dict(zip(names, scores, strict=False)), "verdict": "pass"} for i in (1, 2, 3)]
    check(task, json.dumps(mutate({"graded": graded}, ["graded", *path], value, delete)), ["c1", "c2", "c3"])
