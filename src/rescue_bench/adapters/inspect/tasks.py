"""Every registered RESCUE-Bench task as an inspect_ai task (``rescue_bench/<task>``).

One inspect sample is one request batch of ``rescue-bench run``: its messages are our own ``render`` output
(byte for byte), it is generated with the task's JSON schema as the response schema and the task's output cap,
and it is scored by :func:`rescue_bench.adapters.inspect.scoring.rescue_scorer` with our own ``parse`` and
``score``.

The tasks are made from the registry (:data:`rescue_bench.tasks.TASKS`, built-ins and outside plugins alike)
when this module is imported: :func:`task_factory` gives each a factory registered with inspect's ``task``
decorator under the task's name. Its parameters (what ``-T`` takes) are the settings every task has
(:data:`~rescue_bench.adapters.plan.COMMON`), ``temperature`` and ``seed``, and the fields of the task's
``INFO.options`` model with their defaults; inspect reads them from the factory's ``__signature__``, so an
unknown ``-T`` name gets inspect's own warning.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable
from typing import Any, get_type_hints

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.solver import Generate, Solver, TaskState, solver

from rescue_bench.adapters.inspect.messages import chat_messages, response_schema
from rescue_bench.adapters.inspect.scoring import rescue_scorer
from rescue_bench.adapters.plan import COMMON, Plan, TaskArgs, plan, task_args
from rescue_bench.errors import ConfigError
from rescue_bench.records import Json
from rescue_bench.spec import options_model
from rescue_bench.tasks import TASKS
from rescue_bench.tasks import Task as BenchTask


def sample_id(index: int) -> str:
    """The inspect sample id of the ``index``-th batch (0-based), in run order."""
    return f"batch-{index + 1:05d}"


def samples(the_plan: Plan) -> list[Sample]:
    """One inspect sample per request batch, carrying what the solver needs to ask it as the run does."""
    return [
        Sample(
            id=sample_id(index),
            input=chat_messages(request),
            # The gold of each instance, shown in ``inspect view`` (the messages never hold it).
            target=[f"{inst.id}: {json.dumps(inst.gold, ensure_ascii=False)}" for inst in batch],
            metadata={
                "task": the_plan.args.task,
                "instance_ids": list(request.instance_ids),
                "sample_id": batch[0].sample_id,
                "scenario": batch[0].scenario,
                "response_schema": request.response_schema,
                "max_tokens": request.max_tokens,
                "prompt_hash": request.prompt_hash,
            },
        )
        for index, (batch, request) in enumerate(zip(the_plan.batches, the_plan.requests, strict=True))
    ]


@solver
def ask_with_schema(temperature: float = 0.0, seed: int | None = None) -> Solver:
    """Generate once with the sample's JSON schema as the response schema and the task's output cap."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        schema: dict[str, Json] = state.metadata["response_schema"]
        response = response_schema(f"rescue_bench_{state.metadata['task']}", schema)
        return await generate(
            state,
            tool_calls="none",
            response_schema=response,
            max_tokens=int(state.metadata["max_tokens"]),
            temperature=temperature,
            seed=seed,
        )

    return solve


def rescue_task(args: TaskArgs, *, temperature: float = 0.0, seed: int | None = None) -> Task:
    """The inspect task of ``args``: its batches as samples, our solver settings and our scorer."""
    the_plan = plan(args)
    if not the_plan.batches:
        raise ConfigError(f"{args.task}: no instances in {args.data}")
    by_id = {sample_id(i): batch for i, batch in enumerate(the_plan.batches)}
    return Task(
        dataset=MemoryDataset(samples(the_plan), name=f"rescue_bench_{args.task}"),
        solver=ask_with_schema(temperature, seed),
        scorer=rescue_scorer(args.task, by_id),
        config=GenerateConfig(temperature=temperature),
        metadata={"rescue_bench": {"task_args": args.to_json(), "temperature": temperature, "seed": seed}},
        name=args.task,
    )


def _parameter(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return inspect.Parameter(name, kind, default=default, annotation=annotation)


GENERATION = (
    _parameter("temperature", float, 0.0),
    _parameter("seed", int | None, None),
)
"""How the candidate generates: inspect's ``GenerateConfig`` (the run spec's model settings)."""


def task_signature(bench: BenchTask) -> inspect.Signature:
    """The parameters of ``bench``'s inspect task: the common settings (as :class:`TaskArgs` has them), how
    the model generates, then the task's own options (its ``INFO.options`` fields) with their defaults."""
    defaults, hints = TaskArgs(bench.INFO.name), get_type_hints(TaskArgs)
    common = [_parameter(name, hints[name], getattr(defaults, name)) for name in COMMON]
    model = options_model(bench)
    fields = model.model_fields if model is not None else {}
    taken = {p.name for p in (*common, *GENERATION)}
    for name, info in fields.items():
        if name in taken or info.is_required():
            why = "has the name of a common setting" if name in taken else "has no default"
            raise ConfigError(f"task {bench.INFO.name}: option {name!r} {why}")
    options = [
        _parameter(name, info.annotation, info.get_default(call_default_factory=True))
        for name, info in fields.items()
    ]
    return inspect.Signature([*common, *GENERATION, *options], return_annotation=Task)


def task_doc(bench: BenchTask) -> str:
    """The inspect task's docstring: the task module's summary line, its metrics, judge and options."""
    info = bench.INFO
    summary = (bench.__doc__ or info.name).strip().splitlines()[0]
    lines = [summary, "", f"Metrics (per scope): {', '.join(info.headline)}."]
    if info.judge is not None:
        lines.append(f"Judged by the `grader` model role with the rubric {info.judge.title!r}.")
    model = options_model(bench)
    if model is not None and model.model_fields:
        lines += ["", "Options:"]
        lines += [f"    {name}: {f.description or ''}" for name, f in model.model_fields.items()]
    return "\n".join(lines)


def task_factory(bench: BenchTask) -> Callable[..., Task]:
    """The inspect task factory of ``bench``, registered as ``rescue_bench/<name>``."""
    signature = task_signature(bench)

    def factory(*given: Any, **kwargs: Any) -> Task:
        bound = signature.bind(*given, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        temperature, seed = values.pop("temperature"), values.pop("seed")
        common = {name: values.pop(name) for name in COMMON}
        args = task_args({**common, "options": values}, bench.INFO.name)  # typed as the settings of a record
        return rescue_task(args, temperature=temperature, seed=seed)

    factory.__signature__ = signature  # type: ignore[attr-defined]  # what inspect.signature reads
    factory.__name__ = factory.__qualname__ = bench.INFO.name
    factory.__doc__ = task_doc(bench)
    return task(name=bench.INFO.name)(factory)


def _factories() -> dict[str, Callable[..., Task]]:
    made = {}
    for name, bench in TASKS.items():
        try:
            made[name] = task_factory(bench)
        except ConfigError as exc:  # one plugin's bad options must not take the other tasks away
            logging.getLogger(__name__).warning("warning: inspect task left out: %s", exc)
    return made


FACTORIES: dict[str, Callable[..., Task]] = _factories()
"""The inspect task factory of every registered task, by task name (registered with inspect on import)."""
