"""One rater's annotation as agreement reads it (``RatedRow``): typed once, partial annotations tolerated."""

from __future__ import annotations

from typing import Any

from rescue_bench.review.agreement import DIMENSIONS, RatedRow

PEOPLE = ["Ana", "Ben", "Therapist", "Couple"]


def values(data: dict[str, Any]) -> dict[str, Any]:
    rated = RatedRow.model_validate(data)
    return {d.name: d.values(rated, PEOPLE) for d in DIMENSIONS}


def test_entries_are_typed_and_the_first_usable_one_per_person_counts() -> None:
    got = values(
        {
            "row_index": 3,
            "utterance_type": "  question ",
            "relation_cycle_state": "attack_withdraw",
            "target": ["Ben"],
            "internal_emotion": [
                {"person": "Ana", "emotion_description": "hurt", "intensity": "high"},
                {"person": "Ana", "emotion_description": "hurt", "intensity": 6.0},
                {"person": "Ana", "emotion_description": "angry", "intensity": 9},
            ],
            "support_strategy": [
                {"provider": "Therapist", "target": "Ana", "strategy_type": ""},
                {"provider": "Therapist", "target": ["Ana"], "strategy_type": "validate"},
            ],
            "viewpoints_attitudes": [{"source": "Ana", "target": "Ben", "viewpoint": "never listens"}],
        }
    )
    assert got["intensity"] == {("Ana",): 6}  # "high" is no intensity: the next entry of Ana counts
    assert got["utterance_type"] == {(): "question"}
    assert got["relation_pattern"] == {(): "attack_withdraw"}
    assert got["strategy"] == {("Therapist",): "validate"}
    assert got["emotion"] == {("Ana",): 1, ("Ben",): 0, ("Therapist",): 0, ("Couple",): 0}
    assert got["target"] == {("Ana",): 0, ("Ben",): 1, ("Therapist",): 0, ("Couple",): 0}
    assert got["viewpoint"][("Ana", "Ben")] == 1 and sum(got["viewpoint"].values()) == 1


def test_a_partial_annotation_counts_what_is_there() -> None:
    """Fields that are not lists, entries the release schema refuses, targets that are not text and blank
    labels are left out; the rest of the review still counts."""
    got = values(
        {
            "utterance_type": "   ",
            "target": "Ben",
            "internal_emotion": [
                "hurt",
                {"person": ["Ana"], "intensity": 5},
                {"person": "Ben", "emotion_description": {"x": 1}, "intensity": 4},
                {"person": "Ana", "intensity": 7},
            ],
            "support_strategy": {"provider": "Therapist", "strategy_type": "validate"},
            "viewpoints_attitudes": [None, {"source": "Ben", "target": "Ana"}],
        }
    )
    assert got["intensity"] == {("Ana",): 7}
    assert got["emotion"][("Ana",)] == 1 and got["emotion"][("Ben",)] == 0
    assert got["utterance_type"] == {} and got["relation_pattern"] == {}
    assert got["strategy"] == {}
    assert set(got["target"].values()) == {0}  # a single string is not the list the review form stores
    assert got["viewpoint"][("Ben", "Ana")] == 1


def test_the_relation_label_comes_from_the_field_the_row_keeps_it_in() -> None:
    only_pattern = RatedRow.model_validate({"relation_pattern": "pursue_withdraw"})
    both = RatedRow.model_validate({"relation_pattern": "pursue_withdraw", "relation_cycle_state": None})
    assert only_pattern.relation == "pursue_withdraw"
    assert both.relation is None  # relation_cycle_state is present: it is the row's field, and empty
