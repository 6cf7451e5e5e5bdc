"""The scores of a run: every task's records aggregated (``scores.json``), some while the run goes on.

A task whose last batch is recorded while others are still asked is aggregated in a quiet spell of the event
loop (:class:`EarlyScores`); the finish then aggregates only what is left, and uses an early aggregation only
if it was made of the very records the finish has.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rescue_bench.engine.manifest import TaskPlan
from rescue_bench.engine.runner import Runner, until_idle
from rescue_bench.records import Json

N_RESAMPLES = 1000
"""Bootstrap resamples of the confidence intervals in ``scores.json``."""


@dataclass(frozen=True, slots=True)
class Aggregated:
    """An aggregation made before the finish, and the records it was made of."""

    records: Sequence[Mapping[str, Json]]
    scores: dict[str, Any]


def _same(a: Sequence[object], b: Sequence[object]) -> bool:
    """The same objects in the same order (an identity check: cheap, and exact).

    >>> x, y = {"v": 1}, {"v": 1}
    >>> _same([x, y], [x, y]), _same([x, y], [x, dict(y)]), _same([x], [x, y])
    (True, False, False)
    """
    return len(a) == len(b) and all(p is q for p, q in zip(a, b, strict=True))


class EarlyScores:
    """Aggregations of the tasks that finish while others are still asked, each made while the loop is idle.

    Aggregating every task at the end took 0.3-0.7 s of the engine benchmark's finish (the bootstrap
    resamples are CPU work); done in the quiet spells between waves of replies, only the last task is left.
    """

    def __init__(self, runner: Runner, *, seed: int) -> None:
        self.runner = runner
        self.seed = seed
        self.results: dict[str, Aggregated] = {}
        self._pending: set[asyncio.Task[None]] = set()

    def schedule(self, plan: TaskPlan) -> None:
        task = asyncio.get_running_loop().create_task(self._aggregate(plan))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _aggregate(self, plan: TaskPlan) -> None:
        from rescue_bench.metrics.aggregate import aggregate_task

        await until_idle()
        done = self.runner.done
        if all(i.id in done for i in plan.instances):
            records: list[Mapping[str, Json]] = [done[i.id] for i in plan.instances]
            with contextlib.suppress(Exception):  # the finish aggregates it again, and says what is wrong
                scores = aggregate_task(
                    plan.name, plan.task.KIND, records, seed=self.seed, n_resamples=N_RESAMPLES
                )
                self.results[plan.name] = Aggregated(records, scores)

    def cancel(self) -> None:
        """Drop the aggregations not begun yet (the finish makes them)."""
        for task in list(self._pending):
            task.cancel()


def aggregate_scores(
    plans: Sequence[TaskPlan],
    records: Sequence[Mapping[str, Json]],
    *,
    seed: int = 0,
    n_resamples: int = N_RESAMPLES,
    known: Mapping[str, Aggregated] | None = None,
) -> dict[str, Any]:
    """``scores.json``: the aggregation of every task's records, plus ``_meta``.

    ``known`` holds aggregations done earlier (:class:`EarlyScores`): one is used only if it was made of these
    very records, in this order, with ``n_resamples`` resamples.
    """
    from rescue_bench.metrics.aggregate import aggregate_run, aggregate_task

    by_task: dict[str, list[Mapping[str, Json]]] = {plan.name: [] for plan in plans}
    for record in records:
        if record.get("task") in by_task:
            by_task[str(record["task"])].append(record)
    scores: dict[str, Any] = {}
    for plan in plans:
        mine = by_task[plan.name]
        done = (known or {}).get(plan.name)
        if done is not None and n_resamples == N_RESAMPLES and _same(done.records, mine):
            scores[plan.name] = done.scores
        elif mine:
            scores[plan.name] = aggregate_task(
                plan.name, plan.task.KIND, mine, seed=seed, n_resamples=n_resamples
            )
    scores["_meta"] = aggregate_run({}, seed=seed, n_resamples=n_resamples)["_meta"]
    return scores
