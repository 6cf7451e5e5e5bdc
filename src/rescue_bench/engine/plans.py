"""What a run asks: the samples it selects and each task's plan (instances, batches, repeats, rotations)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from rescue_bench.data.schema import Sample
from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Capabilities
from rescue_bench.records import Instance
from rescue_bench.rundir import line_key
from rescue_bench.spec import RunSpec
from rescue_bench.tasks import TASKS, make_batches
from rescue_bench.tasks.base import Task, TaskConfig
from rescue_bench.tasks.perturb import (
    ORDERED_KINDS,
    circular_variants,
    is_circular,
    perturbed_task,
    rotation_count,
)

PLAIN: Final = Capabilities()
"""What planning assumes of a model it has not built (``estimate``): an endpoint's reference batch sizes."""


@dataclass(frozen=True, slots=True)
class TaskPlan:
    """One task of a run: its settings, all its instances and their batches."""

    name: str
    task: Task
    cfg: TaskConfig
    instances: tuple[Instance, ...]
    batches: tuple[tuple[Instance, ...], ...]
    prompt_hash: str
    repeats: int = 1
    """How often every instance is asked (``repeats``, or a CircularEval task's rotations)."""
    rotated: tuple[tuple[tuple[Instance, ...], ...], ...] = ()
    """CircularEval (``label-order:all``): the batches of repeats 1, 2, ... (rotation r is repeat r);
    empty when every repeat asks :attr:`batches`."""

    def batches_of(self, repeat: int) -> tuple[tuple[Instance, ...], ...]:
        """The batches asked for ``repeat`` (the same instance ids in every repeat)."""
        return self.rotated[repeat - 1] if repeat > 0 and self.rotated else self.batches

    @property
    def asks(self) -> int:
        """Instances times repeats: how many prediction lines the task ends with."""
        return len(self.instances) * self.repeats

    def line_keys(self) -> list[str]:
        """Every prediction line's key (:func:`~rescue_bench.rundir.line_key`), repeat by repeat."""
        return [line_key(inst.id, r) for r in range(self.repeats) for inst in self.instances]


def select_samples(samples: Sequence[Sample], config: RunSpec) -> list[Sample]:
    """``--sample-ids`` (in data order), then the first ``--limit-samples`` of those."""
    chosen = list(samples)
    if config.sample_ids is not None:
        wanted = set(config.sample_ids)
        known = {s.sample_id for s in chosen}
        unknown = sorted(wanted - known)
        if unknown:
            more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
            raise ConfigError(f"--sample-ids: sample {unknown[0]!r} is not in {config.data}{more}")
        chosen = [s for s in chosen if s.sample_id in wanted]
    if config.limit_samples is not None:
        chosen = chosen[: config.limit_samples]
    if not chosen:
        raise ConfigError(f"no samples selected from {config.data}")
    return chosen


def build_plans(
    samples: Sequence[Sample],
    spec: RunSpec,
    tasks: Mapping[str, Task] | None = None,
    capabilities: Capabilities = PLAIN,
) -> list[TaskPlan]:
    """Instances and batches of every requested task, in the requested order.

    The tasks are built with one config, whose :class:`~rescue_bench.tasks.base.RowCache` renders each
    sample's rows once for all of them; it lives as long as the plans' instances refer to its rows.
    """
    known = check_tasks(spec, tasks)
    cfg = spec.task_config(known)
    return [plan_task(name, known, samples, spec, capabilities, cfg) for name in spec.tasks]


def check_tasks(spec: RunSpec, tasks: Mapping[str, Task] | None = None) -> Mapping[str, Task]:
    """The tasks a run may use (``tasks``, else all); a :class:`ConfigError` for an unknown one."""
    tasks = TASKS if tasks is None else tasks
    for name in spec.tasks:
        if name not in tasks:
            raise ConfigError(f"unknown task {name!r}; choose from {', '.join(tasks)} or all")
    return tasks


def plan_task(
    name: str,
    tasks: Mapping[str, Task],
    samples: Sequence[Sample],
    spec: RunSpec,
    capabilities: Capabilities,
    shared: TaskConfig | None = None,
) -> TaskPlan:
    """One task's instances of every sample, and its batches (per rotation, for ``label-order:all``).

    ``shared`` is the config of the run's tasks (:func:`build_plans`), else the spec's; the plan's own has the
    task's sizes resolved, here and only here.
    """
    seed, circular = spec.model.seed or 0, is_circular(spec.perturb)
    check_repeats(spec, tasks[name], circular)
    first = circular_variants(spec.perturb, 1)[0]
    task = perturbed_task(tasks[name], first, seed)
    given = spec.task_config(tasks) if shared is None else shared
    size = default_batch_size(task, given, capabilities)
    cfg = replace(given, context_size=given.shown_size(task.INFO), batch_size=size)
    instances = tuple(inst for sample in samples for inst in task.build(sample, cfg))
    batches = tuple(tuple(b) for b in make_batches(instances, size))
    plan = TaskPlan(name, task, cfg, instances, batches, _prompt_hash(task, batches, cfg))
    if not circular:
        return replace(plan, repeats=spec.repeats)
    if task.INFO.kind not in ORDERED_KINDS:
        return plan
    rotations = circular_variants(spec.perturb, rotation_count(instances))[1:]
    rotated = tuple(_batches(perturbed_task(tasks[name], v, seed), samples, cfg, size) for v in rotations)
    return replace(plan, repeats=1 + len(rotated), rotated=rotated)


def check_repeats(spec: RunSpec, task: Task, circular: bool) -> None:
    """Refuse, in one line, the repeat settings a run cannot honour (before anything is written)."""
    if circular and spec.repeats > 1:
        raise ConfigError("--repeats: label-order:all asks each rotation as a repeat; give one or the other")


def _batches(
    task: Task, samples: Sequence[Sample], cfg: TaskConfig, size: int
) -> tuple[tuple[Instance, ...], ...]:
    instances = [inst for sample in samples for inst in task.build(sample, cfg)]
    return tuple(tuple(b) for b in make_batches(instances, size))


def default_batch_size(task: Task, cfg: TaskConfig, capabilities: Capabilities) -> int:
    """Instances per request: ``--batch-size``, else the task's reference size, except one for a model that
    re-uses prompt prefixes (in process) when the items carry the whole earlier transcript (context -1, RPP's
    default).

    Batching shares one request's instructions among its items, but a batch of full-history items repeats the
    transcript once per item. An API bills requests, so the reference sizes stand there. An in-process model
    pays for compute only, and its KV cache re-uses what consecutive one-item prompts share (the instructions
    and the earlier rows: RPP puts the rows before the target line), so that each request evaluates only the
    rows that are new (``benchmarks/bench_demo.py`` prints the local model's time per task).
    """
    if cfg.batch_size is not None:
        return cfg.batch_size
    if capabilities.reuses_prompt_prefix and cfg.shown_size(task.INFO) == -1:
        return 1
    return task.INFO.default_batch_size


def _prompt_hash(task: Task, batches: Sequence[Sequence[Instance]], cfg: TaskConfig) -> str:
    if task.INFO.prompt_hash:
        return task.INFO.prompt_hash
    return task.render(batches[0], cfg).prompt_hash if batches else ""
