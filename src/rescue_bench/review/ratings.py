"""Judge calibration (the paper's Table 12 study): humans rate model output against gold on a 1-5 scale.

``load_ratings`` samples ER and VP predictions from a run directory's ``predictions.jsonl`` into rating items.
Only predictions a judge scored are sampled (a run never judged is refused): an invalid one is scored as a
miss without asking the judge, and an unscored verdict has no score either, so there is nothing to
calibrate against. Items keep the instance id and gold and the model output, and nothing
else: no judge score, no model name, no run name in any page. ``write_ratings_csv`` writes the CSV of
``docs/design.md`` that ``rescue-bench judge calibrate`` reads.
"""

from __future__ import annotations

import csv
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from rescue_bench.errors import DataError
from rescue_bench.judge.calibrate import judge_scores
from rescue_bench.records import Json
from rescue_bench.review.db import Rating, RatingItem, User, utcnow
from rescue_bench.rundir import JUDGMENTS_FILE, PredictionLine, RunDirError, read_judgments
from rescue_bench.tasks import judged_tasks

RATED_TASKS = judged_tasks()
CSV_COLUMNS = ("item_id", "instance_id", "task", "annotator", "human_score")


@dataclass(frozen=True, slots=True)
class Candidate:
    instance_id: str
    task: str
    scenario: str | None
    gold: Any
    prediction: Any


@dataclass(frozen=True, slots=True)
class RatingLoad:
    added: dict[str, int]
    already_loaded: int
    invalid_skipped: int
    available: dict[str, int]


class _TaskOf(BaseModel):
    """The one field read of a line before it is known to be ours: its task (the rest is checked only for
    the rated tasks)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    task: Json = None


def read_candidates(run_dir: Path) -> tuple[list[Candidate], int]:
    """The ER/VP predictions of a run that a judge scored, and how many others (invalid, or without a judge
    score) were passed over.

    Raises:
        DataError: no predictions file, a damaged line, or a run never judged (nothing to calibrate against).
    """
    path = run_dir / "predictions.jsonl"
    if not path.is_file():
        raise DataError(f"{path}: not found (give a run directory written by `rescue-bench run`)")
    candidates, invalid = _valid_predictions(path)
    scored = _judged(run_dir)
    out = [c for c in candidates if c.instance_id in scored]
    return out, invalid + len(candidates) - len(out)


def _judged(run_dir: Path) -> set[str]:
    """The instances of the run with a valid judge score (the LLM judges', not BERTScore)."""
    try:
        judgments = read_judgments(run_dir) if (run_dir / JUDGMENTS_FILE).is_file() else []
    except RunDirError as exc:
        raise DataError(str(exc)) from None
    scored = set(judge_scores(judgments))
    if not scored:
        raise DataError(
            f"{run_dir}: no judge verdicts in {JUDGMENTS_FILE}: the ratings would have no judge score to be "
            f"compared with; judge the run first (`rescue-bench score {run_dir} --judge MODEL`)"
        )
    return scored


def _valid_predictions(path: Path) -> tuple[list[Candidate], int]:
    out: list[Candidate] = []
    invalid = 0
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            record = _record(line, path, number)
            # Lines of other tasks are passed over unread, as the rest of the file is not ours to check.
            if _TaskOf.model_validate(record).task not in RATED_TASKS:
                continue
            prediction = _prediction(record, path, number)
            if not prediction.instance_id:
                raise DataError(f"{path}:{number}: instance_id is missing")
            if not prediction.valid or prediction.prediction is None:
                invalid += 1
                continue
            out.append(
                Candidate(
                    prediction.instance_id,
                    prediction.task,
                    prediction.scenario,
                    prediction.gold,
                    prediction.prediction,
                )
            )
    return out, invalid


def _prediction(record: dict[str, Any], path: Path, number: int) -> PredictionLine:
    try:
        return PredictionLine.from_json(record, f"{path}:{number}")
    except RunDirError as exc:
        raise DataError(str(exc)) from None


def _record(line: str, path: Path, number: int) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except ValueError as exc:
        raise DataError(f"{path}:{number}: not valid JSON: {exc}") from None
    if not isinstance(record, dict):
        raise DataError(f"{path}:{number}: expected a JSON object")
    return record


def choose(candidates: list[Candidate], n: int, seed: int) -> list[Candidate]:
    """Up to ``n`` candidates per task, drawn at random (reproducible with ``seed``), in shuffled order.

    >>> pool = [Candidate(f"s::er::{i}", "er", "couple", None, {}) for i in range(5)]
    >>> len(choose(pool, 3, seed=1)), choose(pool, 3, seed=1) == choose(pool, 3, seed=1)
    (3, True)
    """
    rng = random.Random(seed)
    chosen: list[Candidate] = []
    for task in RATED_TASKS:
        pool = sorted((c for c in candidates if c.task == task), key=lambda c: c.instance_id)
        chosen += rng.sample(pool, min(n, len(pool)))
    rng.shuffle(chosen)
    return chosen


def load_ratings(session: Session, run_dir: Path, n: int, seed: int = 0) -> RatingLoad:
    """Add up to ``n`` new items per task from ``run_dir``; items loaded before from this run are skipped."""
    if n < 1:
        raise DataError(f"--n must be at least 1 (got {n})")
    run_key = str(run_dir.resolve())
    candidates, invalid = read_candidates(run_dir)
    loaded = set(session.scalars(select(RatingItem.instance_id).where(RatingItem.run_dir == run_key)))
    fresh = [c for c in candidates if c.instance_id not in loaded]
    chosen = choose(fresh, n, seed)
    for item in chosen:
        session.add(
            RatingItem(
                run_dir=run_key,
                instance_id=item.instance_id,
                task=item.task,
                scenario=item.scenario,
                gold=item.gold,
                prediction=item.prediction,
            )
        )
    session.commit()
    return RatingLoad(
        added={t: sum(1 for c in chosen if c.task == t) for t in RATED_TASKS},
        already_loaded=len(candidates) - len(fresh),
        invalid_skipped=invalid,
        available={t: sum(1 for c in candidates if c.task == t) for t in RATED_TASKS},
    )


def next_unrated(session: Session, user: User) -> RatingItem | None:
    rated = select(Rating.item_id).where(Rating.user_id == user.id)
    return session.scalars(
        select(RatingItem).where(RatingItem.id.not_in(rated)).order_by(RatingItem.id)
    ).first()


def rating_of(session: Session, item: RatingItem, user: User) -> Rating | None:
    return session.scalars(select(Rating).where(Rating.item_id == item.id, Rating.user_id == user.id)).first()


def rate(session: Session, item: RatingItem, user: User, score: int) -> None:
    """Record (or change) ``user``'s 1-5 score for ``item``."""
    if score not in range(1, 6):
        raise ValueError(f"score must be 1-5 (got {score})")
    existing = rating_of(session, item, user)
    if existing is None:
        session.add(Rating(item_id=item.id, user_id=user.id, score=score))
    else:
        existing.score, existing.updated_at = score, utcnow()
    session.commit()


def counts(session: Session, user: User) -> tuple[int, int]:
    """(items rated by ``user``, all items)."""
    mine = session.scalar(select(func.count()).select_from(Rating).where(Rating.user_id == user.id)) or 0
    total = session.scalar(select(func.count()).select_from(RatingItem)) or 0
    return mine, total


def write_ratings_csv(session: Session, out: Path, run_dir: Path | None = None) -> int:
    """Write every rating (of one run, when given) as ``item_id,instance_id,task,annotator,human_score``."""
    stmt = (
        select(Rating.item_id, RatingItem.instance_id, RatingItem.task, User.name, Rating.score)
        .join(RatingItem, Rating.item_id == RatingItem.id)
        .join(User, Rating.user_id == User.id)
        .order_by(Rating.item_id, User.name)
    )
    if run_dir is not None:
        stmt = stmt.where(RatingItem.run_dir == str(run_dir.resolve()))
    rows = list(session.execute(stmt))
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        writer.writerows(tuple(r) for r in rows)
    return len(rows)
