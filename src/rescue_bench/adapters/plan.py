"""What a run of one task asks and how a reply becomes prediction records, without the engine.

The adapters (inspect_ai, lm-eval) plan their requests here so that they send the very prompts
``rescue-bench run`` sends: the same samples (``--data``, ``--limit-samples``), the same instances
(``build``), the same batches (``make_batches``) and the same rendered messages (``render``). A reply is
parsed and scored by the task itself and turned into a ``predictions.jsonl`` line (docs/design.md), so the
corpus metrics come from :mod:`rescue_bench.metrics.aggregate` over the same records as a run's
``scores.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rescue_bench.data.load import load_samples
from rescue_bench.engine.batch import config_from_manifest
from rescue_bench.errors import ConfigError
from rescue_bench.metrics.aggregate import point_values, scope_labels, scope_records
from rescue_bench.records import Instance, Json, Prediction, Request
from rescue_bench.rundir import PredictionLine
from rescue_bench.tasks import batch_size, get_task, make_batches
from rescue_bench.tasks.base import GoldField, Task, TaskConfig, resolve_mode


@dataclass(frozen=True, slots=True)
class TaskArgs:
    """The run-spec settings an adapter task takes (inspect ``-T``, lm-eval ``metadata``)."""

    task: str
    data: str = "demo"
    mode: str = "dialogue"
    context_size: int | None = None
    batch_size: int | None = None
    limit_samples: int | None = None
    rpp_gold_field: GoldField = "auto"
    rpp_include_current_turn: bool = False
    ssp_include_target_emotion: bool = False
    checkpoints_per_sample: int = 5

    def task_config(self) -> TaskConfig:
        """The :class:`TaskConfig` ``rescue-bench run`` builds from the same flags."""
        mode = resolve_mode(self.mode)
        if mode == "video":
            raise ConfigError("video mode needs the engine's clip attachment; use `rescue-bench run`")
        if self.checkpoints_per_sample < 1:
            raise ConfigError(
                f"checkpoints_per_sample must be at least 1 (got {self.checkpoints_per_sample})"
            )
        # The flat settings are those of a format-1 run.json: the engine's reader of that format turns them
        # into the nested task options, exactly as for an old run directory.
        recorded = {
            "format": 1,
            "config": self.config_record("baseline/random"),
            "selection": {"data": self.data, "sample_ids": None},
        }
        return config_from_manifest(recorded).task_config()

    def config_record(self, model: str) -> dict[str, Json]:
        """The ``config`` part of ``run.json`` for a run directory made from an adapter's log."""
        return {
            "model": model,
            "tasks": [self.task],
            "mode": self.mode,
            "context_size": self.context_size,
            "batch_size": self.batch_size,
            "limit_samples": self.limit_samples,
            "rpp_gold_field": self.rpp_gold_field,
            "rpp_include_current_turn": self.rpp_include_current_turn,
            "ssp_include_target_emotion": self.ssp_include_target_emotion,
            "checkpoints_per_sample": self.checkpoints_per_sample,
        }


@dataclass(frozen=True, slots=True)
class Plan:
    """One task's batches and their rendered requests, in run order."""

    args: TaskArgs
    task: Task
    cfg: TaskConfig
    batches: tuple[tuple[Instance, ...], ...]
    requests: tuple[Request, ...]


def plan(args: TaskArgs) -> Plan:
    """Load the samples and build, batch and render the task as ``rescue-bench run`` does (API models)."""
    task = get_task(args.task)
    cfg = args.task_config()
    samples = load_samples(args.data)
    if args.limit_samples is not None:
        if args.limit_samples < 1:
            raise ConfigError(f"limit_samples must be at least 1 (got {args.limit_samples})")
        samples = samples[: args.limit_samples]
    instances = [inst for sample in samples for inst in task.build(sample, cfg)]
    size = batch_size(task, cfg)
    batches = tuple(tuple(b) for b in make_batches(instances, size))
    requests = tuple(task.render(b, cfg) for b in batches)
    return Plan(args, task, cfg, batches, requests)


TRUNCATED = "parse_failure: truncated reply (finish_reason=length)"
"""The engine's problem for every instance of a reply cut off at the token limit (none of it counts)."""


def predictions_of(
    task: Task,
    batch: Sequence[Instance],
    text: str | None,
    *,
    error: str | None = None,
    truncated: bool = False,
) -> list[Prediction]:
    """One prediction per instance of ``batch``, with the engine's rules (``engine.outcomes``): a failed
    request, a truncated reply, a parser error and a missing item each make a failed prediction."""
    if error is not None or text is None:
        return [Prediction.failed(i.id, f"request_failed: {error or 'no reply'}") for i in batch]
    if truncated:
        return [Prediction.failed(i.id, TRUNCATED) for i in batch]
    try:
        parsed = task.parse(text, batch)
    except Exception as exc:  # parse() must not raise on model text; if it does, the answer counts as wrong
        return [
            Prediction.failed(i.id, f"parse_failure: parser error {exc.__class__.__name__}") for i in batch
        ]
    by_id = {p.instance_id: p for p in parsed}
    return [
        by_id.get(i.id) or Prediction.failed(i.id, "missing: no answer for this item in the reply")
        for i in batch
    ]


def prediction_record(task: Task, inst: Instance, pred: Prediction, *, single: bool) -> PredictionLine:
    """One ``predictions.jsonl`` line (docs/design.md), scored by the task itself."""
    return PredictionLine(
        instance_id=inst.id,
        task=inst.task,
        sample_id=inst.sample_id,
        scenario=inst.scenario,
        row_index=inst.row_index,
        gold=inst.gold,
        valid=pred.valid,
        prediction=pred.value,
        problems=pred.problems,
        meta=inst.meta,
        scores=task.score(pred, inst).metrics,
        request_key=None,
        single=single,
    )


def batch_records(
    task: Task,
    batch: Sequence[Instance],
    text: str | None,
    *,
    error: str | None = None,
    truncated: bool = False,
) -> list[PredictionLine]:
    """The prediction lines of one batch's reply."""
    preds = predictions_of(task, batch, text, error=error, truncated=truncated)
    return [
        prediction_record(task, inst, pred, single=len(batch) == 1)
        for inst, pred in zip(batch, preds, strict=True)
    ]


def corpus_values(task: Task, records: Sequence[PredictionLine]) -> dict[str, float | None]:
    """Headline metrics per scope (``<scope>_<metric>``) of ``records``: ``scores.json``'s point values."""
    spec = task.INFO.metrics
    out: dict[str, float | None] = {}
    for scope, members in scope_records(list(records)).items():
        labels = scope_labels(members, None) if spec.kind == "multiclass" else ()
        for name, value in point_values(spec, members, labels).items():
            out[f"{scope}_{name}"] = None if value is None else float(value)
    return out
