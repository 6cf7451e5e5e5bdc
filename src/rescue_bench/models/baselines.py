"""Reference rows for every results table: ``baseline/random`` and ``baseline/majority``.

Both are providers that never read a prompt: :meth:`prepare` hands them every instance of the run, and each
request is answered with predictions already in each task's shape (``Reply.predictions``, docs/design.md,
"Value shapes"), so the engine records and scores them without parsing:

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
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Final, TypeVar

from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Capabilities, GenerationParams
from rescue_bench.records import Instance, Json, Prediction, Reply, Request

RANKING_TASKS: Final = frozenset({"rpp", "stp", "ssp"})
TOP_K: Final = 3

EMOTION_PHRASES: Final = (
    "feels frustrated and unheard",
    "feels hurt and dismissed",
    "feels anxious and uncertain",
    "feels sad and hopeless",
    "feels angry and defensive",
    "feels ashamed and cornered",
    "feels calm and hopeful",
    "feels relieved and understood",
)
"""Emotion phrases of the random baseline, in the style the ER prompt asks for."""

VIEWPOINT_PHRASES: Final = (
    "does not listen to me",
    "is trying to understand me",
    "blames me for the problems",
    "cares about the family",
    "is not being honest",
    "is too critical",
)
"""Viewpoints of the random baseline; the source and target come from the instance."""

_NON_TARGETS: Final = frozenset({"Couple", "Family"})
CAPABILITIES: Final = Capabilities(cacheable=False, has_endpoint=False, batch_export=False)
"""Baselines answer in no time and without an endpoint: nothing to cache, to point elsewhere or to export."""
T = TypeVar("T", bound=Hashable)


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

    async def complete(self, request: Request, params: GenerationParams) -> Reply:
        """The predictions of the request's instances (``missing`` for one not given to :meth:`prepare`)."""
        known = [self._instances[i] for i in request.instance_ids if i in self._instances]
        by_id = {p.instance_id: p for p in self.predict(known)}
        missing = "missing: the instance was not given to the baseline's prepare()"
        preds = tuple(by_id.get(i) or Prediction.failed(i, missing) for i in request.instance_ids)
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
        if inst.task == "itp":
            return Prediction(inst.id, rng.choice(("yes", "no")), True)
        if inst.task in RANKING_TASKS:
            if not inst.candidates:
                return Prediction.failed(inst.id, "missing: the instance has no candidates to choose from")
            return Prediction(
                inst.id, rng.sample(list(inst.candidates), min(TOP_K, len(inst.candidates))), True
            )
        if inst.task == "er":
            return Prediction(
                inst.id, {"emotion": rng.choice(EMOTION_PHRASES), "intensity": rng.randint(0, 10)}, True
            )
        if inst.task == "vp":
            speaker = speaker_of(inst)
            others = other_participants(inst)
            if not others:
                return Prediction.failed(
                    inst.id, "missing: the instance names no participant other than the speaker"
                )
            viewpoint = {
                "source": speaker,
                "target": rng.choice(others),
                "viewpoint": rng.choice(VIEWPOINT_PHRASES),
            }
            return Prediction(inst.id, [viewpoint], True)
        raise ConfigError(f"baseline/random has no rule for task {inst.task!r}")


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
            for pred in _majority_for(task, group):
                answers[pred.instance_id] = pred
        return [answers[inst.id] for inst in instances]


def _majority_for(task: str, group: Sequence[Instance]) -> list[Prediction]:
    """Predictions for instances that share one task and one scenario."""
    if task == "itp":
        label = most_common(str(inst.gold) for inst in group)[0]
        return [Prediction(inst.id, label, True) for inst in group]
    if task in RANKING_TASKS:
        counts = Counter(str(inst.gold) for inst in group)
        return [Prediction(inst.id, rank_by_frequency(inst.candidates, counts), True) for inst in group]
    if task == "er":
        emotion = most_common(
            str(inst.gold.get("emotion", "")) for inst in group if isinstance(inst.gold, dict)
        )
        intensity = most_common(_gold_ints(group))
        value = {"emotion": emotion[0] if emotion else "", "intensity": intensity[0] if intensity else None}
        return [Prediction(inst.id, dict(value), True) for inst in group]
    if task == "vp":
        return _majority_vp(group)
    raise ConfigError(f"baseline/majority has no rule for task {task!r}")


def _majority_vp(group: Sequence[Instance]) -> list[Prediction]:
    items = [item for inst in group for item in _gold_items(inst)]
    viewpoint = most_common(str(item.get("viewpoint", "")) for item in items)
    targets = Counter(str(item.get("target", "")) for item in items)
    preds = []
    for inst in group:
        target = rank_by_frequency(tuple(other_participants(inst)), targets)
        if not target or not viewpoint:
            preds.append(Prediction.failed(inst.id, "missing: no gold viewpoint or no other participant"))
            continue
        answer = [{"source": speaker_of(inst), "target": target[0], "viewpoint": viewpoint[0]}]
        preds.append(Prediction(inst.id, answer, True))
    return preds


def most_common(values: Iterable[T], key: Callable[[T], str] = str) -> list[T]:
    """Distinct values by frequency, most frequent first; ties in the order of ``key`` (alphabetical).

    >>> most_common(["no", "yes", "yes", "no", "maybe"])
    ['no', 'yes', 'maybe']
    """
    counts = Counter(values)
    return sorted(counts, key=lambda v: (-counts[v], key(v)))


def rank_by_frequency(candidates: Sequence[str], counts: Counter[str]) -> list[str]:
    """The instance's candidates ordered by how often each is a gold answer, top three.

    Restricting the ranking to the instance's own closed set keeps it valid where the set differs between
    samples (STP and VP targets are participant names). Candidates never seen as gold keep their order.

    >>> rank_by_frequency(("a", "b", "c", "d"), Counter({"c": 5, "b": 2, "z": 9}))
    ['c', 'b', 'a']
    """
    order = {c: i for i, c in enumerate(candidates)}
    return sorted(dict.fromkeys(candidates), key=lambda c: (-counts[c], order[c]))[:TOP_K]


def speaker_of(inst: Instance) -> str:
    """The speaker of the instance's row, as the task recorded it in ``meta``."""
    speaker = inst.meta.get("speaker")
    return speaker if isinstance(speaker, str) else ""


def other_participants(inst: Instance) -> list[str]:
    """People the speaker can hold a viewpoint about: the participants minus the speaker and group names."""
    raw = inst.meta.get("participants") or inst.candidates
    names = [p for p in raw if isinstance(p, str)] if isinstance(raw, list | tuple) else []
    speaker = speaker_of(inst)
    return [p for p in dict.fromkeys(names) if p and p != speaker and p not in _NON_TARGETS]


def _gold_items(inst: Instance) -> list[dict[str, Json]]:
    return [item for item in inst.gold if isinstance(item, dict)] if isinstance(inst.gold, list) else []


def _gold_ints(group: Sequence[Instance]) -> list[int]:
    values = (inst.gold.get("intensity") for inst in group if isinstance(inst.gold, dict))
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
