"""Shared pieces of the baselines' per-task rules (``INFO.random_answer`` and ``INFO.majority_answers``).

The rules live with their tasks; this module holds what several of them use: the closed-set rules of the
label and ranking tasks, and the frequency ordering of the majority baseline. Ties go to the alphabetically
first value, so the order of instances does not matter.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Final, TypeVar

from rescue_bench.records import Instance, Prediction
from rescue_bench.tasks.prompts import shown

TOP_K: Final = 3
"""Answers of a ranking task."""
_NON_TARGETS: Final = frozenset({"Couple", "Family"})
T = TypeVar("T", bound=Hashable)


def random_label(inst: Instance, rng: random.Random) -> Prediction:
    """One of the instance's labels, uniformly."""
    if not inst.candidates:
        return Prediction.failed(inst.id, "missing: the instance has no candidates to choose from")
    return Prediction(inst.id, rng.choice(inst.candidates), True)


def random_ranking(inst: Instance, rng: random.Random) -> Prediction:
    """Three distinct candidates (all, if fewer) in random order."""
    if not inst.candidates:
        return Prediction.failed(inst.id, "missing: the instance has no candidates to choose from")
    return Prediction(inst.id, rng.sample(list(inst.candidates), min(TOP_K, len(inst.candidates))), True)


def majority_label(group: Sequence[Instance]) -> list[Prediction]:
    """The commonest gold label of the group, for every instance."""
    label = most_common(str(inst.gold) for inst in group)[0]
    return [Prediction(inst.id, label, True) for inst in group]


def majority_ranking(group: Sequence[Instance]) -> list[Prediction]:
    """Each instance's candidates ranked by how often each is a gold answer in the group."""
    counts = Counter(str(inst.gold) for inst in group)
    return [Prediction(inst.id, rank_by_frequency(inst.candidates, counts), True) for inst in group]


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
    """The speaker of the instance's row, as its prompt shows them (renamed under ``name-swap``)."""
    return shown(inst).speaker or ""


def other_participants(inst: Instance) -> list[str]:
    """People the speaker can hold a viewpoint about, as the prompt shows them: the participants (else the
    candidates) minus the speaker and group names."""
    names = shown(inst).participants or inst.candidates
    speaker = speaker_of(inst)
    return [p for p in dict.fromkeys(names) if p and p != speaker and p not in _NON_TARGETS]
