"""RPP: gold field rule, all speakers, per-sample taxonomy, context, ranked answers that are never padded."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from rescue_bench.data.schema import Sample
from rescue_bench.records import Instance, Prediction
from rescue_bench.tasks import rpp
from rescue_bench.tasks.base import TaskConfig
from rescue_bench.tasks.context import shown_rows
from rescue_bench.taxonomy import relation_labels

CFG = TaskConfig()


def chunks(items: list[Instance], size: int) -> list[list[Instance]]:
    """Batches of one sample's instances."""
    return [items[i : i + size] for i in range(0, len(items), size)]


def cyc(speaker: str, label: str) -> tuple[str, dict[str, Any]]:
    return speaker, {"relation_cycle_state": label}


def pat(speaker: str, label: str) -> tuple[str, dict[str, Any]]:
    return speaker, {"relation_pattern": label}


def test_instances_match_the_reference_on_the_real_samples(
    real_samples: list[Sample], expected: dict[str, Any]
) -> None:
    for sample in real_samples:
        instances = rpp.build(sample, CFG)
        assert [i.row_index for i in instances] == expected[sample.sample_id]["rpp_rows"]
        assert all(i.meta["gold_field"] == "relation_cycle_state" for i in instances)
        assert all(i.gold == sample.row(i.row_index).relation_cycle_state for i in instances)


def test_every_demo_sample_gets_instances_from_one_field_or_the_other(demo_samples: list[Sample]) -> None:
    fields = set()
    for sample in demo_samples:
        instances = rpp.build(sample, CFG)
        assert instances, sample.sample_id
        fields |= {i.meta["gold_field"] for i in instances}
        assert all(i.gold in relation_labels(sample.scenario) for i in instances)
    assert fields == {"relation_cycle_state", "relation_pattern"}


def test_auto_uses_relation_pattern_only_for_samples_without_cycle_labels(
    make_sample: Callable[..., Sample],
) -> None:
    with_cycle = make_sample([cyc("Ana", "attack_attack"), pat("Ben", "pursue_withdraw"), "Therapist"])
    without = make_sample([pat("Ana", "attack_attack"), ("Ben", {"relation_cycle_state": " "}), "Therapist"])
    assert [(i.row_index, i.gold) for i in rpp.build(with_cycle, CFG)] == [(1, "attack_attack")]
    assert [(i.row_index, i.gold) for i in rpp.build(without, CFG)] == [(1, "attack_attack")]
    forced = rpp.build(with_cycle, TaskConfig(options={"rpp": rpp.Options(gold_field="relation_pattern")}))
    assert [(i.row_index, i.gold) for i in forced] == [(2, "pursue_withdraw")]
    assert (
        rpp.build(without, TaskConfig(options={"rpp": rpp.Options(gold_field="relation_cycle_state")})) == []
    )


def test_all_speakers_count_and_empty_or_foreign_labels_are_dropped(
    make_sample: Callable[..., Sample],
) -> None:
    sample = make_sample(
        [cyc("Ana", "attack_attack"), cyc("Therapist", "pursue_withdraw"), cyc("Ben", ""),
         cyc("Ana", "escalation_conflict"), cyc("Ben", "Attack-Attack"), cyc("Ana", " withdraw_withdraw ")]
    )  # fmt: skip
    assert [(i.row_index, i.gold) for i in rpp.build(sample, CFG)] == [
        (1, "attack_attack"), (2, "pursue_withdraw"), (6, "withdraw_withdraw"),
    ]  # fmt: skip


def test_the_taxonomy_is_chosen_per_sample(make_sample: Callable[..., Sample]) -> None:
    couple = make_sample([cyc("Ana", "attack_attack"), cyc("Ben", "escalation_conflict")], sample_id="c/1")
    family = make_sample(
        [cyc("Ana", "attack_attack"), cyc("Ben", "escalation_conflict")],
        scenario="family", participants=["Ana", "Ben", "Cy"], sample_id="f/1",
    )  # fmt: skip
    instances = rpp.build(couple, CFG) + rpp.build(family, CFG)
    assert [(i.sample_id, i.gold) for i in instances] == [
        ("c/1", "attack_attack"),
        ("f/1", "escalation_conflict"),
    ]
    requests = [rpp.render([inst], CFG) for inst in instances]
    enums = [
        r.response_schema["properties"]["predictions"]["items"]["properties"]["relation_top3"]
        for r in requests
    ]
    assert [e["items"]["enum"] for e in enums] == [
        list(relation_labels("couple")),
        list(relation_labels("family")),
    ]
    assert "cooperative_family_alliance" in requests[1].messages[0]["content"]
    assert "cooperative_family_alliance" not in requests[0].messages[0]["content"]


def test_default_context_is_every_earlier_row_and_the_target_row_is_hidden(
    make_sample: Callable[..., Sample],
) -> None:
    sample = make_sample(["Ana", "Ben", "Therapist", cyc("Ana", "attack_attack"), "Ben"])
    inst = rpp.build(sample, CFG)[0]
    assert shown_rows(inst.context) == (1, 2, 3)
    request = rpp.render([inst], CFG)
    assert "[4]" not in request.messages[1]["content"]
    assert "spoken by Ana" in request.messages[1]["content"]
    assert "You do not see the target row" in request.messages[0]["content"]


def test_the_current_turn_can_be_shown_once(make_sample: Callable[..., Sample]) -> None:
    sample = make_sample(["Ana", "Ben", "Therapist", cyc("Ana", "attack_attack"), "Ben"])
    cfg = TaskConfig(options={"rpp": rpp.Options(include_current_turn=True)}, context_size=2)
    inst = rpp.build(sample, cfg)[0]
    assert shown_rows(inst.context) == (2, 3, 4)
    request = rpp.render([inst], cfg)
    assert request.messages[1]["content"].count("[4] Ana") == 1
    assert "You see the target row itself" in request.messages[0]["content"]


def test_user_messages_never_carry_relation_labels(demo_samples: list[Sample]) -> None:
    cfg = TaskConfig(options={"rpp": rpp.Options(include_current_turn=True)}, mode="audiovisual")
    for sample in demo_samples:
        for batch in chunks(rpp.build(sample, cfg), 3):
            user = rpp.render(batch, cfg).messages[1]["content"]
            assert not any(label in user for label in relation_labels(sample.scenario))


def instance(gold: str = "attack_attack") -> Instance:
    return Instance("s::rpp::4", "rpp", "s", "couple", 4, gold, relation_labels("couple"), None, {})


def answer(value: object) -> str:
    return json.dumps({"predictions": [{"id": "c1", "relation_top3": value, "reason": "r"}]})


def test_parse_reads_a_ranking_with_notes() -> None:
    pred = rpp.parse(answer(["Attack-Attack", "pursue_withdraw", "mixed_transition"]), [instance()])[0]
    assert pred.valid and pred.value == ["attack_attack", "pursue_withdraw", "mixed_transition"]
    assert pred.problems == ("normalized: 'Attack-Attack' -> 'attack_attack'",)


@pytest.mark.parametrize(
    ("pred", "metrics"),
    [
        (Prediction("i", ["attack_attack", "pursue_withdraw"], True), (1.0, 1.0, 1.0, 1.0)),
        (
            Prediction("i", ["pursue_withdraw", "mixed_transition", "attack_attack"], True),
            (0.0, 0.0, 1.0, 1 / 3),
        ),
        (Prediction("i", ["pursue_withdraw"], True), (0.0, 0.0, 0.0, 0.0)),
        # a failed request never scores as gold (the reference's fallback put gold first)
        (Prediction.failed("i", "request_failed: HTTP 500"), (0.0, 0.0, 0.0, 0.0)),
        (
            Prediction.failed("i", "invalid_label: 'track' is not one of the allowed labels"),
            (0.0, 0.0, 0.0, 0.0),
        ),
    ],
)
def test_score(pred: Prediction, metrics: tuple[float, float, float, float]) -> None:
    got = rpp.score(pred, instance()).metrics
    assert (got["correct"], got["recall_at_1"], got["recall_at_3"], got["mrr"]) == pytest.approx(metrics)
    assert set(got) == {"correct", "recall_at_1", "recall_at_2", "recall_at_3", "mrr"}


def test_an_empty_or_junk_answer_is_never_padded_into_labels() -> None:
    for text in (answer([]), answer(["validation", "attack_attack"]), "no idea", ""):
        pred = rpp.parse(text, [instance()])[0]
        assert not pred.valid and pred.value is None
        assert rpp.score(pred, instance()).metrics["recall_at_3"] == 0.0


def test_consecutive_targets_share_the_prompt_up_to_the_earlier_targets_line(
    demo_samples: list[Sample],
) -> None:
    """What a prompt cache (or the local model's KV cache) re-uses: all but the earlier prompt's last line."""
    first, second = rpp.build(demo_samples[0], CFG)[5:7]
    earlier, later = (rpp.render([inst], CFG).messages[1]["content"] for inst in (first, second))
    split = next(i for i, (a, b) in enumerate(zip(earlier, later, strict=False)) if a != b)
    assert f"[{first.row_index - 1}]" in earlier[:split]
    assert "\n" not in earlier[split:]
    assert earlier[split:].startswith(f"Item c1's target row: {first.row_index}, spoken by ")
