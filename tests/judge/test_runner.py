"""Judging a run directory with an injected fake judge."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rescue_bench.errors import ConfigError
from rescue_bench.judge.runner import Judge, judge_run

from .conftest import FakeJudge, er_record, write_run


def _lines(run: Path, name: str = "judgments.jsonl") -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / name).read_text().splitlines()]


def _by_id(run: Path, judge: str) -> dict[str, dict[str, Any]]:
    return {j["instance_id"]: j for j in _lines(run) if j["judge"] == judge}


def _run(run: Path, *judges: Judge, **kw: Any) -> Any:
    return asyncio.run(judge_run(run, list(judges), **kw))


def test_valid_verdicts_are_recorded_and_aggregated(judge_run_dir: Path) -> None:
    fake = FakeJudge()
    run_before = (judge_run_dir / "run.json").read_bytes()
    result = _run(judge_run_dir, Judge("openai/judge-1", fake))
    tally = result.tallies["openai/judge-1"]
    # one request per sample and task: cpl/s1 er, fam/s2 er, cpl/s1 vp (fam/s2 vp is an invalid prediction)
    assert len(fake.requests) == tally.requests == 3
    assert (tally.sent, tally.valid, tally.unscored, tally.skipped_invalid) == (5, 5, 0, 2)
    assert tally.usage.prompt_tokens == 300
    lines = _by_id(judge_run_dir, "openai/judge-1")
    assert lines["cpl/s1::er::4"]["scores"] == {"s_emo": 5.0}
    assert lines["cpl/s1::er::6"]["scores"] == {"s_emo": 2.0}
    # the judge's claimed total (6) is ignored and recomputed
    assert lines["cpl/s1::vp::8"]["scores"] == {"pairing": 1.0, "viewpoint": 1.0, "total": 2.0}
    assert "judge_total_ignored: 6 != 2" in lines["cpl/s1::vp::8"]["problems"]
    assert "cpl/s1::er::9" not in lines and "fam/s2::vp::4" not in lines  # invalid predictions: not sent
    er = result.scores["er"]["all"]
    # s_er = (s_emo + s_int) / 2 per instance: (5+4)/2, (2+4)/2, the floor (1+1)/2, (2+2)/2
    assert er["llm"] == pytest.approx((4.5 + 3 + 1 + 2) / 4)
    assert er["n_unscored"] == 0
    vp = result.scores["vp"]["all"]
    # totals 6, 2 and the floor 0 -> mean 8/3 on 0-6 -> 1 + 4 * (8/3) / 6 on 1-5
    assert vp["llm"] == pytest.approx(1 + 4 * (8 / 3) / 6)
    assert json.loads((judge_run_dir / "scores.json").read_text())["er"]["all"]["llm"] == er["llm"]
    judging = json.loads((judge_run_dir / "judging.json").read_text())
    assert judging["judges"] == ["openai/judge-1"]
    assert judging["counts"]["openai/judge-1"]["unscored"] == 0
    assert set(judging["prompt_hashes"]) == {"er", "vp"} and judging["bertscore"] is None
    assert (judge_run_dir / "run.json").read_bytes() == run_before  # the engine's file: never written here


def test_requests_are_blind(judge_run_dir: Path) -> None:
    fake = FakeJudge()
    _run(judge_run_dir, Judge("openai/judge-1", fake))
    for request in fake.requests:
        text = json.dumps(request.messages)
        assert "cand-model-x" not in text and "openai" not in text
        assert "cpl/s1" not in text and "::" not in text


@pytest.mark.parametrize("fault", ["out_of_range", "missing", "garbage", "fail"])
def test_bad_verdict_is_reasked_once_then_valid(judge_run_dir: Path, fault: str) -> None:
    fake = FakeJudge(faults={"feels ashamed and cornered": [fault]})
    result = _run(judge_run_dir, Judge("openai/judge-1", fake))
    line = _by_id(judge_run_dir, "openai/judge-1")["cpl/s1::er::6"]
    assert line["valid"] and line["scores"] == {"s_emo": 2.0}
    assert line["problems"][0].startswith("reasked: ")
    assert line["raw"]["attempts"] == 2
    tally = result.tallies["openai/judge-1"]
    assert tally.requests == 4 and tally.unscored == 0
    # the re-ask holds only the failed item (garbage/fail spoil the whole first reply, so the sample's
    # other item is re-asked too)
    (reask,) = [r for r in fake.requests if "could not be used" in r.messages[1]["content"]]
    expected = 2 if fault in ("garbage", "fail") else 1
    assert len(reask.instance_ids) == expected


@pytest.mark.parametrize(
    ("fault", "first_problem"),
    [
        ("out_of_range", "out_of_range: emotion_score=9 (allowed 1-5)"),
        ("missing", "missing: no verdict"),
        ("garbage", "parse_failure: reply holds no JSON object"),
        ("fail", "request_failed: HTTP 500"),
    ],
)
def test_bad_verdict_twice_is_unscored_and_counted(
    judge_run_dir: Path, fault: str, first_problem: str
) -> None:
    fake = FakeJudge(faults={"feels ashamed and cornered": [fault, fault]})
    result = _run(judge_run_dir, Judge("openai/judge-1", fake))
    line = _by_id(judge_run_dir, "openai/judge-1")["cpl/s1::er::6"]
    assert not line["valid"] and line["scores"] == {}
    assert line["problems"][0].startswith(first_problem)
    assert line["problems"][1].startswith("after re-ask: ")
    assert len(line["raw"]["replies"]) == 2
    # a garbage reply or a failed request spoils the sample's other item (cpl/s1::er::4) as well
    whole = fault in ("garbage", "fail")
    tally = result.tallies["openai/judge-1"]
    er = result.scores["er"]["all"]
    if fault == "fail":
        # No answer from the judge: unfinished (asked again by the next pass), not an unscored verdict.
        assert tally.unscored == 0 and tally.unanswered == 2 and result.status == "incomplete"
        assert er["n_unscored"] == 0 and er["n_judged"] == er["n"] - 2
        assert er["llm"] == pytest.approx((1 + 2) / 2)
        return
    assert tally.unscored == (2 if whole else 1) and tally.unanswered == 0 and result.status == "finished"
    assert er["n_unscored"] == (2 if whole else 1)
    # left out of the judge mean, not clamped and not floored: (5+4)/2 (unless spoilt), the floor 1, (2+2)/2
    assert er["llm"] == pytest.approx((1 + 2) / 2 if whole else (4.5 + 1 + 2) / 3)
    assert er["s_int"] == pytest.approx((4 + 4 + 1 + 2) / 4)  # the formula score still covers every instance


def test_vp_out_of_range_twice_is_unscored(judge_run_dir: Path) -> None:
    fake = FakeJudge(faults={"she never listens": ["out_of_range", "out_of_range"]})
    result = _run(judge_run_dir, Judge("openai/judge-1", fake))
    line = _by_id(judge_run_dir, "openai/judge-1")["cpl/s1::vp::5"]
    assert not line["valid"] and line["problems"][0] == "out_of_range: source_target_score=5 (allowed 0-2)"
    assert result.scores["vp"]["all"]["n_unscored"] == 1


def test_resume_asks_nothing_twice(judge_run_dir: Path) -> None:
    fake = FakeJudge(faults={"feels ashamed and cornered": ["out_of_range", "missing"]})
    _run(judge_run_dir, Judge("openai/judge-1", fake))
    before = len(_lines(judge_run_dir))
    again = FakeJudge()
    result = _run(judge_run_dir, Judge("openai/judge-1", again))
    assert again.requests == [] and len(_lines(judge_run_dir)) == before
    assert result.tallies["openai/judge-1"].resumed == 5
    # asking again for the unscored ones only
    retry = FakeJudge()
    result = _run(judge_run_dir, Judge("openai/judge-1", retry), retry_unscored=True)
    assert [r.instance_ids for r in retry.requests] == [("cpl/s1::er::6",)]
    assert _by_id(judge_run_dir, "openai/judge-1")["cpl/s1::er::6"]["valid"]  # the latest line wins
    assert result.scores["er"]["all"]["n_unscored"] == 0


def test_judge_equal_to_candidate_warns(judge_run_dir: Path) -> None:
    warnings: list[str] = []
    result = _run(judge_run_dir, Judge("openai/cand-model-x", FakeJudge()), warn=warnings.append)
    assert len(warnings) == 1 and "grades its own answers" in warnings[0]
    assert result.warnings == tuple(warnings)
    assert _run(judge_run_dir, Judge("openai/other", FakeJudge()), warn=warnings.append).warnings == ()


def test_judging_leaves_predictions_and_requests_alone(judge_run_dir: Path) -> None:
    before = {n: (judge_run_dir / n).read_bytes() for n in ("predictions.jsonl", "requests.jsonl")}
    _run(judge_run_dir, Judge("openai/judge-1", FakeJudge()))
    assert {n: (judge_run_dir / n).read_bytes() for n in before} == before


def test_run_without_er_or_vp_is_an_error(tmp_path: Path) -> None:
    record = {**er_record("s", 1, "a", "b"), "task": "itp", "instance_id": "s::itp::1", "gold": "yes"}
    run = write_run(tmp_path / "r", [record])
    with pytest.raises(ConfigError, match="no ER or VP predictions"):
        _run(run, Judge("openai/j", FakeJudge()))


def test_several_judges_average_per_instance(judge_run_dir: Path) -> None:
    lenient = FakeJudge()

    async def harsh(request: Any) -> Any:
        reply = await lenient(request)
        data = json.loads(reply.text)
        for g in data["graded"]:
            if "emotion_score" in g:
                g["emotion_score"] = max(1, g["emotion_score"] - 1)
        return type(reply)(text=json.dumps(data))

    result = _run(judge_run_dir, Judge("openai/judge-a", FakeJudge()), Judge("openai/judge-b", harsh))
    er = result.scores["er"]["all"]
    # s_emo per judged instance: mean(5, 4), mean(2, 1), floor 1, mean(2, 1)
    assert er["s_emo"] == pytest.approx((4.5 + 1.5 + 1 + 1.5) / 4)
    agreement = result.scores["_meta"]["judge_agreement"]
    assert agreement["er"]["judges"] == ["openai/judge-a", "openai/judge-b"]
    # three valid ER predictions, scored (5, 4), (2, 1), (2, 1): never equal, always one apart
    assert agreement["er"]["n_items"] == 3
    assert agreement["er"]["exact_agreement"] == 0.0
    assert agreement["er"]["mae"] == pytest.approx(1.0)
    assert agreement["er"]["alpha_ordinal"] is not None and agreement["er"]["alpha_ordinal"] < 1.0
    # VP totals (6, 2) agree exactly
    assert (agreement["vp"]["exact_agreement"], agreement["vp"]["alpha_ordinal"]) == (1.0, 1.0)


class CountingScorer:
    """Stands in for BertScorer's bookkeeping: F1 1.0 for an exact match, else 0.25 (0 when invalid)."""

    config = type("Config", (), {"model": "counting"})()
    hash = "counting-v1"
    setting: ClassVar[dict[str, Any]] = {"model": "counting", "layer": 1, "hash": "counting-v1"}

    def __init__(self) -> None:
        self.scored: list[str] = []

    def score_instances(self, plans: list[Any]) -> dict[str, float]:
        out = {}
        for plan in plans:
            self.scored.append(plan.instance_id)
            pairs = plan.groups[0] if plan.groups else []
            out[plan.instance_id] = max((1.0 if c == r else 0.25 for c, r in pairs), default=0.0)
        return out


def _replace_prediction(run: Path, record: dict[str, Any]) -> None:
    """What ``run --retry-failed`` leaves: the instance's line replaced by its new prediction."""
    lines = [json.loads(x) for x in (run / "predictions.jsonl").read_text().splitlines()]
    lines = [record if line["instance_id"] == record["instance_id"] else line for line in lines]
    (run / "predictions.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_replaced_prediction_is_judged_again_and_its_old_lines_are_ignored(judge_run_dir: Path) -> None:
    scorer = CountingScorer()
    first = _run(judge_run_dir, Judge("openai/judge-1", FakeJudge()), scorer=scorer)
    assert "cpl/s1::er::9" in scorer.scored  # the invalid prediction gets its 0 line
    _replace_prediction(judge_run_dir, er_record("cpl/s1", 9, "feels dismissed", "feels dismissed"))
    again, scorer_again = FakeJudge(), CountingScorer()
    second = _run(judge_run_dir, Judge("openai/judge-1", again), scorer=scorer_again)
    assert [r.instance_ids for r in again.requests] == [("cpl/s1::er::9",)]
    assert scorer_again.scored == ["cpl/s1::er::9"]
    # The new lines count, the old 0 does not: ER BERTScore mean over 4 instances goes from 3.25/4 to 4.25/4.
    assert first.scores["er"]["all"]["bertscore_f1"] == pytest.approx(
        second.scores["er"]["all"]["bertscore_f1"] - 1.0 / 4
    )
    assert second.scores["er"]["all"]["llm"] > first.scores["er"]["all"]["llm"]
    third = FakeJudge()
    _run(judge_run_dir, Judge("openai/judge-1", third), scorer=CountingScorer())
    assert third.requests == []  # now current: nothing is asked again
