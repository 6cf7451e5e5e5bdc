"""Recording a judge pass in a run directory: ``scores.json`` with its judgments folded in, and
``judging.json``."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rescue_bench.judge import rubric
from rescue_bench.judge.asking import Judge
from rescue_bench.judge.bertscore import BertScorer
from rescue_bench.judge.merge import BERTSCORE_JUDGE, judge_agreement, judge_names
from rescue_bench.judge.scores import judged_run_lines, judged_scores, run_to_score
from rescue_bench.metrics.relational import analysis_plan, refreshed
from rescue_bench.records import Json
from rescue_bench.rundir import (
    JUDGING_FILE,
    SCORES_FILE,
    BertScoreSetting,
    JudgeCounts,
    JudgeSession,
    Judging,
    atomic_write_json,
    load_judging,
    load_run,
    run_lock,
)
from rescue_bench.tasks import task_infos


def rescore_run(run_dir: Path, *, n_resamples: int = 1000, seed: int | None = None) -> dict[str, Json]:
    """Aggregate a run with its judgments folded in, add inter-judge agreement, and write ``scores.json``.

    The bootstrap seed defaults to the run's own seed (as the engine's aggregation), else 0. It holds the
    run directory's lock (re-entrant: a judge pass calls it inside its own).
    """
    with run_lock(run_dir):
        return _rescore(run_dir, n_resamples, seed)


def _rescore(run_dir: Path, n_resamples: int, seed: int | None) -> dict[str, Json]:
    data = load_run(run_dir)
    judgments = data.judgment_lines
    if seed is None:
        seed = data.manifest.seed or 0
    readings = {task: rubric.judge_rubric(task).read(data.manifest.config) for task in rubric.JUDGE_TASKS}
    scores = judged_scores(
        data.prediction_lines,
        judgments,
        data.scores,
        seed=seed,
        n_resamples=n_resamples,
        to_score=run_to_score(data.manifest.config),
    )
    names = judge_names(judgments)
    meta = scores.setdefault("_meta", {})
    meta["judges"] = names
    bert = [j for j in data.judgment_lines if j.judge == BERTSCORE_JUDGE]
    meta["bertscore"] = (bert[-1].raw or None) if bert else None
    # The rules in words, as the run's options read them (VP's --vp-bert and --vp-judge-scale).
    meta["scoring_rules"] = {task: dict(found.rules) for task, found in readings.items() if task in scores}
    if len(names) > 1:
        meta["judge_agreement"] = judge_agreement(judgments)
    if data.score_record is not None and data.score_record.relational is not None:
        lines = judged_run_lines(data)
        plan = analysis_plan(task_infos())
        scores["_relational"] = refreshed(data.score_record.relational, lines, plan, seed=seed)
    atomic_write_json(Path(run_dir) / SCORES_FILE, scores)
    return scores


JudgeStatus = Literal["finished", "incomplete", "stopped"]


@dataclass(frozen=True, slots=True)
class PassClock:
    """When a judge pass started, to record its share of the time."""

    started: float
    wall: float

    @classmethod
    def start(cls) -> PassClock:
        return cls(time.perf_counter(), time.time())

    def session(self, status: JudgeStatus, counts: Mapping[str, JudgeCounts] | None = None) -> JudgeSession:
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.wall))
        elapsed = round(time.perf_counter() - self.started, 3)
        return JudgeSession(started=started, elapsed_s=elapsed, status=status, counts=dict(counts or {}))


def record_judging(
    run_dir: Path,
    judges: Sequence[Judge],
    tallies: Mapping[str, JudgeCounts],
    scorer: BertScorer | None,
    session: JudgeSession | None = None,
) -> Judging:
    """Write ``judging.json``: this pass's counts added to the earlier passes', this pass kept as a session,
    its status, the rubric hashes and BERTScore."""
    old = load_judging(Path(run_dir))
    listed = tuple(dict.fromkeys([*old.judges, *(judge.name for judge in judges)]))
    counts = dict(old.counts)
    for name, tally in tallies.items():
        counts[name] = counts.get(name, JudgeCounts()) + tally
    bertscore = old.bertscore
    if scorer is not None:
        bertscore = BertScoreSetting.model_validate(scorer.setting)
    session = (session or JudgeSession()).model_copy(update={"counts": dict(tallies)})
    judging = Judging(
        judges=listed,
        counts=counts,
        status=session.status,
        sessions=(*old.sessions, session),
        prompt_hashes={task: rubric.prompt_hash(task) for task in rubric.JUDGE_TASKS},
        bertscore=bertscore,
    )
    atomic_write_json(Path(run_dir) / JUDGING_FILE, judging.to_json())
    return judging
