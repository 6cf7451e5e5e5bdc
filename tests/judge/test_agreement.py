"""Judge agreement and human calibration: hand-computed values and the paper's Table 12 totals."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest

from rescue_bench.judge.agreement import (
    RatingPair,
    calibration_table,
    inter_judge_agreement,
    krippendorff_alpha,
    mean_over_judges,
)

# Table 12 of the paper (App. F): per annotator and task, how many items had |human - judge| = 0, 1, 2, 3, 4.
TABLE_12_COUNTS = {
    ("Annotator1", "VP"): (39, 10, 1, 0, 0),
    ("Annotator2", "VP"): (42, 8, 0, 0, 0),
    ("Annotator3", "ER"): (38, 9, 3, 0, 0),
    ("Annotator4", "ER"): (40, 8, 2, 0, 0),
}


def table_12_pairs() -> list[RatingPair]:
    """Rating pairs with exactly the paper's per-annotator difference counts, on varied 1-5 scores."""
    pairs = []
    for (annotator, task), counts in TABLE_12_COUNTS.items():
        i = 0
        for diff, count in enumerate(counts):
            for _ in range(count):
                human = 1 + i % 5
                judge = human + diff if human + diff <= 5 else human - diff  # differences in both directions
                pairs.append(RatingPair(annotator, task, float(human), float(judge)))
                i += 1
    return pairs


def test_table_12_totals_are_reproduced_from_the_counts() -> None:
    rows = {(r.annotator, r.task): r for r in calibration_table(table_12_pairs())}
    total = rows[("Total", "VP,ER")]
    assert total.n == 200 and total.exact == 159
    assert total.diff_counts == (159, 35, 6, 0, 0)
    assert total.mae == pytest.approx(0.235)
    assert rows[("Total", "VP")].exact == 81 and rows[("Total", "VP")].mae == pytest.approx(0.20)
    assert rows[("Total", "ER")].exact == 78 and rows[("Total", "ER")].mae == pytest.approx(0.27)
    per_annotator = {k: rows[k].mae for k in TABLE_12_COUNTS}
    assert per_annotator == pytest.approx(
        {
            ("Annotator1", "VP"): 0.24,
            ("Annotator2", "VP"): 0.16,
            ("Annotator3", "ER"): 0.30,
            ("Annotator4", "ER"): 0.24,
        }
    )
    assert [r.annotator for r in calibration_table(table_12_pairs())] == [
        "Annotator1",
        "Annotator2",
        "Annotator3",
        "Annotator4",
        "Total",
        "Total",
        "Total",
    ]


def test_calibration_with_non_integer_judge_scores() -> None:
    # a VP total of 5/6 maps to 4.333 on 1-5: within half a point of the human 4, but not an exact match
    rows = calibration_table([RatingPair("A", "VP", 4.0, 1 + 4 * 5 / 6), RatingPair("A", "VP", 2.0, 3.5)])
    assert rows[0].exact == 0 and rows[0].diff_counts == (1, 0, 1, 0, 0)  # 1.5 rounds half up to 2
    assert rows[0].mae == pytest.approx((1 / 3 + 1.5) / 2)
    wide = calibration_table([RatingPair("A", "ER", 1.0, 5.0)], max_diff=2)
    assert wide[0].diff_counts == (0, 0, 1)  # the last bin holds everything at or beyond max_diff
    with pytest.raises(ValueError, match="NaN"):
        calibration_table([RatingPair("A", "ER", math.nan, 1.0)])


def test_krippendorff_alpha_hand_computed_ordinal() -> None:
    # units (1,1) (1,3) (2,2) (3,3): n1=3 n2=2 n3=3, n=8; ordinal d(1,3)=(8-3)^2=25, d(1,2)=d(2,3)=2.5^2
    # D_o = 2*25/8 = 6.25; D_e = 2*(6*6.25 + 9*25 + 6*6.25)/(8*7) = 300/28; alpha = 1 - 6.25*28/300 = 5/12
    assert krippendorff_alpha([[1, 1, 2, 3], [1, 3, 2, 3]]) == pytest.approx(5 / 12)
    # nominal alpha would differ (the ordinal metric is really used)
    nominal = krippendorff.alpha(
        reliability_data=[[1, 1, 2, 3], [1, 3, 2, 3]], level_of_measurement="nominal"
    )
    assert not math.isclose(nominal, 5 / 12)


def test_krippendorff_alpha_undefined_cases() -> None:
    assert krippendorff_alpha([[1, 2, 3]]) is None  # one judge
    assert krippendorff_alpha([[1, None], [None, 2]]) is None  # nothing pairable
    assert krippendorff_alpha([[4, 4], [4, 4]]) is None  # no variation
    assert krippendorff_alpha([[1, 2, 3, 4, 5], [1, 2, 3, 4, 5]]) == pytest.approx(1.0)
    with_missing = krippendorff_alpha([[1, 2, np.nan, 5], [1, 3, 4, None]], value_domain=[1, 2, 3, 4, 5])
    assert with_missing is not None and -1.0 <= with_missing <= 1.0


def test_inter_judge_agreement_three_judges_hand_computed() -> None:
    ratings: dict[str, dict[str, float | None]] = {
        "j1": {"i1": 5, "i2": 3, "i3": 1, "i4": 2},
        "j2": {"i1": 5, "i2": 4, "i3": 1, "i4": None},
        "j3": {"i1": 5, "i2": 3, "i3": 2},
    }
    out = inter_judge_agreement(ratings)
    assert out["judges"] == ["j1", "j2", "j3"]
    assert out["n_items"] == 3 and out["n_complete"] == 3  # i4 has a single score
    assert out["exact_agreement"] == pytest.approx(1 / 3)  # only i1 is unanimous
    # pairs: j1-j2 diffs 0,1,0 ; j1-j3 diffs 0,0,1 ; j2-j3 diffs 0,1,1 -> 9 comparisons, 4 differ by 1
    assert out["mae"] == pytest.approx(4 / 9) and out["pairwise_exact"] == pytest.approx(5 / 9)
    assert [(p["a"], p["b"], p["n"], p["exact"]) for p in out["pairs"]] == [
        ("j1", "j2", 3, pytest.approx(2 / 3)),
        ("j1", "j3", 3, pytest.approx(2 / 3)),
        ("j2", "j3", 3, pytest.approx(1 / 3)),
    ]
    matrix = [[5, 3, 1], [5, 4, 1], [5, 3, 2]]
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
    assert out["alpha_ordinal"] == pytest.approx(expected)


def test_inter_judge_agreement_degenerate_inputs() -> None:
    empty = inter_judge_agreement({})
    assert empty["n_items"] == 0 and empty["alpha_ordinal"] is None and empty["mae"] == 0.0
    single = inter_judge_agreement({"j": {"a": 3}})
    assert single["alpha_ordinal"] is None and single["pairs"] == []
    assert (
        single["n_complete"] == 0 and single["exact_agreement"] == 0.0
    )  # one judge cannot agree with anyone


def test_mean_over_judges_skips_unscored() -> None:
    assert mean_over_judges({"a": {"x": 2, "y": math.nan}, "b": {"x": 3, "y": None}}) == {"x": 2.5, "y": None}
