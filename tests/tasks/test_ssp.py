"""SSP: taxonomy-checked strategies, the given target, the optional target emotion, hidden therapist rows."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from rescue_bench.data.schema import Sample
from rescue_bench.records import Instance, Prediction
from rescue_bench.tasks import ssp, stp
from rescue_bench.tasks.base import TaskConfig
from rescue_bench.tasks.support import target_emotion
from rescue_bench.taxonomy import strategy_labels

CFG = TaskConfig()


def chunks(items: list[Instance], size: int) -> list[list[Instance]]:
    """Batches of one sample's instances."""
    return [items[i : i + size] for i in range(0, len(items), size)]


def move(strategy: str, target: list[str]) -> Any:
    return "Therapist", {"support_strategy": [{"strategy_type": strategy, "target": target}]}


def feels(speaker: str, *emotions: tuple[str | None, str, int]) -> Any:
    items = [{"person": p, "emotion_description": d, "intensity": i} for p, d, i in emotions]
    return speaker, {"internal_emotion": items}


def test_instances_match_the_reference_on_the_real_samples(
    real_samples: list[Sample], expected: dict[str, Any]
) -> None:
    for sample in real_samples:
        got = [
            {"row": i.row_index, "gold_target": i.context.target, "gold_strategy": i.gold}
            for i in ssp.build(sample, CFG)
        ]
        assert got == expected[sample.sample_id]["ssp"]


def test_demo_gold_is_in_the_scenario_taxonomy(demo_samples: list[Sample]) -> None:
    for sample in demo_samples:
        instances = ssp.build(sample, CFG)
        assert instances, sample.sample_id
        assert all(i.gold in strategy_labels(sample.scenario) == i.candidates for i in instances)


def test_strategies_outside_the_scenario_taxonomy_are_dropped(make_sample: Callable[..., Sample]) -> None:
    couple = make_sample(
        ["Ana", move("evoke", ["Ana"]), move("validation", ["Ben"]), move("boundary", ["Ben"])]
    )
    assert [(i.row_index, i.gold) for i in ssp.build(couple, CFG)] == [(2, "evoke")]
    assert [i.row_index for i in stp.build(couple, CFG)] == [2, 3, 4]  # STP takes any strategy name
    family = make_sample(
        ["Ana", move("evoke", ["Ana"]), move("boundary", ["Ana", "Ben"])],
        scenario="family",
        participants=["Ana", "Ben", "Cy"],
    )
    assert [(i.row_index, i.gold, i.context.target) for i in ssp.build(family, CFG)] == [
        (3, "boundary", "Family")
    ]


def test_the_target_is_given_and_the_strategy_row_is_hidden(make_sample: Callable[..., Sample]) -> None:
    sample = make_sample(["Ana", "Ben", move("evoke", ["Ben"]), "Ben"])
    request = ssp.render(ssp.build(sample, CFG), CFG)
    user = request.messages[1]["content"]
    assert "Target of the next move: Ben" in user
    assert "[3]" not in user and "evoke" not in user


def test_target_emotion_is_the_latest_inside_the_window(make_sample: Callable[..., Sample]) -> None:
    sample = make_sample(
        [
            feels("Ben", ("Ben", "feels old hurt", 3)),  # 1
            feels("Ana", ("Ben", "feels cornered", 6), ("Ana", "feels angry", 7)),  # 2
            feels("Ben", (None, "feels numb", 2)),  # 3: no person given -> the speaker
            "Ana",  # 4
            move("evoke", ["Ben"]),  # 5
        ]
    )
    assert target_emotion(sample, 5, "Ben", 3) == "row 3: Ben: feels numb (intensity 2/10)"
    assert target_emotion(sample, 5, "Ben", 1) == ""
    assert target_emotion(sample, 5, "Ana", -1) == "row 2: Ana: feels angry (intensity 7/10)"
    assert target_emotion(sample, 5, "Ben", 0) == ""
    assert (
        target_emotion(sample, 3, "Couple", 1)
        == "row 2: Ben: feels cornered (intensity 6/10); Ana: feels angry (intensity 7/10)"
    )
    cfg = TaskConfig(options={"ssp": ssp.Options(include_target_emotion=True)})
    request = ssp.render(ssp.build(sample, cfg), cfg)
    assert "Target's latest internal emotion: row 3: Ben: feels numb" in request.messages[1]["content"]
    assert "reliable annotation" in request.messages[0]["content"]
    assert "reliable annotation" not in ssp.render(ssp.build(sample, CFG), CFG).messages[0]["content"]


def test_family_prompts_offer_only_family_strategies(demo_samples: list[Sample]) -> None:
    for sample in demo_samples:
        for batch in chunks(ssp.build(sample, CFG), 3):
            request = ssp.render(batch, CFG)
            props = request.response_schema["properties"]["predictions"]["items"]["properties"]
            assert props["strategy_top3"]["items"]["enum"] == list(strategy_labels(sample.scenario))
            assert ("evoke (Evoke)" in request.messages[0]["content"]) is (sample.scenario == "couple")


def instance(gold: str = "evoke") -> Instance:
    return Instance("s::ssp::5", "ssp", "s", "couple", 5, gold, strategy_labels("couple"), None, {})


def test_parse_normalises_aliases_and_scores_rank() -> None:
    text = json.dumps({"predictions": [{"id": "c1", "strategy_top3": ["Tracking", "evoke"], "reason": "r"}]})
    pred = ssp.parse(text, [instance()])[0]
    assert pred.value == ["track", "evoke"] and pred.problems == ("normalized: 'Tracking' -> 'track'",)
    metrics = ssp.score(pred, instance()).metrics
    assert (metrics["recall_at_1"], metrics["recall_at_2"], metrics["mrr"]) == (0.0, 1.0, 0.5)


@pytest.mark.parametrize("reason", ["request_failed: 401", "parse_failure: no JSON found", "missing: c1"])
def test_failures_score_zero(reason: str) -> None:
    metrics = ssp.score(Prediction.failed("s::ssp::5", reason), instance()).metrics
    assert set(metrics.values()) == {0.0}
