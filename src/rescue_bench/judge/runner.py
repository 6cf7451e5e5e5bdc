"""Judging the ER and VP predictions of a run with one or more LLM judges.

Mechanics:

* one request per sample and task, holding that sample's checkpoints (at most ``max_per_request``);
* an item whose verdict is out of range, missing or unreadable (or whose request failed) is asked once more,
  in one re-ask request per sample; if it is still invalid it is **left unscored and counted**, never clamped
  or defaulted;
* invalid predictions are not sent: they score at the floor (ER ``s_emo`` 1, VP 0) and are counted;
* every outcome is appended to ``judgments.jsonl`` as soon as its sample is done, so an interrupted run
  resumes where it stopped (an instance with a line for that judge is not asked again);
* what the pass did (counts, rubric hashes, BERTScore setting) goes to ``judging.json``, never to
  ``run.json``, which the engine alone writes.

The judge is an injected async callable, :data:`Complete`; :mod:`rescue_bench.judge.after_run` passes an
engine (cache, limits, retries), tests pass a fake. Nothing here knows the candidate model's name except
:func:`same_model`, which only warns. Asking one judge is :mod:`rescue_bench.judge.asking`'s, writing
``scores.json`` and ``judging.json`` :mod:`rescue_bench.judge.recording`'s; their names are importable from
here too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path

from rescue_bench.engine.progress import Progress
from rescue_bench.errors import ConfigError
from rescue_bench.judge.asking import (
    RAW_LIMIT,
    Complete,
    CompleteAgain,
    Judge,
    JudgeStopped,
    fingerprint,
    judge_group,
    judge_item,
    judge_records,
    plan_groups,
)
from rescue_bench.judge.bertscore import BertScorer, bertscore_judgments
from rescue_bench.judge.merge import BERTSCORE_JUDGE, JUDGED_TASKS, is_current, no_verdict
from rescue_bench.judge.recording import JudgeStatus, PassClock, record_judging, rescore_run
from rescue_bench.judge.rubric import judge_rubric
from rescue_bench.records import Json
from rescue_bench.rundir import (
    JUDGMENTS_FILE,
    JsonlAppender,
    JudgeCounts,
    JudgmentLine,
    PredictionLine,
    load_run,
    locked_run,
)

__all__ = [
    "RAW_LIMIT",
    "Complete",
    "CompleteAgain",
    "Judge",
    "JudgePass",
    "JudgeRunResult",
    "JudgeStopped",
    "fingerprint",
    "judge_group",
    "judge_item",
    "judge_records",
    "judge_run",
    "plan_groups",
    "record_judging",
    "rescore_run",
    "same_model",
]


def same_model(judge: str, candidate: str | None) -> bool:
    """Whether the judge looks like the candidate model (same name, or same model behind another provider).

    >>> same_model("openai/gpt-4o", "openai/gpt-4o"), same_model("openrouter/openai/GPT-4o", "openai/gpt-4o")
    (True, True)
    >>> same_model("openai/gpt-4o", "openai/gpt-4o-mini"), same_model("openai/gpt-4o", None)
    (False, False)
    """
    if not candidate:
        return False
    a, b = judge.lower(), candidate.lower()
    return a == b or a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class JudgeRunResult:
    """What :func:`judge_run` did."""

    tallies: dict[str, JudgeCounts]
    bertscored: int
    bertscore_hash: str | None
    warnings: tuple[str, ...]
    scores: dict[str, Json]
    status: JudgeStatus = "finished"
    """``incomplete`` when verdicts got no answer: the next pass asks them again."""

    def unanswered(self) -> int:
        """Verdicts of this pass that got no answer."""
        return sum(t.unanswered for t in self.tallies.values())


def _done(
    judgments: Iterable[JudgmentLine],
    judge: str,
    fingerprints: Mapping[str, str],
    *,
    retry_unscored: bool,
    bertscore_hash: str | None = None,
    judge_repeat: int = 0,
) -> set[str]:
    """Line keys whose present prediction ``judge`` has scored for its ``judge_repeat``-th time (or tried
    to, unless ``retry_unscored``). A verdict that got no answer is never done: every pass asks it again.

    For BERTScore (``bertscore_hash`` given) a line counts only when it was made with that scorer.
    """
    return {
        j.key
        for j in judgments
        if j.judge == judge
        and j.judge_repeat == judge_repeat
        and (j.valid or not retry_unscored)
        and not no_verdict(j)
        and (bertscore_hash is None or j.raw_field("hash") == bertscore_hash)
        and is_current(j, fingerprints.get(j.key, ""))
    }


@dataclass(frozen=True, slots=True)
class JudgePass:
    """What a judge's pass over a run goes by: the lines already there and the settings."""

    judgments: Sequence[JudgmentLine]
    fingerprints: Mapping[str, str]
    retry_unscored: bool
    judge_repeats: int
    concurrency: int
    progress: Progress = field(default_factory=lambda: Progress(enabled=False))


async def _judge_repeats(
    records: Sequence[PredictionLine],
    judge: Judge,
    how: JudgePass,
    sink: Callable[[list[JudgmentLine]], None],
) -> JudgeCounts:
    """One judge over every record, ``judge_repeats`` times; each judge repeat resumes on its own lines."""
    tally = JudgeCounts()
    for judge_repeat in range(how.judge_repeats):
        done = _done(
            how.judgments,
            judge.name,
            how.fingerprints,
            retry_unscored=how.retry_unscored,
            judge_repeat=judge_repeat,
        )
        try:
            counts = await judge_records(
                records,
                judge,
                done=done,
                sink=sink,
                concurrency=how.concurrency,
                judge_repeat=judge_repeat,
                tick=lambda c: how.progress.update(
                    judge.name, done=c.sent, failures=c.unscored + c.unanswered, tokens=c.usage.total_tokens
                ),
            )
        except JudgeStopped as exc:
            raise JudgeStopped(exc.reason, tally + exc.tally) from None
        tally = tally + counts
    return tally


@dataclass(frozen=True, slots=True)
class _Judged:
    """What the judges of a pass did: each one's tally, the budget stop (if any), the warnings given."""

    tallies: dict[str, JudgeCounts] = field(default_factory=dict)
    stop: JudgeStopped | None = None
    warnings: tuple[str, ...] = ()


@locked_run  # a second judge pass (or a run) on the directory is refused in one line
async def judge_run(
    run_dir: Path,
    judges: Sequence[Judge],
    *,
    scorer: BertScorer | None = None,
    concurrency: int = 8,
    retry_unscored: bool = False,
    warn: Callable[[str], None] = lambda _: None,
    judge_repeats: int = 1,
    quiet: bool = True,
) -> JudgeRunResult:
    """Judge a run directory's ER/VP predictions, add BERTScore, and rewrite ``scores.json``.

    Predictions are never regenerated: only the judges (and the local BERTScore model) are asked. Each
    (instance, repeat) of the run is judged ``judge_repeats`` times by every judge; one that already has a
    line for a judge and judge repeat is skipped (resume); ``retry_unscored`` asks again those whose last
    line is unscored.

    Raises:
        ConfigError: the run has no ER or VP predictions.
    """
    clock = PassClock.start()
    data = load_run(run_dir)
    records = [r for r in data.prediction_lines if r.task in JUDGED_TASKS]
    if not records:
        raise ConfigError(f"{run_dir} has no ER or VP predictions to judge (tasks: {', '.join(data.tasks)})")
    fingerprints = {r.key: fingerprint(r) for r in records}
    progress = Progress.for_terminal(quiet)
    how = JudgePass(data.judgment_lines, fingerprints, retry_unscored, judge_repeats, concurrency, progress)
    appender = JsonlAppender(Path(run_dir) / JUDGMENTS_FILE)
    valid = sum(r.valid for r in records)
    progress.start({judge.name: (valid * judge_repeats, 0) for judge in judges})
    try:
        judged = await _ask_judges(records, judges, how, data.manifest.candidate, appender, warn)
        bert_lines: list[JudgmentLine] = []
        if scorer is not None and judged.stop is None:
            config = data.manifest.config
            greedy = {task for task in JUDGED_TASKS if judge_rubric(task).read(config).greedy_bertscore}
            bert_lines = _add_bertscore(records, scorer, how, appender, greedy_tasks=greedy)
    finally:
        progress.stop()
        appender.close()
    tallies = judged.tallies
    if judged.stop is not None:
        # The judges' spend so far is recorded; scores.json keeps the engine's scores until a pass finishes.
        asked = [j for j in judges if j.name in tallies]
        record_judging(run_dir, asked, tallies, None, clock.session("stopped"))
        raise judged.stop
    status: JudgeStatus = "incomplete" if any(t.unanswered for t in tallies.values()) else "finished"
    scores = rescore_run(run_dir)
    record_judging(run_dir, judges, tallies, scorer, clock.session(status))
    bertscore_hash = scorer.hash if scorer else None
    return JudgeRunResult(tallies, len(bert_lines), bertscore_hash, judged.warnings, scores, status)


async def _ask_judges(
    records: Sequence[PredictionLine],
    judges: Sequence[Judge],
    how: JudgePass,
    candidate: str | None,
    appender: JsonlAppender,
    warn: Callable[[str], None],
) -> _Judged:
    """Every judge in turn over ``records``, until the budget stops one (the later ones are not asked)."""
    warnings: list[str] = []
    tallies: dict[str, JudgeCounts] = {}

    def record(judgments: list[JudgmentLine]) -> None:
        appender.append([j.to_json() for j in judgments])

    for judge in judges:
        if same_model(judge.name, candidate):
            warnings.append(
                f"judge {judge.name} is the candidate model ({candidate}): it grades its own answers"
            )
            warn(warnings[-1])
        try:
            tallies[judge.name] = await _judge_repeats(records, judge, how, record)
        except JudgeStopped as exc:
            tallies[judge.name] = exc.tally
            return _Judged(tallies, exc, tuple(warnings))
    return _Judged(tallies, None, tuple(warnings))


def _add_bertscore(
    records: Sequence[PredictionLine],
    scorer: BertScorer,
    how: JudgePass,
    appender: JsonlAppender,
    *,
    greedy_tasks: AbstractSet[str] = frozenset(),
) -> list[JudgmentLine]:
    """BERTScore lines of the records that have none made with ``scorer``, appended as they are made
    (``greedy_tasks``: the tasks scored precision-aware, by the run's options)."""
    current = _done(
        how.judgments, BERTSCORE_JUDGE, how.fingerprints, retry_unscored=False, bertscore_hash=scorer.hash
    )
    bert_lines = bertscore_judgments(records, scorer, current, greedy_tasks=greedy_tasks)
    appender.append([j.to_json() for j in bert_lines])
    return bert_lines
