"""Aggregation of predictions.jsonl records into scores.json entries, per scope, with CIs and counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rescue_bench.data.load import load_samples
from rescue_bench.errors import ConfigError, DataError
from rescue_bench.metrics.aggregate import aggregate_run, aggregate_task, check_required, split_by_task
from rescue_bench.metrics.classification import binary_metrics, multiclass_metrics
from rescue_bench.metrics.generation import EMOTION, generation_summary
from rescue_bench.metrics.plan import metric_plan
from rescue_bench.metrics.ranking import rank_metrics, ranking_summary
from rescue_bench.metrics.spec import BINARY_YES_NO
from rescue_bench.records import Instance, Prediction
from rescue_bench.rundir import PredictionLine
from rescue_bench.tasks import headline, itp, metric_specs
from rescue_bench.taxonomy import SCENARIOS, relation_labels

SPECS = metric_specs()

Rec = dict[str, Any]


def rec(
    task: str,
    sample: str,
    scenario: str,
    row: int,
    gold: Any,
    prediction: Any,
    *,
    valid: bool = True,
    problems: tuple[str, ...] = (),
    scores: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> Rec:
    return {
        "instance_id": f"{sample}::{task}::{row}",
        "task": task,
        "sample_id": sample,
        "scenario": scenario,
        "row_index": row,
        "gold": gold,
        "valid": valid,
        "prediction": prediction,
        "problems": list(problems),
        "meta": meta or {},
        "scores": scores or {},
    }


def itp_records() -> list[Rec]:
    rows = [
        ("c1", "couple", "yes", "yes"),
        ("c1", "couple", "no", "yes"),
        ("c1", "couple", "yes", None),
        ("c2", "couple", "yes", "yes"),
        ("c2", "couple", "no", "no"),
        ("c3", "couple", "no", "no"),
        ("f1", "family", "yes", "no"),
        ("f1", "family", "no", "no"),
    ]
    out = []
    for i, (sample, scenario, gold, pred) in enumerate(rows):
        problems = ("parse_failure: no JSON",) if pred is None else ()
        out.append(rec("itp", sample, scenario, i, gold, pred, valid=pred is not None, problems=problems))
    return out


def test_itp_scopes_metrics_counts_and_cis() -> None:
    records = itp_records()
    out = aggregate_task("itp", SPECS["itp"], records, n_resamples=300)
    assert list(out) == ["couple", "family", "all"]
    couple = out["couple"]
    assert couple["n"] == 6 and couple["valid"] == 5 and couple["parse_failures"] == 1
    # couple: tp 2, fp 1, fn 0 + 1 invalid yes -> P 2/3, R 2/3
    assert couple["precision"] == pytest.approx(2 / 3) and couple["recall"] == pytest.approx(2 / 3)
    assert (couple["tp"], couple["fp"], couple["tn"], couple["fn"], couple["invalid"]) == (2, 1, 2, 0, 1)
    every = out["all"]
    expected = binary_metrics([r["gold"] for r in records], [r["prediction"] for r in records])
    for name in headline("itp"):
        assert every[name] == pytest.approx(expected[name])
        lo, hi = every["ci"][name]
        assert lo <= every[name] <= hi
    assert every["confusion"] == expected["confusion"]
    assert out["family"]["precision"] == 0.0 and out["family"]["recall"] == 0.0  # zero denominator -> 0.0
    json.dumps(out)  # scores.json must be serialisable


def test_invalid_prediction_is_a_miss_even_if_its_partial_value_is_right() -> None:
    records = [rec("itp", "s", "couple", 0, "yes", "yes", valid=False, problems=("invalid_label: 'yess'",))]
    out = aggregate_task("itp", SPECS["itp"], records, n_resamples=50)["all"]
    assert out["recall"] == 0.0 and out["invalid_labels"] == 1 and out["parse_failures"] == 0


def test_itp_invalid_answer_is_the_wrong_class_in_instance_scores_and_aggregate() -> None:
    """The toy case of docs/protocol-differences.md (section 4): 4 positives answered yes, yes, no, invalid
    and 4 negatives answered yes, no, no, invalid. The invalid negative is a false positive, so P = 2/4."""
    answers = [("yes", "yes"), ("yes", "yes"), ("yes", "no"), ("yes", None)]
    answers += [("no", "yes"), ("no", "no"), ("no", "no"), ("no", None)]
    records = []
    for i, (gold, pred) in enumerate(answers):
        inst = Instance(f"s::itp::{i}", "itp", "s", "couple", i, gold)
        scores = itp.score(Prediction(inst.id, pred, pred is not None), inst).metrics
        records.append(rec("itp", "s", "couple", i, gold, pred, valid=pred is not None, scores=scores))
    pred_yes = [r["scores"]["pred_yes"] for r in records]
    assert pred_yes == [1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0]  # the invalid negative counts as a "yes"
    out = aggregate_task("itp", SPECS["itp"], records, n_resamples=50)["all"]
    assert (out["tp"], out["fp"], out["tn"], out["fn"], out["invalid"]) == (2, 1, 2, 1, 2)
    assert out["precision"] == pytest.approx(2 / 4) and out["recall"] == pytest.approx(2 / 4)
    assert out["f1"] == pytest.approx(0.5) and out["accuracy"] == pytest.approx(4 / 8)
    tp = sum(p == 1.0 and r["gold"] == "yes" for p, r in zip(pred_yes, records, strict=True))
    assert out["precision"] == pytest.approx(tp / sum(pred_yes))  # the aggregate agrees with the instances


def test_the_reference_reading_of_the_itp_toy_case_is_as_the_doc_states() -> None:
    """The reference's ``main`` turns any unreadable answer into ``no`` before scoring: the invalid positive
    is a false negative there too, the invalid negative a free true negative (precision and accuracy move)."""
    answers = [("yes", "yes"), ("yes", "yes"), ("yes", "no"), ("yes", "no")]
    answers += [("no", "yes"), ("no", "no"), ("no", "no"), ("no", "no")]
    records = []
    for i, (gold, pred) in enumerate(answers):
        inst = Instance(f"s::itp::{i}", "itp", "s", "couple", i, gold)
        scores = itp.score(Prediction(inst.id, pred, True), inst).metrics
        records.append(rec("itp", "s", "couple", i, gold, pred, scores=scores))
    out = aggregate_task("itp", SPECS["itp"], records, n_resamples=50)["all"]
    figures = (out["precision"], out["recall"], out["f1"], out["accuracy"])
    assert figures == pytest.approx((2 / 3, 0.5, 4 / 7, 5 / 8))
    doc = (Path(__file__).resolve().parents[2] / "docs" / "protocol-differences.md").read_text()
    stated = "P {:.3f}, R {:.3f}, F1 {:.3f} and accuracy {:.3f}".format(*figures)
    assert stated in " ".join(doc.split()), stated


def rpp_records() -> list[Rec]:
    couple_rows: list[tuple[str, str, list[str] | None, float | None]] = [
        ("c1", "pursue_withdraw", ["pursue_withdraw", "attack_attack"], 0.05),
        ("c1", "attack_attack", ["pursue_withdraw", "attack_attack", "repair_softening"], 0.5),
        ("c2", "repair_softening", ["repair_softening"], 0.95),
        ("c2", "pursue_withdraw", None, 1.0),
    ]
    family_rows: list[tuple[str, str, list[str] | None, float | None]] = [
        ("f1", "escalation_conflict", ["escalation_conflict"], 0.1),
        ("f1", "mutual_disengagement", ["pursue_withdraw", "escalation_conflict"], None),
    ]
    out = []
    for i, (sample, gold, pred, pos) in enumerate(couple_rows + family_rows):
        scenario = "couple" if sample.startswith("c") else "family"
        scores = rank_metrics(gold, pred or [])
        meta = {} if pos is None else {"relative_position": pos}
        out.append(
            rec("rpp", sample, scenario, i, gold, pred, valid=pred is not None, scores=scores, meta=meta)
        )
    return out


def test_rpp_accuracy_macro_f1_over_taxonomy_and_union_for_all() -> None:
    records = rpp_records()
    out = aggregate_task("rpp", SPECS["rpp"], records, n_resamples=200)
    couple = out["couple"]
    gold_c = [r["gold"] for r in records[:4]]
    top1_c = [r["prediction"][0] if r["prediction"] else None for r in records[:4]]
    expected_c = multiclass_metrics(gold_c, top1_c, relation_labels("couple"))
    assert couple["accuracy"] == pytest.approx(0.5)
    assert couple["macro_f1"] == pytest.approx(expected_c["macro_f1"])
    assert set(couple["per_label"]) == set(relation_labels("couple"))
    assert couple["recall_at_2"] == pytest.approx(3 / 4) and couple["mrr"] == pytest.approx((1 + 0.5 + 1) / 4)
    every = out["all"]
    union = list(dict.fromkeys([*relation_labels("couple"), *relation_labels("family")]))
    assert list(every["per_label"]) == union and len(union) == 11
    top1 = [r["prediction"][0] if r["prediction"] else None for r in records]
    assert every["macro_f1"] == pytest.approx(
        multiclass_metrics([r["gold"] for r in records], top1, union)["macro_f1"]
    )
    assert every["accuracy"] == pytest.approx(3 / 6)
    assert ranking_summary([r["scores"] for r in records])["recall_at_3"] == pytest.approx(
        every["recall_at_3"]
    )


def test_rpp_custom_label_sets_and_position_bins() -> None:
    records = rpp_records()[:4]
    labels = {"couple": ["pursue_withdraw", "attack_attack", "repair_softening"], "family": ["x"]}
    out = aggregate_task("rpp", SPECS["rpp"], records, labels_by_scenario=labels, n_resamples=50)
    assert list(out["all"]["per_label"]) == labels["couple"]  # only the scenarios present
    # pursue_withdraw: tp 1, predicted 2, support 2 -> F1 0.5; attack_attack 0; repair_softening 1
    assert out["couple"]["macro_f1"] == pytest.approx(1.5 / 3)
    position = out["couple"]["by_position"]
    assert position["n_bins"] == 10 and position["n_without_position"] == 0
    assert [b["n"] for b in position["bins"]] == [1, 0, 0, 0, 0, 1, 0, 0, 0, 2]
    assert position["bins"][9]["accuracy"] == 0.5 and position["bins"][9]["se"] == pytest.approx(0.5 / 2**0.5)
    assert position["bins"][9]["gold"] == {"pursue_withdraw": 1, "repair_softening": 1}
    family = aggregate_task("rpp", SPECS["rpp"], rpp_records(), n_resamples=50)["family"]
    assert family["by_position"]["n_without_position"] == 1
    # the RPP task writes the position under "position"
    renamed = [{**r, "meta": {"position": r["meta"]["relative_position"]}} for r in records]
    again = aggregate_task("rpp", SPECS["rpp"], renamed, n_resamples=50)["couple"]["by_position"]
    assert again == position


def test_ranking_tasks_use_scores_but_invalid_is_zero() -> None:
    records = [
        rec(
            "stp",
            "c1",
            "couple",
            0,
            "Anna",
            ["Anna", "Couple"],
            scores=rank_metrics("Anna", ["Anna", "Couple"]),
        ),
        rec(
            "stp", "c1", "couple", 1, "Ben", ["Couple", "Ben"], scores=rank_metrics("Ben", ["Couple", "Ben"])
        ),
        rec(
            "stp",
            "c2",
            "couple",
            2,
            "Couple",
            ["Couple"],
            valid=False,
            scores={"recall_at_1": 1.0, "mrr": 1.0},
        ),
    ]
    out = aggregate_task("stp", SPECS["stp"], records, n_resamples=100)["all"]
    assert out["recall_at_1"] == pytest.approx(1 / 3) and out["recall_at_2"] == pytest.approx(2 / 3)
    assert out["mrr"] == pytest.approx(1.5 / 3)
    assert {"gold": "Couple", "pred": "<invalid>", "count": 1} in out["confusion"]
    assert set(out["ci"]) == set(headline("stp"))


def test_er_and_vp_aggregate_with_judge_counts() -> None:
    er = [
        rec("er", "c1", "couple", 0, {}, {}, scores={"s_int": 5.0, "s_emo": 4.0, "bertscore_f1": 0.9}),
        rec("er", "c2", "couple", 1, {}, {}, scores={"s_int": 3.0, "s_emo": None, "bertscore_f1": 0.8}),
        # A judged run gives an invalid answer the judge's floor (judge.merge).
        rec(
            "er",
            "f1",
            "family",
            2,
            {},
            None,
            valid=False,
            problems=("parse_failure: empty",),
            scores={"s_emo": 1.0},
        ),
    ]
    out = aggregate_task("er", SPECS["er"], er, n_resamples=100)
    expected = generation_summary(EMOTION, [r["scores"] for r in er], [r["valid"] for r in er])
    for name in headline("er"):
        assert out["all"][name] == pytest.approx(expected[name])
    assert out["all"]["n_unscored"] == 1 and out["all"]["parse_failures"] == 1
    assert out["family"]["llm"] == 1.0  # an invalid prediction scores the floor
    vp = [rec("vp", "c1", "couple", 0, [], [], scores={"pairing": 2.0, "viewpoint": 3.0})]
    vp_out = aggregate_task("vp", SPECS["vp"], vp, n_resamples=50)["all"]
    assert vp_out["llm"] == pytest.approx(1 + 4 * 5 / 6) and vp_out["bertscore_f1"] is None
    assert vp_out["ci"]["bertscore_f1"] is None and vp_out["ci"]["llm"] == pytest.approx([vp_out["llm"]] * 2)


def test_unjudged_run_reports_none_for_judge_metrics() -> None:
    er = [rec("er", "c1", "couple", 0, {}, {}, scores={"s_int": 4.0})]
    out = aggregate_task("er", SPECS["er"], er, n_resamples=20)["all"]
    assert out["llm"] is None and out["ci"]["llm"] is None and out["s_int"] == 4.0


def test_empty_task_has_an_all_scope_with_no_number() -> None:
    out = aggregate_task("ssp", SPECS["ssp"], [], n_resamples=20)
    assert list(out) == ["all"] and out["all"]["n"] == 0 and out["all"]["recall_at_1"] is None
    assert out["all"]["ci"]["mrr"] is None
    rpp = aggregate_task("rpp", SPECS["rpp"], [], n_resamples=20)["all"]
    assert rpp["macro_f1"] is None and rpp["per_label"] == {}


UNANSWERED = ("request_failed: connection error: refused (gave up after 6 attempts)",)


@pytest.mark.parametrize("task", list(SPECS))
def test_unanswered_instances_are_never_part_of_a_number(task: str) -> None:
    """Every task: a run whose endpoint never answered gets no number, only its count of unanswered."""
    records = [
        rec(task, f"s{i}", "couple", i, "yes", None, valid=False, problems=UNANSWERED) for i in range(4)
    ]
    out = aggregate_task(task, SPECS[task], records, n_resamples=20)
    assert list(out) == ["all"] and out["all"]["n"] == 0 and out["all"]["unanswered"] == 4
    assert all(out["all"][name] is None for name in headline(task))
    assert all(bound is None for bound in out["all"]["ci"].values())


def test_a_metric_over_answered_instances_says_its_n() -> None:
    answered = [rec("itp", "c1", "couple", 0, "yes", "yes"), rec("itp", "c2", "couple", 1, "no", "no")]
    failed = [rec("itp", "c3", "couple", 2, "yes", None, valid=False, problems=UNANSWERED)]
    out = aggregate_task("itp", SPECS["itp"], answered + failed, n_resamples=20)["all"]
    alone = aggregate_task("itp", SPECS["itp"], answered, n_resamples=20)["all"]
    assert out["n"] == 2 and out["unanswered"] == 1 and out["parse_failures"] == 0
    assert {k: out[k] for k in headline("itp")} == {k: alone[k] for k in headline("itp")}


def test_a_run_never_judged_has_no_judge_mean_even_when_every_answer_failed() -> None:
    """W33: a degraded run of invalid ER answers, no judge, no BERTScore: no LLM 1.00, no BERT 0.0000."""
    er = [
        rec("er", f"c{i}", "couple", i, {}, None, valid=False, problems=("parse_failure: x",))
        for i in range(3)
    ]
    out = aggregate_task("er", SPECS["er"], er, n_resamples=20)["all"]
    assert out["llm"] is None and out["bertscore_f1"] is None and out["n"] == 3


def test_bad_records_raise_one_line_data_errors() -> None:
    bad = rec("itp", "c1", "couple", 0, "yes", "yes")
    del bad["sample_id"]
    with pytest.raises(DataError, match=r"itp prediction record 1 \(c1::itp::0\): missing field 'sample_id'"):
        aggregate_task("itp", SPECS["itp"], [bad])
    with pytest.raises(DataError, match="scenario"):
        aggregate_task("itp", SPECS["itp"], [rec("itp", "c1", "dyad", 0, "yes", "yes")])
    with pytest.raises(DataError, match="gold"):
        aggregate_task("itp", SPECS["itp"], [rec("itp", "c1", "couple", 0, "maybe", "yes")])


def test_check_required_names_the_record_as_typed_records_does() -> None:
    good = [rec("itp", "c1", "couple", 0, "yes", "yes"), rec("rpp", "c1", "couple", 1, "a", "a")]
    check_required(PredictionLine.from_json(r) for r in good)  # nothing missing
    bad = rec("rpp", "c1", "couple", 2, "a", "a")
    del bad["gold"]
    # A line read from a JSON object without the field: numbered within its task (the second rpp record), as
    # aggregate_task numbers it.
    with pytest.raises(DataError, match=r"rpp prediction record 2 \(c1::rpp::2\): missing field 'gold'"):
        check_required(PredictionLine.from_json(r) for r in [*good, bad])
    with pytest.raises(DataError, match=r"rpp prediction record 2 \(c1::rpp::2\): missing field 'gold'"):
        aggregate_task("rpp", SPECS["rpp"], [good[1], bad])


def test_aggregate_run_is_deterministic_and_has_meta() -> None:
    records = itp_records() + rpp_records()
    by_task = split_by_task(records)
    assert list(by_task) == ["itp", "rpp"]
    first = aggregate_run(by_task, metric_specs(), n_resamples=100, seed=3)
    assert first["_meta"]["ci"]["n_resamples"] == 100 and first["_meta"]["ci"]["cluster"] == "sample_id"
    assert set(first) == {"itp", "rpp", "_meta"}
    with pytest.raises(ConfigError, match="unknown task"):
        aggregate_run({"xyz": []}, metric_specs())


def test_metric_plan_point_values_match_pure_functions() -> None:
    records = itp_records()
    values = metric_plan(BINARY_YES_NO).values([PredictionLine.from_json(r) for r in records])
    expected = binary_metrics([r["gold"] for r in records], [r["prediction"] for r in records])
    assert values == pytest.approx({name: expected[name] for name in headline("itp")})


def test_real_samples_persistence_baseline(real_subset: Path) -> None:
    # RPP-style records from the real release rows: gold = the row's relation label, prediction = the previous
    # labelled row's label (a "nothing changes" baseline). Checks the aggregation on real label distributions.
    records: list[Rec] = []
    for sample in load_samples(real_subset):
        labels = relation_labels(sample.scenario)
        previous: str | None = None
        for index, row in enumerate(sample.rows):
            gold = row.relation_cycle_state or row.relation_pattern
            if gold not in labels:
                continue
            ranked = [previous] if previous else []
            position = {"relative_position": index / max(1, len(sample.rows) - 1)}
            records.append(
                rec(
                    "rpp",
                    sample.sample_id,
                    sample.scenario,
                    index,
                    gold,
                    ranked or None,
                    valid=bool(ranked),
                    scores=rank_metrics(gold, ranked),
                    meta=position,
                )
            )
            previous = gold
    assert len({r["scenario"] for r in records}) == 2, "the shared subset has couple and family samples"
    out = aggregate_task("rpp", SPECS["rpp"], records, n_resamples=500)
    for scope in ("couple", "family", "all"):
        members = [r for r in records if scope == "all" or r["scenario"] == scope]
        summary = out[scope]
        top1 = [r["prediction"][0] if r["valid"] else None for r in members]
        present = [s for s in SCENARIOS if any(r["scenario"] == s for r in members)]
        union = list(dict.fromkeys(label for s in present for label in relation_labels(s)))
        expected = multiclass_metrics([r["gold"] for r in members], top1, union)
        assert summary["n"] == len(members) and summary["valid"] == sum(r["valid"] for r in members)
        assert summary["accuracy"] == pytest.approx(expected["accuracy"])
        assert summary["macro_f1"] == pytest.approx(expected["macro_f1"])
        for name in headline("rpp"):
            lo, hi = summary["ci"][name]
            assert lo <= summary[name] <= hi
    bins = out["all"]["by_position"]
    assert bins["n_without_position"] == 0 and sum(b["n"] for b in bins["bins"]) == len(records)


def test_an_outside_task_is_aggregated_by_the_spec_it_is_given() -> None:
    records = [{**r, "task": "xtp"} for r in itp_records()]
    assert aggregate_task("xtp", SPECS["itp"], records, n_resamples=20) == aggregate_task(
        "itp", SPECS["itp"], itp_records(), n_resamples=20
    )
