"""Perturbations: seeded, deterministic variants of a run that keep its instance ids, so that
``compare BASE PERTURBED`` pairs every instance with itself (docs/robustness.md).

A perturbation is named ``NAME[:ARG]`` (:data:`PERTURBATIONS`, :func:`parse_perturbations`) and acts at one
or more stages of a task: the sample before building (``no-cues``), the task config (``context:N``), the
built instances of one sample (``name-swap``, ``anonymize``, ``shuffle-window``, ``label-order``) and the
rendered request (``label-order``'s label block). :func:`perturbed_task` wraps a task so that the engine's
``build`` and ``render`` calls apply them; nothing else in the engine changes.

>>> [str(p) for p in parse_perturbations("name-swap, context:5")]
['name-swap', 'context:5']
>>> perturbation_record(parse_perturbations("label-order:2"), seed=7)["names"]
['label-order:2']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rescue_bench.data.schema import Sample
from rescue_bench.errors import ConfigError
from rescue_bench.records import Instance, Json, Prediction, Request, Score
from rescue_bench.tasks import task_info
from rescue_bench.tasks.base import Task, TaskConfig, TaskInfo
from rescue_bench.tasks.perturb.base import Context, Perturbation, PerturbationRecord
from rescue_bench.tasks.perturb.order import ORDERED_KINDS, circular_correct
from rescue_bench.tasks.perturb.stages import (
    anonymize,
    context_window,
    label_order,
    label_order_request,
    name_swap,
    no_cues,
    shuffle_window,
)

SampleStage = Callable[[Sample, Perturbation], Sample]
ConfigStage = Callable[[TaskConfig, Perturbation], TaskConfig]
InstanceStage = Callable[[Sequence[Instance], Context, Perturbation], list[Instance]]
RequestStage = Callable[[Request, Sequence[Instance]], Request]
RECORD_FORMAT = 1


@dataclass(frozen=True, slots=True)
class Definition:
    """A perturbation's stages; ``doc`` (its main stage's docstring) says what it keeps invariant."""

    name: str
    doc: str
    check_arg: Callable[[str | None], str | None]
    sample: SampleStage | None = None
    config: ConfigStage | None = None
    instances: InstanceStage | None = None
    request: RequestStage | None = None


def _no_arg(name: str) -> Callable[[str | None], str | None]:
    def check(arg: str | None) -> str | None:
        if arg is not None:
            raise ConfigError(f"perturbation {name} takes no argument (got {name}:{arg})")
        return None

    return check


def _label_order_arg(arg: str | None) -> str | None:
    if arg is None or arg == "all" or (arg.isdigit() and int(arg) >= 0):
        return arg
    raise ConfigError(f"label-order takes no argument, a rotation K >= 0 or 'all' (got label-order:{arg})")


def _context_arg(arg: str | None) -> str | None:
    if arg is not None and (arg == "all" or arg.isdigit()):
        return arg
    raise ConfigError(f"context needs N >= 0 or 'all' (context:N; got {arg!r})")


def _doc(stage: Callable[..., object]) -> str:
    return " ".join((stage.__doc__ or "").split())


PERTURBATIONS: dict[str, Definition] = {
    "label-order": Definition(
        "label-order",
        _doc(label_order),
        _label_order_arg,
        instances=label_order,
        request=label_order_request,
    ),
    "name-swap": Definition("name-swap", _doc(name_swap), _no_arg("name-swap"), instances=name_swap),
    "anonymize": Definition("anonymize", _doc(anonymize), _no_arg("anonymize"), instances=anonymize),
    "shuffle-window": Definition(
        "shuffle-window", _doc(shuffle_window), _no_arg("shuffle-window"), instances=shuffle_window
    ),
    "context": Definition("context", _doc(context_window), _context_arg, config=context_window),
    "no-cues": Definition("no-cues", _doc(no_cues), _no_arg("no-cues"), sample=no_cues),
}
"""Every perturbation by name."""
EXCLUSIVE = (frozenset({"name-swap", "anonymize"}),)
"""Perturbations that cannot be combined (both rename the participants)."""


def definition(p: Perturbation) -> Definition:
    """The :class:`Definition` of a parsed perturbation."""
    return PERTURBATIONS[p.name]


def parse_perturbation(text: str) -> Perturbation:
    """``NAME[:ARG]``; :class:`ConfigError` for an unknown name or a bad argument."""
    name, _, arg = text.strip().partition(":")
    name = name.strip().lower()
    if name not in PERTURBATIONS:
        raise ConfigError(f"unknown perturbation {text.strip()!r}; choose from {', '.join(PERTURBATIONS)}")
    return Perturbation(name, PERTURBATIONS[name].check_arg(arg.strip() if _ else None))


def parse_perturbations(names: str | Sequence[str]) -> tuple[Perturbation, ...]:
    """Comma-separated (or listed) perturbations, in order; each name at most once."""
    items = names.split(",") if isinstance(names, str) else [x for n in names for x in n.split(",")]
    parsed = tuple(parse_perturbation(item) for item in items if item.strip())
    seen = [p.name for p in parsed]
    for name in set(seen):
        if seen.count(name) > 1:
            raise ConfigError(f"perturbation {name} is given twice")
    for group in EXCLUSIVE:
        if len(group & set(seen)) > 1:
            raise ConfigError(f"perturbations {' and '.join(sorted(group))} cannot be combined")
    return parsed


class PerturbedTask:
    """A task whose ``build`` and ``render`` apply perturbations; parse and score are the task's own.

    Stages run in a fixed order whatever the order given: sample, config, instances (in the given order),
    request. The template hash (``INFO.prompt_hash``) is the task's: the perturbations are recorded beside it
    in ``run.json`` (:func:`perturbation_record`).
    """

    INFO: TaskInfo

    def __init__(self, task: Task, perturbations: Sequence[Perturbation], seed: int) -> None:
        if any(p.name == "label-order" and p.arg == "all" for p in perturbations):
            raise ConfigError("label-order:all is one task per rotation: expand it with circular_variants")
        self.task = task
        self.perturbations = tuple(perturbations)
        self.seed = seed
        self.INFO = task.INFO

    def config(self, cfg: TaskConfig) -> TaskConfig:
        for p in self.perturbations:
            stage = definition(p).config
            if stage is not None:
                cfg = stage(cfg, p)
        return cfg

    def build(self, sample: Sample, cfg: TaskConfig) -> list[Instance]:
        for p in self.perturbations:
            stage = definition(p).sample
            if stage is not None:
                sample = stage(sample, p)
        instances = self.task.build(sample, self.config(cfg))
        context = Context(sample, self.INFO, self.seed)
        for p in self.perturbations:
            step = definition(p).instances
            if step is not None:
                instances = step(instances, context, p)
        return instances

    def render(self, batch: Sequence[Instance], cfg: TaskConfig) -> Request:
        request = self.task.render(batch, self.config(cfg))
        for p in self.perturbations:
            rewrite = definition(p).request
            if rewrite is not None:
                request = rewrite(request, batch)
        return request

    def parse(self, text: str, batch: Sequence[Instance]) -> list[Prediction]:
        return self.task.parse(text, batch)

    def score(self, pred: Prediction, inst: Instance) -> Score:
        return self.task.score(pred, inst)


def perturbed_task(task: Task, names: str | Sequence[str] | Sequence[Perturbation], seed: int) -> Task:
    """``task`` with the perturbations applied at build and render time; ``task`` itself when none."""
    parsed = _parsed(names)
    return PerturbedTask(task, parsed, seed) if parsed else task


def apply_perturbations(
    task: Task,
    samples: Sequence[Sample],
    cfg: TaskConfig,
    names: str | Sequence[str] | Sequence[Perturbation],
    seed: int,
) -> list[Instance]:
    """The perturbed instances of ``task`` over ``samples`` (what a run with them would ask), in order."""
    wrapped = perturbed_task(task, names, seed)
    return [inst for sample in samples for inst in wrapped.build(sample, cfg)]


def perturbation_record(names: str | Sequence[str] | Sequence[Perturbation], seed: int) -> dict[str, Json]:
    """What ``run.json`` records (:class:`PerturbationRecord`): the perturbations as given, the seed and
    each one's invariants."""
    parsed = _parsed(names)
    record = PerturbationRecord(
        format=RECORD_FORMAT,
        names=tuple(str(p) for p in parsed),
        seed=seed,
        invariants={p.name: definition(p).doc for p in parsed},
    )
    return record.model_dump(mode="json")


def is_circular(names: str | Sequence[str] | Sequence[Perturbation]) -> bool:
    """Whether the perturbations ask for CircularEval (``label-order:all``): every rotation of the closed
    label lists, each asked as one repeat of the run (rotation r is repeat r).

    >>> is_circular("label-order:all,name-swap"), is_circular("label-order:2"), is_circular(())
    (True, False, False)
    """
    return any(p.name == "label-order" and p.arg == "all" for p in _parsed(names))


def circular_variants(
    names: str | Sequence[str] | Sequence[Perturbation], rotations: int
) -> list[tuple[Perturbation, ...]]:
    """``label-order:all`` as ``rotations`` variants ``label-order:0`` ... ``label-order:K-1`` (other
    perturbations kept in each); the names unchanged, as one variant, without ``label-order:all``.

    ``rotations`` is the longest label list of the run (:func:`rotation_count`); a shorter list repeats its
    rotations, which cannot change "correct under all".
    """
    parsed = _parsed(names)
    if not any(p.name == "label-order" and p.arg == "all" for p in parsed):
        return [parsed]
    return [
        tuple(Perturbation("label-order", str(k)) if p.name == "label-order" else p for p in parsed)
        for k in range(max(1, rotations))
    ]


def rotation_count(instances: Sequence[Instance]) -> int:
    """The longest candidate list among instances of the label-ordered kinds (RPP, STP, SSP), at least 1."""
    lengths = [len(i.candidates) for i in instances if task_info(i.task).kind in ORDERED_KINDS]
    return max([1, *lengths])


def _parsed(names: str | Sequence[str] | Sequence[Perturbation]) -> tuple[Perturbation, ...]:
    if isinstance(names, str):
        return parse_perturbations(names)
    if all(isinstance(n, Perturbation) for n in names):
        return tuple(n for n in names if isinstance(n, Perturbation))
    return parse_perturbations([str(n) for n in names])


__all__ = [
    "ORDERED_KINDS",
    "PERTURBATIONS",
    "Definition",
    "Perturbation",
    "PerturbationRecord",
    "PerturbedTask",
    "apply_perturbations",
    "circular_correct",
    "circular_variants",
    "definition",
    "is_circular",
    "parse_perturbation",
    "parse_perturbations",
    "perturbation_record",
    "perturbed_task",
    "rotation_count",
]
