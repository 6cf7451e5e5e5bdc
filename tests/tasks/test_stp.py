"""STP: gold target resolution, one closed candidate set per sample, the hidden therapist row, scores."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from rescue_bench.data.schema import Sample
from rescue_bench.records import Instance, Prediction
from rescue_bench.tasks import stp
from rescue_bench.tasks.base import TaskConfig
from rescue_bench.tasks.context import shown_rows
from rescue_bench.tasks.support import candidate_targets

CFG = TaskConfig()


def chunks(items: list[Instance], size: int) -> list[list[Instance]]:
    """Batches of one sample's instances."""
    return [items[i : i + size] for i in range(0, len(items), size)]


def move(
    strategy: str, target: list[str] | None = None, row_target: list[str] | None = None
) -> tuple[str, Any]:
    entry = {"provider": "Therapist", "strategy_type": strategy, "target": target or []}
    fields: dict[str, Any] = {"support_strategy": [entry]}
    if row_target is not None:
        fields["target"] = row_target
    return "Therapist", fields


def test_instances_match_the_reference_on_the_real_samples(
    real_samples: list[Sample], expected: dict[str, Any]
) -> None:
    for sample in real_samples:
        got = [{"row": i.row_index, "gold_target": i.gold} for i in stp.build(sample, CFG)]
        assert got == expected[sample.sample_id]["stp"]


def test_demo_instances_are_therapist_rows_with_gold_among_candidates(demo_samples: list[Sample]) -> None:
    for sample in demo_samples:
        instances = stp.build(sample, CFG)
        assert instances, sample.sample_id
        for inst in instances:
            assert sample.row(inst.row_index).is_therapist
            assert inst.gold in inst.candidates
            assert inst.candidates == candidate_targets(sample)


def test_target_resolution(make_sample: Callable[..., Sample]) -> None:
    sample = make_sample(
        [
            "Ana",
            move("evoke", ["Ana"]),  # 2: the strategy's target
            move("track", [], row_target=["Ben"]),  # 3: falls back to the row target
            move("reframe", ["Ana", "Ben"]),  # 4: several people -> the group label
            move("made_up_strategy", ["Ben"]),  # 5: any strategy name counts for STP
            move("", ["Ana"]),  # 6: no strategy -> no instance
            move("track", ["Therapist"], row_target=[]),  # 7: no resolvable target
            move("track", ["Zed"]),  # 8: outside the sample's closed target set
            (
                "Ana",
                {"support_strategy": [{"strategy_type": "track", "target": ["Ben"]}]},
            ),  # 9: not the therapist
            ("Therapist", {"target": ["Ana"]}),  # 10: no support strategy at all
        ],
        participants=["Ana", "Ben"],
    )
    got = [(i.row_index, i.gold, i.meta["target_source"]) for i in stp.build(sample, CFG)]
    assert got == [
        (2, "Ana", "support_strategy"),
        (3, "Ben", "row_target_fallback"),
        (4, "Couple", "support_strategy"),
        (5, "Ben", "support_strategy"),
    ]


def test_candidates_have_no_repeats_and_the_group_label_last(make_sample: Callable[..., Sample]) -> None:
    family = make_sample(
        ["Ana", move("join", ["Family"])], scenario="family", participants=["Ana", "Ben", "Cy"]
    )
    assert candidate_targets(family) == ("Ana", "Ben", "Cy", "Family")
    assert stp.build(family, CFG)[0].gold == "Family"


def test_the_therapist_row_is_never_shown(make_sample: Callable[..., Sample]) -> None:
    sample = make_sample(["Ana", "Ben", "Ana", "Ben", move("evoke", ["Ana"]), "Ana"])
    inst = stp.build(sample, CFG)[0]
    assert shown_rows(inst.context) == (2, 3, 4)
    assert "[5]" not in stp.render([inst], CFG).messages[1]["content"]


def test_prompts_list_the_same_candidates_whatever_the_gold(demo_samples: list[Sample]) -> None:
    for sample in demo_samples:
        requests = [stp.render(b, CFG) for b in chunks(stp.build(sample, CFG), 3)]
        enums = {
            tuple(
                r.response_schema["properties"]["predictions"]["items"]["properties"]["target_top3"]["items"][
                    "enum"
                ]
            )
            for r in requests
        }
        assert enums == {candidate_targets(sample)}
        assert len({r.messages[0]["content"] for r in requests}) == 1


def instance(gold: str = "Ana") -> Instance:
    return Instance("s::stp::5", "stp", "s", "couple", 5, gold, ("Ana", "Ben", "Couple"), None, {})


@pytest.mark.parametrize(
    ("value", "ranked", "problem"),
    [
        (["Ben", "ana", "Couple"], ["Ben", "Ana", "Couple"], "normalized: 'ana' -> 'Ana'"),
        (["Ana"], ["Ana"], None),
        (["Zed", "Ana"], None, "invalid_label"),
        (["Ana", "Zed", "Ben"], ["Ana"], "truncated"),
    ],
)
def test_parse(value: object, ranked: list[str] | None, problem: str | None) -> None:
    text = json.dumps({"predictions": [{"id": "c1", "target_top3": value, "reason": "r"}]})
    pred = stp.parse(text, [instance()])[0]
    assert pred.value == ranked
    assert pred.valid is (ranked is not None)
    assert pred.problems[0].startswith(problem) if problem else pred.problems == ()


@pytest.mark.parametrize(
    ("pred", "r1", "r2", "mrr"),
    [
        (Prediction("i", ["Ana", "Ben"], True), 1.0, 1.0, 1.0),
        (Prediction("i", ["Ben", "Ana"], True), 0.0, 1.0, 0.5),
        (Prediction("i", ["Ben", "Couple"], True), 0.0, 0.0, 0.0),
        (Prediction.failed("i", "missing: no answer for c1"), 0.0, 0.0, 0.0),
    ],
)
def test_score(pred: Prediction, r1: float, r2: float, mrr: float) -> None:
    got = stp.score(pred, instance()).metrics
    assert (got["recall_at_1"], got["recall_at_2"], got["mrr"]) == (r1, r2, mrr)
    assert set(got) == {"recall_at_1", "recall_at_2", "recall_at_3", "mrr"}
