"""Binary and multiclass metrics against hand-computed values and scikit-learn as an independent oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score, precision_recall_fscore_support

from rescue_bench.metrics.classification import (
    INVALID,
    accuracy_by_position,
    binary_from_confusion,
    binary_metrics,
    confusion_counts,
    multiclass_metrics,
    safe_div,
)

YES_NO = st.sampled_from(["yes", "no"])
PRED = st.sampled_from(["yes", "no", None])


def test_binary_hand_computed_with_invalid_predictions() -> None:
    golds = ["yes", "yes", "yes", "yes", "no", "no", "no"]
    preds = ["yes", "yes", "no", None, "yes", "no", None]
    m = binary_metrics(golds, preds)
    assert (m["tp"], m["fp"], m["tn"], m["fn"], m["invalid"], m["n"]) == (2, 1, 1, 1, 2, 7)
    # an invalid answer is the wrong class: the invalid "no" item is a false positive, so precision 2/4;
    # the invalid "yes" item a false negative: recall 2/4; F1 = 2*2/(4+4)
    assert m["precision"] == pytest.approx(2 / 4)
    assert m["recall"] == pytest.approx(0.5)
    assert m["f1"] == pytest.approx(0.5)
    assert m["precision_no"] == pytest.approx(1 / 3)
    assert m["recall_no"] == pytest.approx(1 / 3)
    assert m["f1_no"] == pytest.approx(1 / 3)
    assert m["accuracy"] == pytest.approx(3 / 7)
    assert m["balanced_accuracy"] == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert m["confusion"] == {
        "rows": ["yes", "no"],
        "columns": ["yes", "no", INVALID],
        "counts": [[2, 1, 1], [1, 1, 1]],
    }


def test_binary_zero_denominators_and_empty() -> None:
    never_yes = binary_metrics(["yes", "no"], ["no", "no"])
    assert never_yes["precision"] == 0.0 and never_yes["f1"] == 0.0 and never_yes["recall"] == 0.0
    assert never_yes["precision_no"] == 0.5 and never_yes["recall_no"] == 1.0
    only_no_gold = binary_metrics(["no", "no"], ["no", "no"])
    assert (
        only_no_gold["recall"] == 0.0 and only_no_gold["balanced_accuracy"] == 0.5
    )  # reference: absent class = 0
    empty = binary_metrics([], [])
    assert empty["n"] == 0 and all(empty[k] == 0.0 for k in ("precision", "recall", "f1", "accuracy"))
    assert empty["confusion"]["counts"] == [[0, 0, 0], [0, 0, 0]]


def test_binary_rejects_unknown_gold_and_length_mismatch() -> None:
    with pytest.raises(ValueError, match="maybe"):
        binary_metrics(["maybe"], ["yes"])
    with pytest.raises(ValueError, match="1 gold labels but 2"):
        binary_metrics(["yes"], ["yes", "no"])


def test_binary_from_confusion_works_on_stacks() -> None:
    tables = np.array([[[3, 1, 1], [2, 4, 0]], [[0, 0, 0], [0, 0, 0]], [[1, 0, 0], [0, 1, 0]]])
    stacked = binary_from_confusion(tables)
    for i, table in enumerate(tables):
        single = binary_from_confusion(table)
        for name, value in single.items():
            assert stacked[name][i] == pytest.approx(float(value))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(YES_NO, PRED), max_size=40))
def test_binary_matches_sklearn_and_stays_in_unit_interval(pairs: list[tuple[str, str | None]]) -> None:
    golds = [g for g, _ in pairs]
    preds = [p for _, p in pairs]
    m = binary_metrics(golds, preds)
    for name in (
        "precision",
        "recall",
        "f1",
        "precision_no",
        "recall_no",
        "f1_no",
        "accuracy",
        "balanced_accuracy",
    ):
        assert 0.0 <= m[name] <= 1.0
    if not pairs:
        return
    # an invalid answer is the wrong class (module docstring): sklearn sees the other label
    sk_preds = [
        ("no" if g == "yes" else "yes") if p is None else p for g, p in zip(golds, preds, strict=True)
    ]
    p, r, f, _ = precision_recall_fscore_support(golds, sk_preds, labels=["yes", "no"], zero_division=0.0)
    assert [m["precision"], m["precision_no"]] == pytest.approx(p.tolist())
    assert [m["recall"], m["recall_no"]] == pytest.approx(r.tolist())
    assert [m["f1"], m["f1_no"]] == pytest.approx(f.tolist())
    assert m["accuracy"] == pytest.approx(np.mean([g == q for g, q in zip(golds, sk_preds, strict=True)]))


def test_multiclass_hand_computed_including_zero_support_label() -> None:
    labels = ["a", "b", "c", "d"]
    golds = ["a", "a", "a", "b", "b", "c"]
    preds = ["a", "a", "b", "b", None, "a"]
    m = multiclass_metrics(golds, preds, labels)
    # a: tp 2, predicted 3, support 3 -> P 2/3, R 2/3, F1 2/3; b: tp 1, pred 2, sup 2 -> 1/2 each
    # c: tp 0 -> 0; d: no support, never predicted -> 0 (still in the macro mean, as the reference)
    assert m["accuracy"] == pytest.approx(3 / 6)
    assert m["macro_precision"] == pytest.approx((2 / 3 + 1 / 2) / 4)
    assert m["macro_recall"] == pytest.approx((2 / 3 + 1 / 2) / 4)
    assert m["macro_f1"] == pytest.approx((2 / 3 + 1 / 2) / 4)
    assert m["per_label"]["d"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert m["per_label"]["a"]["support"] == 3
    assert m["invalid"] == 1
    assert m["confusion"]["columns"] == ["a", "b", "c", "d", INVALID]
    assert m["confusion"]["counts"][1] == [0, 1, 0, 0, 1]


def test_multiclass_gold_outside_the_label_set_gets_its_own_row_and_is_always_wrong() -> None:
    m = multiclass_metrics(["a", "zzz"], ["a", "zzz"], ["a", "b"])
    assert m["confusion"]["rows"] == ["a", "b", "zzz"]
    assert m["confusion"]["counts"][2] == [0, 0, 1]  # "zzz" is not a valid answer -> <invalid>
    assert m["accuracy"] == 0.5
    assert m["macro_f1"] == pytest.approx(0.5)  # over a and b only


def test_multiclass_empty_and_no_labels() -> None:
    empty = multiclass_metrics([], [], ["a", "b"])
    assert empty["accuracy"] == 0.0 and empty["macro_f1"] == 0.0 and empty["per_label"]["a"]["support"] == 0
    none = multiclass_metrics([], [], [])
    assert none["macro_f1"] == 0.0 and none["confusion"]["columns"] == [INVALID]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from(["a", "b", "c", "d", None])), max_size=40))
def test_multiclass_macro_f1_matches_sklearn(pairs: list[tuple[str, str | None]]) -> None:
    labels = ["a", "b", "c", "d"]
    golds = [g for g, _ in pairs]
    preds = [p for _, p in pairs]
    m = multiclass_metrics(golds, preds, labels)
    assert 0.0 <= m["macro_f1"] <= 1.0 and 0.0 <= m["accuracy"] <= 1.0
    if pairs:
        sk_preds = [INVALID if p is None else p for p in preds]
        expected = f1_score(golds, sk_preds, labels=labels, average="macro", zero_division=0.0)
        assert m["macro_f1"] == pytest.approx(expected)


def test_confusion_counts_treats_unknown_predictions_as_invalid() -> None:
    table = confusion_counts(["a", "b"], ["nope", "b"], ["a", "b"], ["a", "b"])
    assert table.tolist() == [[0, 0, 1], [0, 1, 0]]


def test_safe_div_broadcasts() -> None:
    assert safe_div(np.array([[2.0, 0.0]]), np.array([4.0, 0.0])).tolist() == [[0.5, 0.0]]


def test_accuracy_by_position_bin_edges_and_standard_error() -> None:
    bins = accuracy_by_position([0.0, 0.1, 0.099, 0.95, 1.0, 1.0], [1, 0, 1, 1, 0, 1], list("aabbcc"))
    assert len(bins) == 10
    assert [b["n"] for b in bins] == [2, 1, 0, 0, 0, 0, 0, 0, 0, 3]
    assert bins[0]["accuracy"] == 1.0 and bins[0]["se"] == 0.0
    assert bins[9]["accuracy"] == pytest.approx(2 / 3)
    assert bins[9]["se"] == pytest.approx(np.sqrt(2 / 3 * 1 / 3 / 3))
    assert bins[9]["gold"] == {"b": 1, "c": 2}
    assert bins[2] == {"lo": 0.2, "hi": 0.3, "n": 0, "accuracy": 0.0, "se": 0.0, "gold": {}}


def test_accuracy_by_position_rejects_out_of_range_and_handles_empty() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        accuracy_by_position([1.2], [1], ["a"])
    assert all(b["n"] == 0 for b in accuracy_by_position([], [], []))
