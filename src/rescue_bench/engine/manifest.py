"""What a run is (its spec, sample selection and task plans) and what ``run.json`` says about it.

``run.json`` (format 2) stores the whole :class:`~rescue_bench.spec.RunSpec` under ``spec``. Only what changes
the answers goes into ``config`` (:func:`config_record`), which a resumed session compares; how the run goes
(concurrency, rate limits, retries, cache, budget) may differ between sessions of one run. A format-1
``run.json`` (flat task options, no ``spec``) is read by :func:`upgrade_manifest`.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Final

from rescue_bench import __version__
from rescue_bench.data.schema import Sample
from rescue_bench.engine.manifest_v1 import spec_from_v1
from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Capabilities
from rescue_bench.records import Instance, Json, ProblemKind
from rescue_bench.rundir import PredictionLine, RequestLine, RunStore, describe_changes, line_key
from rescue_bench.spec import ModelSpec, RunSpec, validate_spec
from rescue_bench.tasks import TASKS, make_batches
from rescue_bench.tasks.base import Task, TaskConfig
from rescue_bench.tasks.context import context_size
from rescue_bench.tasks.perturb import (
    ORDERED_KINDS,
    circular_variants,
    is_circular,
    perturbation_record,
    perturbed_task,
    rotation_count,
)

PLAIN: Final = Capabilities()
"""What planning assumes of a model it has not built (``estimate``): an endpoint's reference batch sizes."""
FORMAT: Final = 2
"""``run.json`` format: 2 stores the spec and nests task options; 1 had them flat."""


def config_record(spec: RunSpec, tasks: Mapping[str, Task] = TASKS) -> dict[str, Json]:
    """The compared part of ``run.json``. The dataset is compared by content hash, not by path."""
    ids = None if spec.sample_ids is None else _digest(sorted(spec.sample_ids))[:16]
    model = spec.model
    options: dict[str, Json] = {n: o.model_dump(mode="json") for n, o in spec.options_of(tasks).items()}
    return {
        "model": model.name,
        "tasks": list(spec.tasks),
        "mode": spec.mode,
        "context_size": spec.context_size,
        "batch_size": spec.batch_size,
        "limit_samples": spec.limit_samples,
        "sample_ids": ids,
        "seed": model.seed,
        "temperature": model.temperature,
        "response_format": model.response_format,
        "disable_thinking": model.disable_thinking,
        "task_options": options,
        "video": video_record(spec),
        # Only a perturbed run has the key, so the config of every unperturbed run is as it was.
        **({"perturbation": perturbation_record(spec.perturb, model.seed or 0)} if spec.perturb else {}),
        **({"repeats": spec.repeats} if spec.repeats > 1 else {}),
        **generation_record(model),
    }


GENERATION_DEFAULTS: Final[dict[str, Json]] = {
    "top_p": None,
    "max_tokens": None,
    "reasoning_effort": "none",
    "extra_body": {},
}
"""Generation settings newer than the first format-2 config, with the values that keep today's requests."""


def generation_record(model: ModelSpec) -> dict[str, Json]:
    """The newer generation settings not at their defaults (so old runs keep their config and resume).

    >>> m = "openai/m"
    >>> generation_record(ModelSpec(name=m)), generation_record(ModelSpec(name=m, top_p=0.5))
    ({}, {'top_p': 0.5})
    """
    given = model.model_dump(mode="json", include=set(GENERATION_DEFAULTS))
    return {k: v for k, v in given.items() if v != GENERATION_DEFAULTS[k]}


def video_record(spec: RunSpec) -> dict[str, Json] | None:
    """The clip settings of a video-mode run (``None`` otherwise): they change what the model is sent."""
    if not spec.is_video:
        return None
    video = spec.video
    return {
        "clips": list(video.clips),
        "form": video.form,
        "frames": video.frames,
        "clip_url_base": video.clip_url_base,
        "fps": video.fps,
    }


def upgrade_manifest(manifest: Mapping[str, Json], tasks: Mapping[str, Task] = TASKS) -> dict[str, Json]:
    """``manifest`` as format 2 would record it (a format-2 one is returned as it is)."""
    if manifest.get("format", 1) != 1:
        return dict(manifest)
    spec = spec_from_v1(manifest, tasks)
    return {
        **manifest,
        "format": FORMAT,
        "config": config_record(spec, tasks),
        "spec": spec.model_dump(mode="json"),
    }


def spec_from_manifest(manifest: Mapping[str, Json], tasks: Mapping[str, Task] | None = None) -> RunSpec:
    """The run spec recorded in ``run.json`` (either format)."""
    if manifest.get("format", 1) == 1:
        return spec_from_v1(manifest, TASKS if tasks is None else tasks)
    return validate_spec(_object(manifest.get("spec"), "spec"), where="run.json: spec", tasks=tasks)


def _object(value: Json, name: str) -> dict[str, Json]:
    if not isinstance(value, dict):
        raise ConfigError(f"run.json records no {name}; was it made by this version of rescue-bench?")
    return value


def check_compatible(
    store: RunStore, manifest: Mapping[str, Json], tasks: Mapping[str, Task] = TASKS
) -> None:
    """Raise :class:`ConfigError`, naming what changed, when the directory holds a run of another config."""
    old = store.manifest()
    if old is None:
        store.check_compatible(manifest)  # no run yet: refuses only records without a run.json
        return
    changes = describe_changes(upgrade_manifest(old, tasks), manifest)
    if changes:
        listed = "; ".join(changes[:5]) + (f"; and {len(changes) - 5} more" if len(changes) > 5 else "")
        raise ConfigError(
            f"{store.root} holds a run with another configuration ({listed}); "
            "use another --out, or remove the directory to start over"
        )


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
    """Instances and batches of every requested task, in the requested order."""
    known = check_tasks(spec, tasks)
    return [plan_task(name, known, samples, spec, capabilities) for name in spec.tasks]


def check_tasks(spec: RunSpec, tasks: Mapping[str, Task] | None = None) -> Mapping[str, Task]:
    """The tasks a run may use (``tasks``, else all); a :class:`ConfigError` for an unknown one."""
    tasks = TASKS if tasks is None else tasks
    for name in spec.tasks:
        if name not in tasks:
            raise ConfigError(f"unknown task {name!r}; choose from {', '.join(tasks)} or all")
    return tasks


def plan_task(
    name: str, tasks: Mapping[str, Task], samples: Sequence[Sample], spec: RunSpec, capabilities: Capabilities
) -> TaskPlan:
    """One task's instances of every sample, and its batches (per rotation, for ``label-order:all``)."""
    seed, circular = spec.model.seed or 0, is_circular(spec.perturb)
    check_repeats(spec, tasks[name], circular)
    first = circular_variants(spec.perturb, 1)[0]
    task = perturbed_task(tasks[name], first, seed)
    cfg = spec.task_config(tasks)
    instances = tuple(inst for sample in samples for inst in task.build(sample, cfg))
    size = default_batch_size(task, cfg, capabilities)
    batches = tuple(tuple(b) for b in make_batches(instances, size))
    plan = TaskPlan(
        name, task, replace(cfg, batch_size=size), instances, batches, _prompt_hash(task, batches, cfg)
    )
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
    rows that are new. On the demo data with the local model on 2 cores, RPP took 84 s instead of 311 s (all
    six conversations, labels on 89% of rows as the demo had then).
    """
    if cfg.batch_size is not None:
        return cfg.batch_size
    if capabilities.reuses_prompt_prefix and context_size(cfg, task.DEFAULT_CONTEXT_SIZE) == -1:
        return 1
    return task.DEFAULT_BATCH_SIZE


def _prompt_hash(task: Task, batches: Sequence[Sequence[Instance]], cfg: TaskConfig) -> str:
    constant = getattr(task, "PROMPT_HASH", None)
    if isinstance(constant, str):
        return constant
    return task.render(batches[0], cfg).prompt_hash if batches else ""


def dataset_hash(samples: Sequence[Sample]) -> str:
    """sha256 of the selected samples' release form: any change of content changes it."""
    digest = hashlib.sha256()
    for sample in samples:
        digest.update(json.dumps(sample.to_release(), sort_keys=True, ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def build_manifest(
    config: RunSpec,
    samples: Sequence[Sample],
    plans: Sequence[TaskPlan],
    identity: Mapping[str, Json],
    tasks: Mapping[str, Task] = TASKS,
) -> dict[str, Json]:
    """``run.json`` at the start of a session (status ``running``)."""
    now = time.time()
    return {
        "format": FORMAT,
        "status": "running",
        "config": config_record(config, tasks),
        "spec": config.model_dump(mode="json"),
        "options": config.engine.model_dump(mode="json"),
        "package_version": __version__,
        "python": platform.python_version(),
        "git_commit": git_commit(),
        "dataset": {
            "source": config.data,
            "hash": dataset_hash(samples),
            "samples": len(samples),
            "couple": sum(s.scenario == "couple" for s in samples),
            "family": sum(s.scenario == "family" for s in samples),
        },
        "selection": {
            "data": config.data,
            "sample_ids": None if config.sample_ids is None else list(config.sample_ids),
        },
        "prompt_hashes": {plan.name: plan.prompt_hash for plan in plans},
        "batch_sizes": {plan.name: plan.cfg.batch_size for plan in plans},
        "model": dict(identity),
        "generation": asdict(config.generation_params()),
        "judges": [j.name for j in config.judges],
        "counts": {plan.name: {"instances": plan.asks} for plan in plans},
        "timings": {"created": _iso(now), "started": _iso(now), "started_unix": now, "sessions": 1},
    }


def finish_manifest(
    manifest: Mapping[str, Json],
    status: str,
    counts: Mapping[str, Json],
    started: float,
    stop_reason: str | None,
    phases: Mapping[str, float] | None = None,
) -> dict[str, Json]:
    timings = dict(manifest.get("timings") or {})
    timings.update(phases or {})
    now = time.time()
    timings.update({"finished": _iso(now), "elapsed_s": round(now - started, 3)})
    return {
        **manifest,
        "status": status,
        "counts": dict(counts),
        "timings": timings,
        "stop_reason": stop_reason,
    }


def count_run(
    plans: Sequence[TaskPlan], predictions: Sequence[PredictionLine], requests: Sequence[RequestLine]
) -> dict[str, dict[str, Json]]:
    """Per-task counts over the whole run directory (all sessions)."""
    counts: dict[str, dict[str, Json]] = {}
    for plan in plans:
        preds = [p for p in predictions if p.task == plan.name]
        counts[plan.name] = {
            "instances": plan.asks,
            **({"repeats": plan.repeats} if plan.repeats > 1 else {}),
            **_prediction_counts(preds),
            **_request_counts([r for r in requests if r.task == plan.name]),
        }
        if plan.cfg.mode == "video":
            counts[plan.name]["video_unusable"] = sum(
                bool((p.meta or {}).get("video_unusable")) for p in preds
            )
            counts[plan.name]["missing_clips"] = sum(k is ProblemKind.VIDEO for p in preds for k in p.kinds)
    return counts


def _prediction_counts(preds: Sequence[PredictionLine]) -> dict[str, Json]:
    first = [p.kinds[0] if p.kinds else None for p in preds]
    return {
        "done": len(preds),
        "valid": sum(p.valid for p in preds),
        "invalid": sum(not p.valid for p in preds),
        "request_failures": sum(k is ProblemKind.REQUEST_FAILED for k in first),
        "parse_failures": sum(k in (ProblemKind.PARSE_FAILURE, ProblemKind.MISSING) for k in first),
        "invalid_labels": sum(k is ProblemKind.INVALID_LABEL for k in first),
    }


def _request_counts(reqs: Sequence[RequestLine]) -> dict[str, Json]:
    paid = [r for r in reqs if not r.cached]
    answered = [r for r in reqs if r.error is None]
    return {
        "requests": len(reqs),
        "single_retries": sum(r.single for r in reqs),
        "cache_hits": len(reqs) - len(paid),
        "retries": sum(max(0, r.attempts - 1) for r in reqs),
        "failures": sum(r.error is not None for r in reqs),
        "refusals": sum(r.refused for r in reqs),
        "masked": sum(r.masked for r in reqs),
        "tokens": {
            "prompt_tokens": sum(r.usage.prompt_tokens for r in paid),
            "completion_tokens": sum(r.usage.completion_tokens for r in paid),
            "reasoning_tokens": sum(r.usage.reasoning_tokens for r in paid),
        },
        # Replies cut off at the output cap, and replies with no answer after their reasoning: their instances
        # are parse failures (counted above); these say why, which a reasoning model's run needs to know.
        "truncated": sum(r.reply.finish_reason == "length" for r in answered),
        "empty_after_reasoning": sum(_empty_after_reasoning(r) for r in answered),
    }


def _empty_after_reasoning(line: RequestLine) -> bool:
    """A reply that reasoned (text or tokens) and then gave no answer."""
    reasoned = bool((line.reply.reasoning or "").strip()) or line.usage.reasoning_tokens > 0
    return reasoned and not line.reply.text.strip()


def git_commit() -> str | None:
    """The commit of the source checkout this package runs from; ``None`` for an installed package."""
    here = Path(__file__).resolve().parent
    if "site-packages" in here.parts:
        return None
    try:
        result = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = result.stdout.strip()
    return commit if result.returncode == 0 and len(commit) == 40 else None


def _digest(obj: Json) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def _iso(timestamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))
