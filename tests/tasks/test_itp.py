"""ITP: balanced decision points, a context that ends at the decision row, no label leak, strict yes/no."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from rescue_bench.data.schema import Sample
from rescue_bench.records import Instance, Prediction
from rescue_bench.tasks import itp
from rescue_bench.tasks.base import TaskConfig
from rescue_bench.tasks.context import shown_rows

CFG = TaskConfig()
T = "Therapist"


def test_instances_match_the_reference_on_the_real_samples(
    real_samples: list[Sample], expected: dict[str, Any]
) -> None:
    for sample in real_samples:
        instances = itp.build(sample, CFG)
        want = expected[sample.sample_id]["itp"]
        assert [i.row_index for i in instances if i.gold == "yes"] == want["positive_decision_rows"]
        assert [i.row_index for i in instances if i.gold == "no"] == want["negative_decision_rows"]


def test_labels_follow_the_next_speaker_and_classes_balance_on_demo_data(demo_samples: list[Sample]) -> None:
    assert any(itp.build(s, CFG) for s in demo_samples)
    for sample in demo_samples:
        instances = itp.build(sample, CFG)
        counts = Counter(i.gold for i in instances)
        assert counts["yes"] == counts["no"]
        assert [i.row_index for i in instances] == sorted(i.row_index for i in instances)
        for inst in instances:
            decision, following = sample.row(inst.row_index), sample.row(inst.row_index + 1)
            assert not decision.is_therapist
            assert (inst.gold == "yes") is following.is_therapist


def test_decision_points(make_sample: Callable[..., Sample]) -> None:
    sample = make_sample(["Ana", "Ben", T, T, "Ana", "Ana", T, "Ben"])
    assert itp.decision_points(sample) == ([2, 6], [1, 5])


def test_balancing_keeps_the_middle_item_when_one_is_kept(make_sample: Callable[..., Sample]) -> None:
    # one positive (row 4 before the therapist) and negatives at rows 1, 2, 3: the middle one (2) is kept
    sample = make_sample(["Ana", "Ben", "Ana", "Ben", T])
    assert [(i.row_index, i.gold) for i in itp.build(sample, CFG)] == [(2, "no"), (4, "yes")]


def test_balancing_spreads_the_larger_class_evenly(make_sample: Callable[..., Sample]) -> None:
    # negatives at rows 1..6, positives at rows 7 and 9: keep 2 of 6 -> positions 0 and 5 -> rows 1 and 6
    sample = make_sample(["Ana", "Ben", "Ana", "Ben", "Ana", "Ben", "Ana", T, "Ben", T])
    built = itp.build(sample, CFG)
    assert [(i.row_index, i.gold) for i in built] == [(1, "no"), (6, "no"), (7, "yes"), (9, "yes")]


@pytest.mark.parametrize("specs", [["Ana", "Ben", "Ana"], ["Ana", T, "Ben", T], [T, T, T]])
def test_samples_without_both_classes_give_nothing(
    make_sample: Callable[..., Sample], specs: list[str]
) -> None:
    assert itp.build(make_sample(specs), CFG) == []


@pytest.mark.parametrize(("size", "rows"), [(3, (3, 4, 5)), (1, (5,)), (0, ()), (-1, (1, 2, 3, 4, 5))])
def test_context_ends_at_the_decision_row_and_shows_it_once(
    make_sample: Callable[..., Sample], size: int, rows: tuple[int, ...]
) -> None:
    sample = make_sample(["Ana", "Ben", "Ana", "Ben", "Ana", T, "Ben", "Ana"])
    inst = next(i for i in itp.build(sample, TaskConfig(context_size=size)) if i.row_index == 5)
    assert shown_rows(inst.context) == rows
    text = itp.render([inst], CFG).messages[1]["content"]
    assert text.count("[5] Ana") == (1 if rows else 0)
    assert "[6]" not in text


def test_positive_and_negative_prompts_are_identical_when_the_history_is(
    make_sample: Callable[..., Sample],
) -> None:
    """The samples differ only in who speaks after row 3; nothing in the prompt may tell them apart."""
    history = ["Ana", "Ben", "Ana", "Ben"]
    positive = make_sample([*history[:3], T, *history[3:], T], sample_id="leak/pos")
    negative = make_sample([*history[:3], "Ben", "Ana", T], sample_id="leak/neg")
    yes = next(i for i in itp.build(positive, CFG) if i.row_index == 3)
    no = next(i for i in itp.build(negative, CFG) if i.row_index == 3)
    assert (yes.gold, no.gold) == ("yes", "no")
    rendered_yes, rendered_no = itp.render([yes], CFG), itp.render([no], CFG)
    assert rendered_yes.messages == rendered_no.messages
    assert rendered_yes.response_schema == rendered_no.response_schema
    assert yes.candidates == no.candidates


def test_prompts_carry_no_ids_or_types_that_encode_the_label(demo_samples: list[Sample]) -> None:
    for sample in demo_samples:
        instances = itp.build(sample, CFG)
        for start in range(0, len(instances), 4):
            request = itp.render(instances[start : start + 4], CFG)
            text = "\n".join(str(m["content"]) for m in request.messages) + str(request.response_schema)
            leaks = ("pos_", "neg_", "candidate_type", "boundary", "therapist_entry", "continue_listening")
            for word in (*leaks, sample.sample_id, "::itp::"):
                assert word not in text
            assert request.response_schema["properties"]["predictions"]["items"]["properties"]["id"][
                "enum"
            ] == [f"c{k}" for k in range(1, len(request.instance_ids) + 1)]


@pytest.mark.parametrize(
    ("answer", "value", "problem"),
    [
        ("yes", "yes", None), ("NO", "no", None), (True, "yes", None), ("false", "no", None),
        (" Yes. ", "yes", None), ("not sure", None, "invalid_label"), ("none", None, "invalid_label"),
        ("maybe", None, "invalid_label"),
        (1, None, "invalid_label"), (None, None, "invalid_label"),
    ],
)  # fmt: skip
def test_yes_no_is_read_strictly(answer: object, value: str | None, problem: str | None) -> None:
    pred = itp.parse(itp_answer(answer), [fake_instance()])[0]
    assert pred.value == value
    assert pred.valid is (problem is None)
    if problem:
        assert pred.problems[0].startswith(problem)


def itp_answer(answer: object) -> str:
    return json.dumps({"predictions": [{"id": "c1", "should_speak": answer, "reason": "r"}]})


def fake_instance(gold: str = "yes") -> Instance:
    return Instance("s::itp::3", "itp", "s", "couple", 3, gold, itp.LABELS, None, {})


def test_an_answer_without_the_field_is_a_parse_failure() -> None:
    pred = itp.parse('{"predictions": [{"id": "c1", "reason": "r"}]}', [fake_instance()])[0]
    assert pred.parse_failure and not pred.valid


@pytest.mark.parametrize(
    ("gold", "pred", "metrics"),
    [
        ("yes", Prediction("i", "yes", True), (1.0, 1.0, 1.0)),
        ("yes", Prediction("i", "no", True), (1.0, 0.0, 0.0)),
        ("no", Prediction("i", "no", True), (0.0, 0.0, 1.0)),
        ("no", Prediction("i", "yes", True), (0.0, 1.0, 0.0)),
        # a failed or unreadable answer is always the wrong class: a false negative or a false positive
        ("yes", Prediction.failed("i", "request_failed: timeout"), (1.0, 0.0, 0.0)),
        ("no", Prediction.failed("i", "parse_failure: no JSON"), (0.0, 1.0, 0.0)),
    ],
)
def test_score(gold: str, pred: Prediction, metrics: tuple[float, float, float]) -> None:
    got = itp.score(pred, fake_instance(gold)).metrics
    assert (got["gold_yes"], got["pred_yes"], got["correct"]) == metrics
