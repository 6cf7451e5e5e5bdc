"""The six RESCUE-Bench tasks as inspect_ai tasks.

One inspect sample is one request batch of ``rescue-bench run``: its messages are our own ``render`` output
(byte for byte), it is generated with the task's JSON schema as the response schema and the task's output cap,
and it is scored by :func:`rescue_bench.adapters.inspect.scoring.rescue_scorer` with our own ``parse`` and
``score``. Task arguments (``-T``) mirror the run spec's flags.
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.solver import Generate, Solver, TaskState, solver

from rescue_bench.adapters.inspect.messages import chat_messages, response_schema
from rescue_bench.adapters.inspect.scoring import rescue_scorer
from rescue_bench.adapters.plan import Plan, TaskArgs, plan
from rescue_bench.errors import ConfigError
from rescue_bench.records import Json
from rescue_bench.tasks.base import GoldField


def sample_id(index: int) -> str:
    """The inspect sample id of the ``index``-th batch (0-based), in run order."""
    return f"batch-{index + 1:05d}"


def samples(the_plan: Plan) -> list[Sample]:
    """One inspect sample per request batch, carrying what the solver needs to ask it as the run does."""
    return [
        Sample(
            id=sample_id(index),
            input=chat_messages(request),
            target=[],
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
        metadata={
            "rescue_bench": {"task_args": _args_record(args), "temperature": temperature, "seed": seed}
        },
        name=args.task,
    )


def _args_record(args: TaskArgs) -> dict[str, Any]:
    return {name: getattr(args, name) for name in TaskArgs.__dataclass_fields__}


def _make(
    name: str,
    data: str,
    mode: str,
    context_size: int | None,
    batch_size: int | None,
    limit_samples: int | None,
    temperature: float,
    seed: int | None,
    **options: Any,
) -> Task:
    args = TaskArgs(name, data, mode, context_size, batch_size, limit_samples, **options)
    return rescue_task(args, temperature=temperature, seed=seed)


@task
def itp(
    data: str = "demo",
    mode: str = "dialogue",
    context_size: int | None = None,
    batch_size: int | None = None,
    limit_samples: int | None = None,
    temperature: float = 0.0,
    seed: int | None = None,
) -> Task:
    """ITP, intervention timing prediction (precision, recall, F1)."""
    return _make("itp", data, mode, context_size, batch_size, limit_samples, temperature, seed)


@task
def rpp(
    data: str = "demo",
    mode: str = "dialogue",
    context_size: int | None = None,
    batch_size: int | None = None,
    limit_samples: int | None = None,
    temperature: float = 0.0,
    seed: int | None = None,
    gold_field: GoldField = "auto",
    include_current_turn: bool = False,
) -> Task:
    """RPP, relation pattern prediction (accuracy, macro-F1)."""
    return _make(
        "rpp",
        data,
        mode,
        context_size,
        batch_size,
        limit_samples,
        temperature,
        seed,
        rpp_gold_field=gold_field,
        rpp_include_current_turn=include_current_turn,
    )


@task
def stp(
    data: str = "demo",
    mode: str = "dialogue",
    context_size: int | None = None,
    batch_size: int | None = None,
    limit_samples: int | None = None,
    temperature: float = 0.0,
    seed: int | None = None,
) -> Task:
    """STP, support target prediction (Recall@k, MRR)."""
    return _make("stp", data, mode, context_size, batch_size, limit_samples, temperature, seed)


@task
def ssp(
    data: str = "demo",
    mode: str = "dialogue",
    context_size: int | None = None,
    batch_size: int | None = None,
    limit_samples: int | None = None,
    temperature: float = 0.0,
    seed: int | None = None,
    include_target_emotion: bool = False,
) -> Task:
    """SSP, support strategy prediction (Recall@k, MRR)."""
    return _make(
        "ssp",
        data,
        mode,
        context_size,
        batch_size,
        limit_samples,
        temperature,
        seed,
        ssp_include_target_emotion=include_target_emotion,
    )


@task
def er(
    data: str = "demo",
    mode: str = "dialogue",
    context_size: int | None = None,
    batch_size: int | None = None,
    limit_samples: int | None = None,
    temperature: float = 0.0,
    seed: int | None = None,
    checkpoints_per_sample: int = 5,
) -> Task:
    """ER, emotion recognition; judged by the ``grader`` model role with our rubric."""
    return _make(
        "er",
        data,
        mode,
        context_size,
        batch_size,
        limit_samples,
        temperature,
        seed,
        checkpoints_per_sample=checkpoints_per_sample,
    )


@task
def vp(
    data: str = "demo",
    mode: str = "dialogue",
    context_size: int | None = None,
    batch_size: int | None = None,
    limit_samples: int | None = None,
    temperature: float = 0.0,
    seed: int | None = None,
    checkpoints_per_sample: int = 5,
) -> Task:
    """VP, viewpoint prediction; judged by the ``grader`` model role with our rubric."""
    return _make(
        "vp",
        data,
        mode,
        context_size,
        batch_size,
        limit_samples,
        temperature,
        seed,
        checkpoints_per_sample=checkpoints_per_sample,
    )
