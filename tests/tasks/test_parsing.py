"""Reading replies: JSON wherever it is, ids in any form, labels normalised with notes, never an exception."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rescue_bench.records import Instance, Prediction
from rescue_bench.tasks.parsing import normalize_id, parse_batch, read_label, read_ranking

LABELS = ("pursue_withdraw", "attack_attack", "repair_softening", "mixed_transition")


def batch(n: int, task: str = "rpp") -> list[Instance]:
    return [
        Instance(f"s::{task}::{i}", task, "s", "couple", i, LABELS[0], LABELS, None, {})
        for i in range(1, n + 1)
    ]


def read_value(item: dict[str, Any], inst: Instance) -> Prediction:
    return Prediction(inst.id, item.get("x"), "x" in item)


def values(text: str, n: int) -> list[Any]:
    return [p.value for p in parse_batch(text, batch(n), ("x",), read_value)]


@pytest.mark.parametrize(
    "text",
    [
        '{"predictions": [{"id": "c1", "x": 1}, {"id": "c2", "x": 2}]}',
        '```json\n{"predictions": [{"id": "c1", "x": 1}, {"id": "c2", "x": 2}]}\n```',
        'Here you go:\n{"predictions": [{"id": "c1", "x": 1}, {"id": "c2", "x": 2}]}\nHope that helps.',
        '[{"id": "c1", "x": 1}, {"id": "c2", "x": 2}]',
        '{"predictions": [{"id": 1, "x": 1}, {"id": "2", "x": 2}]}',
        '{"predictions": [{"id": "C2", "x": 2}, {"id": "item 1", "x": 1}]}',
        '{"predictions": [{"candidate_id": "c1", "x": 1}, {"turn_id": "c2", "x": 2}]}',
        '<think>maybe {"id": "c1", "x": 9} or [1, 2]?</think>'
        '{"predictions": [{"id": "c1", "x": 1}, {"id": "c2", "x": 2}]}',
        'Draft: {"id": "c1", "x": 9}. Final: {"predictions": [{"id": "c1", "x": 1}, {"id": "c2", "x": 2}]}',
        '{"c1": {"x": 1}, "c2": {"x": 2}}',
        '{"c1": 1, "c2": 2}',
        json.dumps(json.dumps({"predictions": [{"id": "c1", "x": 1}, {"id": "c2", "x": 2}]})),
    ],
)
def test_answers_are_found_wherever_they_are(text: str) -> None:
    assert values(text, 2) == [1, 2]


def test_a_valid_answer_keeps_its_reason_for_the_judge() -> None:
    text = '{"predictions": [{"id": "c1", "x": 1, "reason": " rising   tone "}, {"id": "c2", "reason": "r"}]}'
    first, second = parse_batch(text, batch(2), ("x",), read_value)
    assert first.reason == "rising tone"
    assert not second.valid and second.reason is None  # an invalid answer is never judged


def test_a_one_item_batch_needs_no_id() -> None:
    assert values('{"x": 5}', 1) == [5]
    assert values('{"predictions": [{"x": 5}]}', 1) == [5]


def test_ids_are_required_when_the_batch_has_several_items() -> None:
    preds = parse_batch('{"predictions": [{"x": 1}, {"x": 2}]}', batch(2), ("x",), read_value)
    assert [p.problems for p in preds] == [("missing: no answer for c1",), ("missing: no answer for c2",)]


def test_a_lone_answer_with_the_wrong_id_is_not_taken_for_another_item() -> None:
    pred = parse_batch('{"predictions": [{"id": "c3", "x": 1}]}', batch(1), ("x",), read_value)[0]
    assert not pred.valid and pred.problems == ("missing: no answer for c1",)


def test_missing_items_and_duplicates_are_recorded() -> None:
    text = '{"predictions": [{"id": "c1", "x": 1}, {"id": "c1", "x": 7}, {"id": "c9", "x": 9}]}'
    first, second = parse_batch(text, batch(2), ("x",), read_value)
    assert first.value == 1 and first.problems == ("duplicate answers for c1; the first was used",)
    assert second.value is None and second.parse_failure and second.problems == ("missing: no answer for c2",)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "parse_failure: empty reply"),
        ("   \n", "parse_failure: empty reply"),
        ("I cannot help with that.", "parse_failure: no JSON found in the reply"),
        ('{"predictions": [', "parse_failure: no JSON found in the reply"),
        ("[1, 2, 3]", "parse_failure: no answer entries in the JSON"),
        ('{"verdict": "fine"}', "parse_failure: no answer entries in the JSON"),
    ],
)
def test_unusable_replies_fail_every_item_with_the_reason(text: str, problem: str) -> None:
    preds = parse_batch(text, batch(2), ("x",), read_value)
    assert [p.problems for p in preds] == [(problem,), (problem,)]
    assert all(p.parse_failure and not p.valid for p in preds)


def test_a_reader_crash_is_recorded_not_raised() -> None:
    def broken(item: dict[str, Any], inst: Instance) -> Prediction:
        raise KeyError("boom")

    pred = parse_batch('{"x": 1}', batch(1), ("x",), broken)[0]
    assert pred.problems == ("parse_failure: unreadable answer (KeyError)",)


@pytest.mark.parametrize(
    ("raw", "count", "expected"),
    [
        ("c1", 2, "c1"),
        ("C2", 2, "c2"),
        (" c2 ", 2, "c2"),
        ("2", 2, "c2"),
        (2, 2, "c2"),
        (2.0, 2, "c2"),
        ("#1", 2, "c1"),
        ("item_2", 2, "c2"),
        ("c3", 2, None),
        (0, 2, None),
        ("c1x", 2, None),
        (None, 2, None),
        (True, 2, None),
        ([1], 2, None),
    ],
)
def test_id_forms(raw: object, count: int, expected: str | None) -> None:
    assert normalize_id(raw, count) == expected


def test_labels_are_normalised_with_an_audit_note() -> None:
    assert read_label("attack_attack", LABELS) == ("attack_attack", [])
    assert read_label("Pursue-Withdraw", LABELS) == (
        "pursue_withdraw",
        ["normalized: 'Pursue-Withdraw' -> 'pursue_withdraw'"],
    )
    assert read_label("softening", LABELS)[0] == "repair_softening"
    assert read_label("track", LABELS) == (None, ["invalid_label: 'track' is not one of the allowed labels"])
    assert read_label(3, LABELS)[0] is None


def rank(raw: object) -> Prediction:
    return read_ranking(raw, LABELS, batch(1)[0])


def test_ranking_keeps_order_and_never_pads() -> None:
    pred = rank(["attack_attack"])
    assert pred.valid and pred.value == ["attack_attack"] and pred.problems == ()


def test_ranking_stops_at_an_out_of_set_label_instead_of_promoting_later_ones() -> None:
    pred = rank(["attack_attack", "track", "pursue_withdraw"])
    assert pred.valid and pred.value == ["attack_attack"]
    assert pred.problems == ("truncated: entry 2 'track' is not an allowed label",)


def test_ranking_with_an_out_of_set_first_label_is_an_invalid_label() -> None:
    pred = rank(["track", "attack_attack"])
    assert not pred.valid and pred.value is None and pred.invalid_label


def test_ranking_drops_duplicates_and_extra_labels_with_notes() -> None:
    pred = rank(["Attack-Attack", "attack_attack", "mixed_transition", "repair_softening", "pursue_withdraw"])
    assert pred.value == ["attack_attack", "mixed_transition", "repair_softening"]
    assert pred.problems == (
        "normalized: 'Attack-Attack' -> 'attack_attack'",
        "duplicate: 'attack_attack' at rank 2 dropped",
        "truncated: 5 labels given, the first 3 were used",
    )


@pytest.mark.parametrize("raw", [[], "", None, 7, {"a": 1}])
def test_empty_or_shapeless_rankings_are_parse_failures(raw: object) -> None:
    pred = rank(raw)
    assert not pred.valid and pred.parse_failure


def test_a_comma_separated_string_is_read_as_a_ranking() -> None:
    assert rank("attack_attack, pursue_withdraw").value == ["attack_attack", "pursue_withdraw"]
    assert rank([{"label": "attack_attack"}]).value == ["attack_attack"]
