"""ER: eligibility, early cut-off, even selection, the current row shown once, intensity scoring."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from rescue_bench.data.schema import Row, Sample
from rescue_bench.records import Instance, Prediction, Shown
from rescue_bench.tasks import er
from rescue_bench.tasks.base import TaskConfig
from rescue_bench.tasks.context import early_cutoff, shown_rows, word_count

CFG = TaskConfig()
WORDS = "this is a long enough turn"


def client(speaker: str, *emotions: tuple[str, str, object], text: str = WORDS) -> Any:
    items = [{"person": p, "emotion_description": d, "intensity": i} for p, d, i in emotions]
    return speaker, {"internal_emotion": items, "dialogue_cleaned": text}


def test_instances_match_the_reference_on_the_real_samples(
    real_samples: list[Sample], expected: dict[str, Any]
) -> None:
    for sample in real_samples:
        assert [i.row_index for i in er.build(sample, CFG)] == expected[sample.sample_id]["er_rows"]


def test_demo_checkpoints_follow_every_rule(demo_samples: list[Sample]) -> None:
    for sample in demo_samples:
        instances = er.build(sample, CFG)
        assert 0 < len(instances) <= 5, sample.sample_id
        for inst in instances:
            row = sample.row(inst.row_index)
            assert row.is_client and word_count(row.dialogue_cleaned) >= 5
            assert inst.row_index >= early_cutoff(len(sample.rows))
            assert inst.gold == er.gold_emotion(row) and 0 <= inst.gold["intensity"] <= 10


def test_gold_is_the_speakers_first_emotion_with_a_valid_intensity() -> None:
    row = Row(row_index=1, primary_speaker="Ana", internal_emotion=[
        {"person": "Ben", "emotion_description": "feels hurt", "intensity": 5},
        {"person": "Ana", "emotion_description": "feels lost", "intensity": "very"},
        {"person": "Ana", "emotion_description": "", "intensity": 4},
        {"person": "Ana", "emotion_description": "feels tense", "intensity": 6.4},
        {"person": "Ana", "emotion_description": "feels calm", "intensity": 2},
    ])  # fmt: skip
    assert er.gold_emotion(row) == {"emotion": "feels tense", "intensity": 6}


def test_eligibility_and_early_cutoff(make_sample: Callable[..., Sample]) -> None:
    ok = ("Ana", "feels hurt", 5)
    rows = [client("Ana", ok)] * 3  # rows 1-3 fall in the first 30% of 10 rows
    rows += [
        client("Ana", ok),  # 4: kept
        client("Ana", ok, text="too short here"),  # 5: fewer than 5 words
        client("Therapist", ("Therapist", "feels curious", 3)),  # 6: not a client
        client("Ana", ("Ben", "feels hurt", 5)),  # 7: not the speaker's emotion
        client("Ben", ("Ben", "feels hurt", 11)),  # 8: intensity out of range
        client("Couple", ("Couple", "feels stuck", 4)),  # 9: a group speaker
        client("Ben", ("Ben", "feels tired", 0)),  # 10: kept (intensity 0 is valid)
    ]
    sample = make_sample(rows)
    assert [(i.row_index, i.gold["intensity"]) for i in er.build(sample, CFG)] == [(4, 5), (10, 0)]
    assert [
        i.row_index for i in er.build(sample, TaskConfig(options={"er": er.Options(min_dialogue_words=3)}))
    ] == [4, 5, 10]


def test_at_most_five_evenly_spaced_and_the_first_when_one(make_sample: Callable[..., Sample]) -> None:
    sample = make_sample(["Therapist"] * 3 + [client("Ana", ("Ana", "feels hurt", 5))] * 7)
    assert [i.row_index for i in er.build(sample, CFG)] == [4, 6, 7, 8, 10]
    assert [
        i.row_index
        for i in er.build(sample, TaskConfig(options={"er": er.Options(checkpoints_per_sample=1)}))
    ] == [4]


@pytest.mark.parametrize(("size", "rows"), [(3, (3, 4, 5, 6)), (0, (6,)), (-1, (1, 2, 3, 4, 5, 6))])
def test_the_current_row_is_shown_once_after_its_context(
    make_sample: Callable[..., Sample], size: int, rows: tuple[int, ...]
) -> None:
    sample = make_sample(
        ["Ana", "Ben", "Therapist", "Ana", "Ben", client("Ana", ("Ana", "feels hurt", 5)), "Ben"]
    )
    inst = er.build(sample, TaskConfig(context_size=size))[0]
    assert shown_rows(inst.context) == rows
    user = er.render([inst], CFG).messages[1]["content"]
    assert user.count("[6] Ana") == 1 and "Current row: [6] Ana" in user and "[7]" not in user
    assert "feels hurt" not in user


def test_the_judge_gets_the_turns_time_and_words_in_meta(make_sample: Callable[..., Sample]) -> None:
    """The reference judge_prompt shows the checkpoint's timestamp and dialogue: the record keeps them."""
    sample = make_sample(["Ana", "Ben", "Therapist", "Ana", "Ben", client("Ana", ("Ana", "feels hurt", 5))])
    inst = er.build(sample, CFG)[0]
    assert inst.row_index == 6 and inst.meta["utterance"] == WORDS and inst.meta["speaker"] == "Ana"
    assert inst.meta["timestamp"] == "25-29s"  # rows of the fixture start every 5 s and last 4 s


def instance(intensity: int = 6) -> Instance:
    gold = {"emotion": "feels hurt", "intensity": intensity}
    return Instance("s::er::6", "er", "s", "couple", 6, gold, (), Shown("dialogue", 0, speaker="Ana"), {})


def parse_one(entry: dict[str, Any]) -> Prediction:
    return er.parse(json.dumps({"predictions": [{"id": "c1", **entry}]}), [instance()])[0]


def test_parse_reads_emotion_and_intensity() -> None:
    pred = parse_one({"emotion": " feels   unheard ", "intensity": "7", "reason": "r"})
    assert pred.valid and pred.value == {"emotion": "feels unheard", "intensity": 7} and pred.problems == ()
    pred = parse_one({"predicted_internal_emotion": "feels hurt", "predicted_intensity_score": 6})
    assert pred.value == {"emotion": "feels hurt", "intensity": 6}


@pytest.mark.parametrize("intensity", ["high", 11, -1, 6.5, None, [6]])
def test_a_bad_intensity_keeps_the_emotion_and_is_counted(intensity: object) -> None:
    pred = parse_one({"emotion": "feels hurt", "intensity": intensity})
    assert pred.valid and pred.value == {"emotion": "feels hurt", "intensity": None}
    assert pred.invalid_label and pred.problems[0].startswith("invalid_label: intensity")
    assert er.score(pred, instance()).metrics == {"s_int": 1.0}


@pytest.mark.parametrize("entry", [{"intensity": 5}, {"emotion": "", "intensity": 5}, {"emotion": 3}])
def test_no_emotion_is_a_parse_failure(entry: dict[str, Any]) -> None:
    pred = parse_one(entry)
    assert not pred.valid and pred.parse_failure


@pytest.mark.parametrize(("predicted", "s_int"), [(6, 5.0), (4, 3.0), (9, 2.0), (10, 1.0), (0, 1.0)])
def test_intensity_score(predicted: int, s_int: float) -> None:
    pred = Prediction("s::er::6", {"emotion": "x", "intensity": predicted}, True)
    assert er.score(pred, instance(6)).metrics == {"s_int": s_int}


def test_a_failed_prediction_gets_the_floor() -> None:
    assert er.score(Prediction.failed("s::er::6", "request_failed: x"), instance()).metrics == {"s_int": 1.0}
