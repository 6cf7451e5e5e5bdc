"""Reference rows for every results table: ``baseline/random`` and ``baseline/majority``.

Both answer instances directly (they are predictors, not chat models) and give values in each task's own shape
(docs/design.md, "Value shapes"); each task's rule is in its module (``INFO.random_answer`` and
``INFO.majority_answers``):

* ``random``: a seeded uniform choice. ITP ``yes``/``no``; RPP, STP and SSP three distinct candidates from the
  instance's closed set in random order; ER a phrase from a small fixed list with intensity 0-10; VP
  one viewpoint of the speaker about a random other participant. Each instance has its own generator, seeded
  from the run seed and the instance id, so an answer does not depend on batching, order or resuming.
* ``majority``: the most frequent gold answer of the *evaluated instances*, per task and scenario. It reads
  the gold labels, so it is an **oracle prior**, not a model: it shows what always answering the commonest
  label scores on exactly this data. Ties go to the alphabetically first value, so order does not matter.
  Pass every evaluated instance of a task in one :meth:`MajorityBaseline.predict` call: the prior is
  computed from the instances passed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from rescue_bench.errors import ConfigError
from rescue_bench.records import Instance, Json, Prediction
from rescue_bench.tasks import get_task
from rescue_bench.tasks.guesses import (  # re-exported: they were defined here
    TOP_K,
    most_common,
    other_participants,
    rank_by_frequency,
    speaker_of,
)

__all__ = [
    "TOP_K",
    "MajorityBaseline",
    "RandomBaseline",
    "make_baseline",
    "most_common",
    "other_participants",
    "rank_by_frequency",
    "speaker_of",
]


def make_baseline(model: str, seed: int) -> RandomBaseline | MajorityBaseline:
    """The baseline named by ``baseline/<model>``.

    >>> make_baseline("random", 7).name
    'baseline/random'
    >>> make_baseline("majority", 7).identity()["oracle_prior"]
    True
    """
    if model == "random":
        return RandomBaseline(seed)
    if model == "majority":
        return MajorityBaseline()
    raise ConfigError(f"unknown baseline {model!r}; choose baseline/random or baseline/majority")


class RandomBaseline:
    """Seeded uniform guesses in each task's closed set."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.name = "baseline/random"

    def identity(self) -> dict[str, Json]:
        return {
            "provider": "baseline",
            "model": "random",
            "seed": self.seed,
            "note": "uniform random choice in each instance's answer set",
        }

    def predict(self, instances: Sequence[Instance]) -> list[Prediction]:
        return [self._one(inst) for inst in instances]

    def _one(self, inst: Instance) -> Prediction:
        # A string seed is hashed with sha512 by `random`, so it is stable across processes and platforms.
        rng = random.Random(f"rescue-bench:{self.seed}:{inst.id}")
        return get_task(inst.task).INFO.random_answer(inst, rng)


class MajorityBaseline:
    """The commonest gold answer per task and scenario: an oracle prior over the evaluated instances."""

    def __init__(self) -> None:
        self.name = "baseline/majority"

    def identity(self) -> dict[str, Json]:
        return {
            "provider": "baseline",
            "model": "majority",
            "oracle_prior": True,
            "note": "oracle prior: the most frequent gold answer of the evaluated instances per task and "
            "scenario; it reads gold labels and is not a model",
        }

    def predict(self, instances: Sequence[Instance]) -> list[Prediction]:
        groups: dict[tuple[str, str], list[Instance]] = {}
        for inst in instances:
            groups.setdefault((inst.task, inst.scenario), []).append(inst)
        answers: dict[str, Prediction] = {}
        for (task, _), group in groups.items():
            for pred in _majority_for(task, group):
                answers[pred.instance_id] = pred
        return [answers[inst.id] for inst in instances]


def _majority_for(task: str, group: Sequence[Instance]) -> list[Prediction]:
    """Predictions for instances that share one task and one scenario (``INFO.majority_answers``)."""
    return get_task(task).INFO.majority_answers(group)
