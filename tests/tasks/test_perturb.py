"""Perturbations keep what their docstrings promise: instance ids, the gold (or its exact mapping) and the
target row; property tests over seeds, demo samples and tasks, plus generated names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rescue_bench.data.load import load_samples
from rescue_bench.data.schema import Sample
from rescue_bench.errors import ConfigError
from rescue_bench.records import Instance
from rescue_bench.rundir import PredictionLine
from rescue_bench.tasks import TASK_NAMES, TASKS
from rescue_bench.tasks.base import TaskConfig
from rescue_bench.tasks.perturb import (
    PERTURBATIONS,
    apply_perturbations,
    circular_correct,
    circular_variants,
    parse_perturbations,
    perturbation_record,
    perturbed_task,
    rotation_count,
)
from rescue_bench.tasks.perturb.names import restore_names, text_mapper
from rescue_bench.tasks.rpp import Options as rpp_options

DEMO = load_samples("demo")
MODES = ("dialogue", "audiovisual")
NAMES = ("label-order", "label-order:3", "name-swap", "anonymize", "shuffle-window", "context:1", "no-cues")
ORDERED = ("rpp", "stp", "ssp")
FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def build(
    task: str, samples: Sequence[Sample], cfg: TaskConfig, names: str = "", seed: int = 0
) -> list[Instance]:
    if not names:
        return [inst for s in samples for inst in TASKS[task].build(s, cfg)]
    return apply_perturbations(TASKS[task], samples, cfg, names, seed)


def expected_names(sample: Sample, perturbation: str) -> dict[str, str]:
    """The mapping the docstrings promise, written out independently for the demo's participants."""
    people = list(sample.participants)
    if perturbation == "anonymize":
        if sample.scenario == "couple":
            return dict(zip(people, ("Partner A", "Partner B"), strict=True))
        return {name: f"Member {i}" for i, name in enumerate(people, start=1)}
    return {}


def swap_json(value: Any, mapping: dict[str, str]) -> Any:
    """Exact-string mapping of names, as STP and VP gold hold them (whole names, not text)."""
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, dict):
        return {k: swap_json(v, mapping) if k in ("source", "target") else v for k, v in value.items()}
    if isinstance(value, list):
        return [swap_json(v, mapping) for v in value]
    return value


@FUZZ
@given(
    task=st.sampled_from(TASK_NAMES[:6]),
    name=st.sampled_from(NAMES),
    seed=st.integers(0, 10_000),
    mode=st.sampled_from(MODES),
    index=st.integers(0, len(DEMO) - 1),
)
def test_ids_are_kept_and_gold_is_kept_or_mapped(
    task: str, name: str, seed: int, mode: str, index: int
) -> None:
    sample = DEMO[index]
    cfg = TaskConfig(mode=mode)  # type: ignore[arg-type]
    base = build(task, [sample], cfg)
    out = build(task, [sample], cfg, name, seed)
    assert [i.id for i in out] == [i.id for i in base]
    assert [i.row_index for i in out] == [i.row_index for i in base]
    if name not in ("name-swap", "anonymize"):
        assert [i.gold for i in out] == [i.gold for i in base]
        return
    mapping = (
        {o: n for o, n in zip(sample.participants, out[0].context.participants, strict=True)}
        if (out and out[0].context is not None and out[0].context.participants)
        else None
    )
    if name == "anonymize":
        assert mapping is None or mapping == expected_names(sample, name)
        mapping = expected_names(sample, name)
    if mapping is None:  # ITP, ER, SSP do not show the people line; their gold has no names
        return
    assert sorted(mapping.values()) == sorted(mapping) or name == "anonymize"
    assert all(old != new for old, new in mapping.items())
    if task in ("stp", "vp"):
        assert [i.gold for i in out] == [
            swap_json(i.gold, mapping) if task == "stp" else _vp(i.gold, mapping) for i in base
        ]


def _vp(gold: list[dict[str, Any]], mapping: dict[str, str]) -> list[dict[str, Any]]:
    mapper = text_mapper(mapping)
    return [
        {**swap_json(g, mapping), "viewpoint": mapper(g["viewpoint"]), "attitude": g["attitude"]}
        for g in gold
    ]


@FUZZ
@given(name=st.sampled_from(NAMES), seed=st.integers(0, 10_000), index=st.integers(0, len(DEMO) - 1))
def test_the_target_row_is_unchanged(name: str, seed: int, index: int) -> None:
    cfg = TaskConfig(mode="audiovisual", options={"rpp": rpp_options(include_current_turn=True)})
    renamed = name in ("name-swap", "anonymize")
    for task in ("itp", "rpp", "er", "vp"):
        base = build(task, [DEMO[index]], cfg)
        out = build(task, [DEMO[index]], cfg, name, seed)
        for b, o in zip(base, out, strict=True):
            if task == "itp":  # the decision row is the last row shown
                shown_b, shown_o = b.context.rows, o.context.rows
                if shown_b and shown_o:
                    assert shown_o[-1]["row_index"] == shown_b[-1]["row_index"] == b.row_index
                    if not renamed:
                        assert shown_o[-1]["line"] == shown_b[-1]["line"] or name == "no-cues"
                continue
            assert o.context.current["row_index"] == b.context.current["row_index"] == b.row_index
            if not renamed and name != "no-cues":
                assert o.context.current["line"] == b.context.current["line"]


@FUZZ
@given(
    seed=st.integers(0, 10_000),
    index=st.integers(0, len(DEMO) - 1),
    task=st.sampled_from(("itp", "er", "ssp")),
)
def test_shuffle_window_reorders_the_same_rows(seed: int, index: int, task: str) -> None:
    cfg = TaskConfig(context_size=5)
    base = build(task, [DEMO[index]], cfg)
    out = build(task, [DEMO[index]], cfg, "shuffle-window", seed)
    for b, o in zip(base, out, strict=True):
        before = [r["line"] for r in b.context.rows]
        after = [r["line"] for r in o.context.rows]
        assert sorted(before) == sorted(after)
        movable = [r for r in b.context.rows if r["row_index"] != b.row_index]
        if len(movable) >= 2:
            assert before != after


@FUZZ
@given(seed=st.integers(0, 10_000), k=st.integers(0, 12), task=st.sampled_from(ORDERED))
def test_label_order_permutes_the_candidates_only(seed: int, k: int, task: str) -> None:
    cfg = TaskConfig()
    base = build(task, DEMO, cfg)
    shuffled = build(task, DEMO, cfg, "label-order", seed)
    rotated = build(task, DEMO, cfg, f"label-order:{k}", seed)
    for b, s, r in zip(base, shuffled, rotated, strict=True):
        assert sorted(s.candidates) == sorted(b.candidates)
        assert s.candidates != b.candidates  # every list has at least 3 entries
        n = len(b.candidates)
        assert r.candidates == tuple(b.candidates[(i + k) % n] for i in range(n))
        assert s.gold == r.gold == b.gold


@pytest.mark.parametrize("task", ("rpp", "ssp"))
def test_label_order_rewrites_the_label_definitions(task: str) -> None:
    cfg = TaskConfig()
    wrapped = perturbed_task(TASKS[task], "label-order:1", 0)
    batch = build(task, DEMO[:1], cfg, "label-order:1")[:1]
    system = wrapped.render(batch, cfg).messages[0]["content"]
    positions = [system.index(f"- {label} (") for label in batch[0].candidates]
    assert positions == sorted(positions)
    assert system != TASKS[task].render(build(task, DEMO[:1], cfg)[:1], cfg).messages[0]["content"]


def test_no_cues_leaves_dialogue_prompts_alone_and_strips_cues() -> None:
    for mode, same in (("dialogue", True), ("audiovisual", False)):
        cfg = TaskConfig(mode=mode)  # type: ignore[arg-type]
        base = build("er", DEMO[:1], cfg)
        out = build("er", DEMO[:1], cfg, "no-cues")
        assert (TASKS["er"].render(base[:2], cfg) == TASKS["er"].render(out[:2], cfg)) is same
    lines = [r["line"] for inst in out for r in inst.context.rows]
    assert lines and not any(
        f"| {cue}:" in line for line in lines for cue in ("tone", "posture", "face", "self")
    )


def test_context_sets_the_window() -> None:
    for n in (0, 1, 3):
        out = build("rpp", DEMO[:1], TaskConfig(), f"context:{n}")
        assert all(len(i.context.rows) <= n and i.context.size == n for i in out)
    full = build("stp", DEMO[:1], TaskConfig(), "context:all")
    assert all(len(i.context.rows) == i.row_index - 1 for i in full)


@FUZZ
@given(
    names=st.lists(st.from_regex(r"[A-Z][a-z]{1,8}", fullmatch=True), min_size=2, max_size=4, unique=True),
    words=st.lists(st.sampled_from(["and", "'s", " ", ",", "x", "Tommy"]), max_size=6),
)
def test_name_mapping_round_trips(names: list[str], words: list[str]) -> None:
    forward = {a: b for a, b in zip(names, names[1:] + names[:1], strict=True)}
    backward = {b: a for a, b in forward.items()}
    text = " ".join([*names, *words, names[0] + "'s"])
    mapped = text_mapper(forward)(text)
    assert text_mapper(backward)(mapped) == text
    assert mapped.split(" ")[: len(names)] == [forward[n] for n in names]


@pytest.mark.parametrize("name", ("name-swap", "anonymize"))
def test_restored_records_have_the_unperturbed_gold(name: str) -> None:
    for task in ("stp", "vp", "er"):
        base = build(task, DEMO, TaskConfig())
        out = build(task, DEMO, TaskConfig(), name, seed=4)
        for b, o in zip(base, out, strict=True):
            record = PredictionLine(
                instance_id=o.id,
                task=task,
                gold=o.gold,
                prediction=list(o.candidates[:1]) if o.candidates else None,
                meta=o.meta,
            )
            restored = restore_names(record)
            assert restored.gold == b.gold
            if b.candidates:
                assert restored.prediction == list(b.candidates[:1])


def test_deterministic_and_seeded() -> None:
    first = build("stp", DEMO, TaskConfig(), "label-order,shuffle-window", seed=1)
    again = build("stp", DEMO, TaskConfig(), "label-order,shuffle-window", seed=1)
    other = build("stp", DEMO, TaskConfig(), "label-order,shuffle-window", seed=2)
    assert first == again
    assert first != other


def test_parsing_and_records() -> None:
    assert set(PERTURBATIONS) == {
        "label-order",
        "name-swap",
        "anonymize",
        "shuffle-window",
        "context",
        "no-cues",
    }
    for bad in (
        "nope",
        "context",
        "context:-1",
        "label-order:x",
        "no-cues:1",
        "name-swap,anonymize",
        "no-cues,no-cues",
    ):
        with pytest.raises(ConfigError):
            parse_perturbations(bad)
    record = perturbation_record("context:3,no-cues", seed=5)
    assert record["names"] == ["context:3", "no-cues"] and record["seed"] == 5
    assert all(definition for definition in record["invariants"].values())
    with pytest.raises(ConfigError):
        perturbed_task(TASKS["rpp"], "label-order:all", 0)


def test_circular_variants_and_rule() -> None:
    instances = build("ssp", DEMO, TaskConfig())
    k = rotation_count(instances)
    assert k == max(len(i.candidates) for i in instances)
    variants = circular_variants("label-order:all,no-cues", k)
    assert [str(v[0]) for v in variants] == [f"label-order:{i}" for i in range(k)]
    assert all(str(v[1]) == "no-cues" for v in variants)
    hit = PredictionLine(instance_id="a", task="rpp", gold="x", valid=True, prediction=["x"])
    miss = hit.model_copy(update={"prediction": ["y"]})
    other = hit.model_copy(update={"instance_id": "b"})
    assert circular_correct([[hit, other], [hit, other]]) == {"a": True, "b": True}
    assert circular_correct([[hit, other], [miss]]) == {"a": False}
