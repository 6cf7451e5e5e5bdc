"""Fuzzing model-reply parsing of all six tasks: any text gives one prediction per item, valid or counted.

The contract (docs/design.md, value shapes): ``parse`` never raises; it returns one prediction per instance in
batch order; an invalid one has a first problem starting with ``parse_failure:``, ``missing:`` or
``invalid_label:``; a valid one has the task's value shape; and ``score`` turns every prediction into finite
metric values.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.fakes.chaos_server import schema_value
from tests.fuzz.conftest import FUZZ, JSON_VALUES, PATHS, TEXT, corpus_files, mutate

from rescue_bench.data.load import build_sample
from rescue_bench.data.synth import synthetic_samples
from rescue_bench.engine.plans import TaskPlan, build_plans
from rescue_bench.records import Instance, Prediction
from rescue_bench.spec import RunSpec

PREFIXES = ("parse_failure:", "missing:", "invalid_label:")


def _plans() -> list[TaskPlan]:
    objs = list(synthetic_samples(12, seed=3))
    samples = [build_sample(o, fallback_id="x", file=None, line=None)[0] for o in (objs[0], objs[-1])]
    return build_plans([s for s in samples if s is not None], RunSpec(model="vllm/fuzz"))


PLANS = _plans()
CASES: list[tuple[TaskPlan, tuple[Instance, ...]]] = [
    (plan, batch)
    for plan in PLANS
    for batch in (plan.batches[0], plan.batches[-1], plan.batches[0][:1], plan.batches[-1][-1:])
]


def check_shape(task: str, inst: Instance, value: Any) -> None:
    if task == "itp":
        assert value in ("yes", "no")
    elif task in ("rpp", "stp", "ssp"):
        assert isinstance(value, list) and 1 <= len(value) <= 3 and len(set(value)) == len(value)
        assert set(value) <= set(inst.candidates), (value, inst.candidates)
    elif task == "er":
        assert isinstance(value, dict) and isinstance(value["emotion"], str) and value["emotion"]
        intensity = value["intensity"]
        assert intensity is None or (type(intensity) is int and 0 <= intensity <= 10)
    else:
        assert isinstance(value, list)
        for view in value:
            assert all(isinstance(view.get(k), str) for k in ("source", "target", "viewpoint")), view


def check(plan: TaskPlan, batch: tuple[Instance, ...], text: str) -> list[Prediction]:
    predictions = plan.task.parse(text, batch)
    assert [p.instance_id for p in predictions] == [i.id for i in batch]
    for pred, inst in zip(predictions, batch, strict=True):
        if pred.valid:
            check_shape(plan.name, inst, pred.value)
        else:
            assert pred.problems and pred.problems[0].startswith(PREFIXES), pred.problems
        metrics = plan.task.score(pred, inst).metrics
        assert all(isinstance(v, float) and math.isfinite(v) for v in metrics.values()), metrics
        json.dumps(pred.value, allow_nan=False)  # what predictions.jsonl will hold
    return predictions


@pytest.mark.parametrize("path", corpus_files("replies"), ids=lambda p: p.name)
def test_corpus_replies(path: Any) -> None:
    text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    for plan, batch in CASES[::4]:  # one multi-item batch per task: a nested reply costs 0.4 s per parse
        check(plan, batch, text)


def test_a_clean_answer_is_valid_for_every_task() -> None:
    for plan, batch in CASES:
        request = plan.task.render(batch, plan.cfg)
        item = request.response_schema["properties"]["predictions"]["items"]
        ids = [f"c{i}" for i in range(1, len(batch) + 1)]
        entries = [{**schema_value(item, random.Random(i)), "id": i} for i in ids]
        predictions = check(plan, batch, json.dumps({"predictions": entries}))
        assert all(p.valid for p in predictions), [p.problems for p in predictions]


@FUZZ
@given(case=st.sampled_from(CASES), text=TEXT | st.text(max_size=400))
def test_fuzz_any_text(case: tuple[TaskPlan, tuple[Instance, ...]], text: str) -> None:
    check(*case, text)


@FUZZ
@given(case=st.sampled_from(CASES), value=JSON_VALUES, wrap=st.sampled_from(["", "predictions", "fence"]))
def test_fuzz_any_json(case: tuple[TaskPlan, tuple[Instance, ...]], value: Any, wrap: str) -> None:
    payload = {"predictions": value} if wrap == "predictions" else value
    text = json.dumps(payload)
    check(*case, f"Sure:\n```json\n{text}\n```" if wrap == "fence" else text)


@FUZZ
@given(
    case=st.sampled_from(CASES),
    seed=st.integers(0, 2**16),
    path=PATHS,
    value=JSON_VALUES,
    delete=st.booleans(),
    cut=st.none() | st.integers(0, 2000),
)
def test_fuzz_damaged_answers(
    case: tuple[TaskPlan, tuple[Instance, ...]],
    seed: int,
    path: list[Any],
    value: Any,
    delete: bool,
    cut: int | None,
) -> None:
    plan, batch = case
    request = plan.task.render(batch, plan.cfg)
    item = request.response_schema["properties"]["predictions"]["items"]
    rng = random.Random(seed)
    answer = {"predictions": [{**schema_value(item, rng), "id": f"c{i}"} for i in range(1, len(batch) + 1)]}
    text = json.dumps(mutate(answer, ["predictions", *path], value, delete))
    check(plan, batch, text if cut is None else text[:cut])
