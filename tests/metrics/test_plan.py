"""A metric plan's sums give the same numbers as the plain metric functions, whatever the records."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rescue_bench.metrics.classification import multiclass_metrics
from rescue_bench.metrics.plan import correct_top1, metric_plan, rank_scores, top1
from rescue_bench.metrics.spec import MULTICLASS_TOP3, RANKING_TOP3
from rescue_bench.rundir import PredictionLine

LABELS = ("a", "b", "c")
# A gold label outside the set ("z") and an invalid prediction (None) are both misses.
golds = st.sampled_from([*LABELS, "z"])
answers = st.one_of(st.none(), st.lists(st.sampled_from(LABELS), min_size=1, max_size=3, unique=True))


def line(gold: str, answer: list[str] | None) -> PredictionLine:
    return PredictionLine(instance_id="i", task="rpp", valid=answer is not None, prediction=answer, gold=gold)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(golds, answers), min_size=1, max_size=30))
def test_multiclass_plan_matches_the_confusion_metrics(pairs: list[tuple[str, list[str] | None]]) -> None:
    lines = [line(gold, answer) for gold, answer in pairs]
    values = metric_plan(MULTICLASS_TOP3, LABELS).values(lines)
    expected = multiclass_metrics(
        [gold for gold, _ in pairs], [answer[0] if answer else None for _, answer in pairs], LABELS
    )
    assert values["accuracy"] == pytest.approx(expected["accuracy"])
    assert values["macro_f1"] == pytest.approx(expected["macro_f1"])


def test_an_invalid_line_is_a_miss_whatever_it_holds() -> None:
    hit = line("a", ["a", "b"])
    broken = hit.model_copy(update={"valid": False})
    assert (top1(hit), top1(broken)) == ("a", "<invalid>")
    assert correct_top1("multiclass", hit) and not correct_top1("multiclass", broken)
    assert metric_plan(MULTICLASS_TOP3, LABELS).values([hit, broken])["accuracy"] == 0.5


def test_ranking_plan_means_the_rank_scores_and_zeroes_invalid_lines() -> None:
    scores = {"recall_at_1": 0.0, "recall_at_2": 1.0, "recall_at_3": 1.0, "mrr": 0.5}
    ranked = PredictionLine(instance_id="i", task="stp", valid=True, scores=scores)
    broken = ranked.model_copy(update={"valid": False})
    assert rank_scores(broken) == [0.0] * 4
    values = metric_plan(RANKING_TOP3).values([ranked, broken])
    assert values == pytest.approx({"recall_at_1": 0.0, "recall_at_2": 0.5, "recall_at_3": 0.5, "mrr": 0.25})
    assert not correct_top1("ranking", ranked)
