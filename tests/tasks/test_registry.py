"""The task registry and what all tasks share: shape, batching, no leaks, no future rows, total parsing."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rescue_bench.data.schema import Sample
from rescue_bench.errors import ConfigError
from rescue_bench.records import Instance, Shown
from rescue_bench.tasks import (
    TASK_NAMES,
    TASKS,
    build_instances,
    get_task,
    make_batches,
    rpp,
    ssp,
)
from rescue_bench.tasks.base import MODES, TaskConfig
from rescue_bench.tasks.context import row_records, shown_rows
from rescue_bench.taxonomy import relation_labels, strategy_labels

DEFAULTS = {"itp": (4, 3), "rpp": (3, -1), "stp": (3, 3), "ssp": (3, 3), "er": (5, 3), "vp": (5, 3)}
KINDS = {"itp": "binary", "rpp": "multiclass", "stp": "ranking", "ssp": "ranking", "er": "generation",
         "vp": "generation"}  # fmt: skip
PREFIXES = ("parse_failure:", "missing:", "invalid_label:", "request_failed:")
SHOWS_CURRENT = {"er", "vp"}
LABELS = ("pursue_withdraw", "attack_attack", "repair_softening", "mixed_transition")


def test_registry_lists_the_six_tasks_with_the_reference_defaults() -> None:
    assert tuple(TASKS) == TASK_NAMES
    for name, task in TASKS.items():
        info = task.INFO
        assert name == info.name and KINDS[name] == info.kind
        assert DEFAULTS[name] == (info.default_batch_size, info.default_context_size)
        assert info.max_tokens >= 1000
        assert re.fullmatch(r"[0-9a-f]{64}", task.INFO.prompt_hash)
    assert len({t.INFO.prompt_hash for t in TASKS.values()}) == 6


def test_get_task() -> None:
    assert get_task(" ITP ") is TASKS["itp"]
    with pytest.raises(ConfigError, match="unknown task 'xyz'; choose one of itp, rpp, stp, ssp, er, vp"):
        get_task("xyz")


def test_batches_never_cross_samples_and_respect_the_size() -> None:
    items = [Instance(f"{s}::er::{r}", "er", s, "couple", r, None) for s, r in [("a", 1), ("a", 2), ("b", 1)]]
    assert [[i.id for i in b] for b in make_batches(items, 5)] == [["a::er::1", "a::er::2"], ["b::er::1"]]
    assert make_batches([], 3) == []
    with pytest.raises(ConfigError):
        make_batches(items, 0)


def test_rows_are_rendered_once_per_sample_and_shared_by_every_task(
    make_sample: Callable[..., Sample],
) -> None:
    sample = make_sample(["Ana", "Ben", "Therapist", "Ana", "Therapist", "Ben", "Ana", "Therapist"])
    cfg = TaskConfig()
    records = row_records(sample, "dialogue", cfg.rows)
    shown = [rec for name in TASK_NAMES for inst in TASKS[name].build(sample, cfg)
             for rec in inst.context.rows]  # fmt: skip
    assert shown and all(any(rec is r for r in records) for rec in shown)


def all_requests(samples: list[Sample], cfg: TaskConfig) -> list[tuple[str, list[Instance], Any]]:
    out = []
    for name in TASK_NAMES:
        task = TASKS[name]
        for batch in make_batches(build_instances(task, samples, cfg), task.INFO.default_batch_size):
            out.append((name, batch, task.render(batch, cfg)))
    return out


@pytest.mark.parametrize("size", [-1, 0, 2])
def test_no_task_shows_future_rows_or_a_row_twice(demo_samples: list[Sample], size: int) -> None:
    cfg = TaskConfig(context_size=size, options={"rpp": rpp.Options(include_current_turn=size == 2)})
    for name, batch, _ in all_requests(demo_samples, cfg):
        for inst in batch:
            rows = shown_rows(inst.context)
            assert len(rows) == len(set(rows)) and list(rows) == sorted(rows)
            last = inst.row_index if name in SHOWS_CURRENT or inst.context.current else inst.row_index - 1
            if name == "itp":
                last = inst.row_index  # the decision row closes the window; the next turn is unseen
            assert all(r <= last for r in rows), (name, inst.id)
            earlier = [r for r in rows if r != inst.row_index or name == "itp"]
            assert size < 0 or len(earlier) <= size


def test_prompts_never_show_ids_or_the_hidden_annotation(demo_samples: list[Sample]) -> None:
    """Instance and sample ids never reach a model; nor do the annotations that are the gold of some task."""
    hidden: list[str] = []
    for sample in demo_samples:
        for row in sample.rows:
            hidden += [e.emotion_description or "" for e in row.internal_emotion]
            hidden += [v.viewpoint or "" for v in row.viewpoints_attitudes]
            hidden += [s.strategy_content or "" for s in row.support_strategy]
            hidden += [row.relation_cycle_reason or "", row.relation_pattern_reason or ""]
    # an annotation that repeats the spoken words (e.g. "feels lighter") is not a leak
    spoken = "\n".join(str(r["line"]) for s in demo_samples for r in row_records(s, "audiovisual"))
    hidden = [h for h in hidden if len(h) > 12 and h not in spoken]
    assert len(hidden) > 100
    cfg = TaskConfig(mode="audiovisual", context_size=-1, options={"ssp": ssp.Options()})
    for _, batch, request in all_requests(demo_samples, cfg):
        text = "\n".join(str(m["content"]) for m in request.messages) + json.dumps(request.response_schema)
        assert batch[0].sample_id not in text and "::" not in text
        assert not [h for h in hidden if h in text]


@pytest.mark.parametrize("mode", MODES)
def test_system_messages_are_shared_prefixes(demo_samples: list[Sample], mode: str) -> None:
    """Within a task, scenario and mode, every request starts with the same system message."""
    systems: dict[tuple[str, str], set[str]] = {}
    for name, batch, request in all_requests(demo_samples, TaskConfig(mode=mode)):  # type: ignore[arg-type]
        assert [m["role"] for m in request.messages] == ["system", "user"]
        assert request.prompt_hash == TASKS[name].INFO.prompt_hash
        assert request.instance_ids == tuple(i.id for i in batch)
        assert request.max_tokens == TASKS[name].INFO.max_tokens
        systems.setdefault((name, batch[0].scenario), set()).add(request.messages[0]["content"])
    assert len(systems) == 12 and all(len(v) == 1 for v in systems.values())


# -- fuzz: any text, any JSON value, for every task ---------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
ANSWER_KEYS = [
    "should_speak",
    "relation_top3",
    "target_top3",
    "strategy_top3",
    "emotion",
    "intensity",
    "viewpoints",
    "id",
    "predictions",
]
ENTRIES = st.dictionaries(st.sampled_from(ANSWER_KEYS) | st.text(max_size=8), JSON_VALUES, max_size=5)


def fuzz_batch(task: str, n: int) -> list[Instance]:
    return [
        Instance(
            f"s::{task}::{i}", task, "s", "couple", i, None, LABELS, Shown("dialogue", 0, speaker="Ana"), {}
        )
        for i in range(1, n + 1)
    ]


def check(task: str, text: str, n: int) -> None:
    insts = fuzz_batch(task, n)
    preds = TASKS[task].parse(text, insts)
    assert [p.instance_id for p in preds] == [i.id for i in insts]
    for pred in preds:
        assert pred.valid or pred.problems[0].startswith(PREFIXES)
        assert not any("unreadable answer" in p for p in pred.problems), pred.problems
        json.dumps(pred.to_json())


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(task=st.sampled_from(sorted(TASKS)), text=st.text(max_size=300), n=st.integers(1, 4))
def test_any_text_gives_one_prediction_per_item(task: str, text: str, n: int) -> None:
    check(task, text, n)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(task=st.sampled_from(sorted(TASKS)), value=JSON_VALUES, n=st.integers(1, 4))
def test_any_json_value_gives_one_prediction_per_item(task: str, value: Any, n: int) -> None:
    check(task, json.dumps(value), n)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    task=st.sampled_from(sorted(TASKS)),
    entries=st.lists(ENTRIES, max_size=4),
    n=st.integers(1, 4),
    ids=st.lists(st.sampled_from(["c1", "c2", 1, "3", None, "x"]), min_size=4, max_size=4),
)
def test_shaped_answers_with_random_fields_never_raise(
    task: str, entries: list[dict[str, Any]], n: int, ids: list[Any]
) -> None:
    items = [{**entry, "id": ids[i]} if ids[i] is not None else entry for i, entry in enumerate(entries)]
    check(task, json.dumps({"predictions": items}), n)


def test_answer_examples_name_no_real_label() -> None:
    """The example answer in each prompt uses placeholders, so no label is primed (the reference showed real
    labels, one of them invalid for families)."""
    labels = {*relation_labels("couple"), *relation_labels("family"), *strategy_labels("couple")}
    labels |= set(strategy_labels("family"))
    for name in ("rpp", "stp", "ssp", "er", "vp"):
        shape = TASKS[name].SHAPE  # type: ignore[attr-defined]
        assert not [label for label in labels if f'"{label}"' in shape], name
