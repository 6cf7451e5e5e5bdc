"""Reference rows for every results table: ``baseline/random`` and ``baseline/majority``.

Both are providers that never read a prompt: :meth:`prepare` hands them every instance of the run, and each
request is answered with predictions already in each task's shape (``Reply.predictions``, docs/design.md,
"Value shapes"), so the engine records and scores them without parsing. Each task's rule lives in its own
module (``INFO.random_answer`` and ``INFO.majority_answers``):

* ``random``: a seeded uniform choice. ITP ``yes``/``no``; RPP, STP and SSP three distinct candidates from the
  instance's closed set in random order; ER a phrase from a small fixed list with intensity 0-10; VP
  one viewpoint of the speaker about a random other participant. Each instance has its own generator, seeded
  from the run seed and the instance id, so an answer does not depend on batching, order or resuming.
* ``majority``: the most frequent gold answer of the *evaluated instances*, per task and scenario. It reads
  the gold labels, so it is an **oracle prior**, not a model: it shows what always answering the commonest
  label scores on exactly this data. Ties go to the alphabetically first value, so order does not matter.
  The prior is computed from the instances given to :meth:`MajorityBaseline.prepare` (every instance of the
  run, so a resumed session answers what one session would have).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Final

from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Capabilities, Generation, Provider
from rescue_bench.records import Instance, Json, Prediction, Reply, Request
from rescue_bench.tasks import get_task

__all__ = [
    "CAPABILITIES",
    "MajorityBaseline",
    "RandomBaseline",
    "make_baseline",
]

CAPABILITIES: Final = Capabilities(
    cacheable=False,
    has_endpoint=False,
    batch_export=False,
    reads_prompts=False,
    settings=frozenset({"seed"}),
)
"""Baselines answer in no time, for free and without an endpoint: nothing to cache, to point elsewhere, to
export or to budget; nothing is generated, so of the settings only the seed counts (it seeds
``baseline/random``) and no reasoning can be asked for."""
MISSING: Final = "missing: the instance was not given to the baseline's prepare()"


def make_baseline(model: str, seed: int) -> Provider:
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


class _Baseline:
    """What both baselines share: the run's instances, and replies made of predictions."""

    name: str
    capabilities: Capabilities = CAPABILITIES

    def __init__(self) -> None:
        self._instances: dict[str, Instance] = {}

    def prepare(self, instances: Sequence[Instance]) -> None:
        self._instances = {inst.id: inst for inst in instances}

    def predict(self, instances: Sequence[Instance]) -> list[Prediction]:
        raise NotImplementedError

    async def complete(self, request: Request, params: Generation) -> Reply:
        """The predictions of the request's instances (``missing`` for one not given to :meth:`prepare`)."""
        known = [self._instances[i] for i in request.instance_ids if i in self._instances]
        by_id = {p.instance_id: p for p in self.predict(known)}
        preds = tuple(by_id.get(i) or Prediction.failed(i, MISSING) for i in request.instance_ids)
        return Reply(predictions=preds, finish_reason="stop")

    async def aclose(self) -> None:
        return None


class RandomBaseline(_Baseline):
    """Seeded uniform guesses in each task's closed set."""

    def __init__(self, seed: int) -> None:
        super().__init__()
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


class MajorityBaseline(_Baseline):
    """The commonest gold answer per task and scenario: an oracle prior over the evaluated instances."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "baseline/majority"
        self._answers: dict[str, Prediction] = {}

    def prepare(self, instances: Sequence[Instance]) -> None:
        super().prepare(instances)
        self._answers = {p.instance_id: p for p in self.prior(instances)}

    def identity(self) -> dict[str, Json]:
        return {
            "provider": "baseline",
            "model": "majority",
            "oracle_prior": True,
            "note": "oracle prior: the most frequent gold answer of the evaluated instances per task and "
            "scenario; it reads gold labels and is not a model",
        }

    def predict(self, instances: Sequence[Instance]) -> list[Prediction]:
        """The answers of the prior made in :meth:`prepare`; without one, of the prior of ``instances``."""
        if not self._answers:
            return self.prior(instances)
        return [self._answers[inst.id] for inst in instances]

    def prior(self, instances: Sequence[Instance]) -> list[Prediction]:
        """The majority answers of ``instances``, the prior made of these very instances."""
        groups: dict[tuple[str, str], list[Instance]] = {}
        for inst in instances:
            groups.setdefault((inst.task, inst.scenario), []).append(inst)
        answers: dict[str, Prediction] = {}
        for (task, _), group in groups.items():
            for pred in get_task(task).INFO.majority_answers(group):
                answers[pred.instance_id] = pred
        return [answers[inst.id] for inst in instances]
