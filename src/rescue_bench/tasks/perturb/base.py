"""The records every perturbation stage takes: a parsed ``NAME[:ARG]`` and what an instance stage knows."""

from __future__ import annotations

from dataclasses import dataclass

from rescue_bench.data.schema import Sample
from rescue_bench.tasks.base import TaskInfo


@dataclass(frozen=True, slots=True)
class Perturbation:
    """One parsed ``NAME[:ARG]``.

    >>> str(Perturbation("context", "3")), str(Perturbation("no-cues"))
    ('context:3', 'no-cues')
    """

    name: str
    arg: str | None = None

    def __str__(self) -> str:
        return self.name if self.arg is None else f"{self.name}:{self.arg}"


@dataclass(frozen=True, slots=True)
class Context:
    """What an instance stage knows besides the instances: their sample (after sample stages), the task and
    the run's perturbation seed."""

    sample: Sample
    info: TaskInfo
    seed: int
