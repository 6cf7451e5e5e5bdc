"""The records every perturbation stage takes: a parsed ``NAME[:ARG]`` and what an instance stage knows."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.data.schema import Sample
from rescue_bench.records import Json
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


class PerturbationRecord(BaseModel):
    """``run.json``'s ``perturbation`` (written by :func:`rescue_bench.tasks.perturb.perturbation_record`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: int = 1
    names: tuple[str, ...] = ()
    seed: int = 0
    invariants: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def of(cls, record: dict[str, Json] | None) -> PerturbationRecord | None:
        """The typed record of a manifest's ``perturbation``, ``None`` for an unperturbed run.

        >>> PerturbationRecord.of({"names": ["context:3"], "seed": 1}).label, PerturbationRecord.of(None)
        ('context:3', None)
        """
        return None if record is None else cls.model_validate(record)

    @property
    def label(self) -> str:
        """The perturbations as given, comma-joined."""
        return ",".join(self.names)
