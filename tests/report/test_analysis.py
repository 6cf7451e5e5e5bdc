"""Pure analyses of prediction records, checked against hand counts."""

from __future__ import annotations

import pytest

from rescue_bench.report import analysis
from rescue_bench.rundir import PredictionLine


def rpp(
    sample: str,
    row: int,
    gold: str,
    pred: str | None,
    *,
    scenario: str = "couple",
    position: float | None = None,
) -> PredictionLine:
    meta = {} if position is None else {"position": position}
    return PredictionLine(
        instance_id=f"{sample}::rpp::{row}",
        task="rpp",
        sample_id=sample,
        scenario=scenario,
        row_index=row,
        gold=gold,
        valid=pred is not None,
        prediction=None if pred is None else [pred],
        meta=meta,
    )


RECORDS = [
    rpp("a", 1, "pursue_withdraw", "pursue_withdraw", position=0.05),
    rpp("a", 2, "pursue_withdraw", "attack_attack", position=0.12),
    rpp("a", 5, "repair_softening", "repair_softening", position=0.55),
    rpp("a", 3, "attack_attack", None, position=0.31),
    rpp("b", 2, "repair_softening", "repair_softening", position=1.0),
    rpp("b", 4, "pursue_withdraw", "mixed_transition", position=0.95),
    rpp("f", 1, "escalation_conflict", "escalation_conflict", scenario="family", position=0.5),
]


def test_confusion_counts_and_invalid_column() -> None:
    c = analysis.label_confusion(RECORDS, "rpp", "couple")
    cell = {(g, p): c.counts[i][j] for i, g in enumerate(c.rows) for j, p in enumerate(c.columns)}
    assert c.total == 6
    assert cell[("pursue_withdraw", "pursue_withdraw")] == 1
    assert cell[("pursue_withdraw", "attack_attack")] == 1
    assert cell[("attack_attack", "<invalid>")] == 1
    assert cell[("repair_softening", "repair_softening")] == 2
    assert c.rows[0] == "pursue_withdraw" and "escalation_conflict" not in c.rows


def test_per_label_accuracy() -> None:
    out = {(d["scenario"], d["label"]): (d["n"], d["accuracy"]) for d in analysis.per_label_accuracy(RECORDS)}
    assert out[("couple", "pursue_withdraw")] == (3, pytest.approx(1 / 3))
    assert out[("couple", "attack_attack")] == (1, 0.0)  # the invalid answer is a miss
    assert out[("couple", "repair_softening")] == (2, 1.0)
    assert out[("family", "escalation_conflict")] == (1, 1.0)
    assert ("couple", "withdraw_withdraw") not in out


def test_position_bins_accept_either_meta_key() -> None:
    records = [
        *RECORDS,
        rpp("c", 1, "attack_attack", "attack_attack").model_copy(
            update={"meta": {"relative_position": 0.45}}
        ),
    ]
    bins = analysis.position_bins(records, "couple")
    assert [b["n"] for b in bins] == [1, 1, 0, 1, 1, 1, 0, 0, 0, 2]
    assert bins[9]["accuracy"] == 0.5 and bins[9]["se"] == pytest.approx(0.5 / 2**0.5)
    assert bins[9]["gold"] == {"pursue_withdraw": 1, "repair_softening": 1}


def test_transitions_follow_row_order_within_samples() -> None:
    t = analysis.gold_transitions(RECORDS, "couple")
    # a: rows 1,2,3,5 -> pw, pw, aa, rs ; b: rows 2,4 -> rs, pw
    assert t.pairs() == {
        "pursue_withdraw->attack_attack": 1,
        "attack_attack->repair_softening": 1,
        "repair_softening->pursue_withdraw": 1,
    }


def test_stp_kinds_and_distribution() -> None:
    stp = [
        PredictionLine(
            instance_id=f"s::stp::{i}",
            task="stp",
            scenario="couple",
            gold=g,
            valid=p is not None,
            prediction=None if p is None else [p],
        )
        for i, (g, p) in enumerate(
            (("Couple", "Couple"), ("Ann", "Ann"), ("Ann", "Bo"), ("Ann", "Couple"), ("Bo", None))
        )
    ]
    c = analysis.target_confusion(stp)
    assert c.rows == ("group", "individual")
    assert c.counts == ((1, 0, 0, 0), (1, 1, 1, 1))
    dist = analysis.label_distribution(stp + RECORDS)
    shares = {(d["task"], d["scenario"], d["label"]): d["share"] for d in dist}
    assert shares[("stp", "couple", "individual")] == 0.8
    assert shares[("rpp", "couple", "pursue_withdraw")] == 0.5
    assert shares[("rpp", "family", "pursue_withdraw")] == 0.0  # taxonomy labels are listed with zeros
