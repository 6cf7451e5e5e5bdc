"""What a run is (its config, sample selection and task plans) and what ``run.json`` says about it.

Only what changes the answers goes into ``config`` (and is compared on resume); how the run goes (concurrency,
rate limits, retries, cache, budget) is recorded under ``options`` and may differ between sessions of one run.
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
from typing import Any, Literal

from rescue_bench import __version__
from rescue_bench.data.schema import Sample
from rescue_bench.errors import ConfigError
from rescue_bench.models.base import GenerationParams, ResponseFormat, reuses_prompt_prefix
from rescue_bench.records import Instance, Json
from rescue_bench.tasks.base import GoldField, Task, TaskConfig, resolve_mode
from rescue_bench.tasks.context import context_size

ALL_TASKS: tuple[str, ...] = ("itp", "rpp", "stp", "ssp", "er", "vp")
VIDEO_BATCH_SIZE = 1
"""Instances per request in video mode when ``--batch-size`` is not given, as in the reference scripts."""


@dataclass(frozen=True, slots=True)
class RunConfig:
    """Everything that decides what is asked and how it is scored."""

    model: str
    tasks: tuple[str, ...] = ALL_TASKS
    data: str = "demo"
    mode: str = "dialogue"
    context_size: int | None = None
    batch_size: int | None = None
    judges: tuple[str, ...] = ()
    limit_samples: int | None = None
    sample_ids: tuple[str, ...] | None = None
    seed: int | None = None
    temperature: float = 0.0
    response_format: ResponseFormat = "json_schema"
    disable_thinking: bool = False
    base_url: str | None = None
    api_key_env: str | None = None
    rpp_gold_field: GoldField = "auto"
    rpp_include_current_turn: bool = False
    ssp_include_target_emotion: bool = False
    checkpoints_per_sample: int = 5
    clips: tuple[str, ...] = ()
    """Clip sources of video mode: work directories or review-asset roots."""
    video_form: Literal["video", "frames"] = "video"
    video_frames: int = 4
    clip_url_base: str | None = None
    video_fps: float | None = None

    @property
    def video(self) -> bool:
        """Whether the run attaches row clips (``--mode video`` or one of its aliases)."""
        return resolve_mode(self.mode) == "video"

    def task_config(self) -> TaskConfig:
        """The settings every task of the run is built and rendered with."""
        batch_size = self.batch_size
        if batch_size is None and self.video:
            batch_size = VIDEO_BATCH_SIZE
        return TaskConfig(
            mode=resolve_mode(self.mode),
            context_size=self.context_size,
            batch_size=batch_size,
            rpp_gold_field=self.rpp_gold_field,
            rpp_include_current_turn=self.rpp_include_current_turn,
            ssp_include_target_emotion=self.ssp_include_target_emotion,
            checkpoints_per_sample=self.checkpoints_per_sample,
        )

    def generation_params(self) -> GenerationParams:
        return GenerationParams(
            temperature=self.temperature,
            seed=self.seed,
            response_format=self.response_format,
            disable_thinking=self.disable_thinking,
        )

    def record(self) -> dict[str, Json]:
        """The compared part of ``run.json``. The dataset is compared by content hash, not by path."""
        ids = None if self.sample_ids is None else _digest(sorted(self.sample_ids))[:16]
        return {
            "model": self.model,
            "tasks": list(self.tasks),
            "mode": self.mode,
            "context_size": self.context_size,
            "batch_size": self.batch_size,
            "limit_samples": self.limit_samples,
            "sample_ids": ids,
            "seed": self.seed,
            "temperature": self.temperature,
            "response_format": self.response_format,
            "disable_thinking": self.disable_thinking,
            "judges": list(self.judges),
            "rpp_gold_field": self.rpp_gold_field,
            "rpp_include_current_turn": self.rpp_include_current_turn,
            "ssp_include_target_emotion": self.ssp_include_target_emotion,
            "checkpoints_per_sample": self.checkpoints_per_sample,
            "video": self.video_record(),
        }

    def video_record(self) -> dict[str, Json] | None:
        """The clip settings of a video-mode run (``None`` otherwise): they change what the model is sent."""
        if not self.video:
            return None
        return {
            "clips": list(self.clips),
            "form": self.video_form,
            "frames": self.video_frames,
            "clip_url_base": self.clip_url_base,
            "fps": self.video_fps,
        }


@dataclass(frozen=True, slots=True)
class TaskPlan:
    """One task of a run: its settings, all its instances and their batches."""

    name: str
    task: Task
    cfg: TaskConfig
    instances: tuple[Instance, ...]
    batches: tuple[tuple[Instance, ...], ...]
    prompt_hash: str


def select_samples(samples: Sequence[Sample], config: RunConfig) -> list[Sample]:
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
        if config.limit_samples < 1:
            raise ConfigError(f"--limit-samples must be at least 1 (got {config.limit_samples})")
        chosen = chosen[: config.limit_samples]
    if not chosen:
        raise ConfigError(f"no samples selected from {config.data}")
    return chosen


def build_plans(
    samples: Sequence[Sample], config: RunConfig, tasks: Mapping[str, Task] | None = None
) -> list[TaskPlan]:
    """Instances and batches of every requested task, in the requested order."""
    known = check_tasks(config, tasks)
    return [plan_task(name, known[name], samples, config) for name in config.tasks]


def check_tasks(config: RunConfig, tasks: Mapping[str, Task] | None = None) -> Mapping[str, Task]:
    """The tasks a run may use (``tasks``, else all); a :class:`ConfigError` for an unknown one or bad option.

    A run checks them all before it plans (and asks) the first.
    """
    from rescue_bench.tasks import TASKS

    tasks = TASKS if tasks is None else tasks
    if config.checkpoints_per_sample < 1:
        got = config.checkpoints_per_sample
        raise ConfigError(f"--checkpoints-per-sample must be at least 1 (got {got})")
    for name in config.tasks:
        if name not in tasks:
            raise ConfigError(f"unknown task {name!r}; choose from {', '.join(tasks)} or all")
    return tasks


def plan_task(name: str, task: Task, samples: Sequence[Sample], config: RunConfig) -> TaskPlan:
    """One task's instances of every sample, and its batches."""
    from rescue_bench.tasks import make_batches

    cfg = config.task_config()
    instances = tuple(inst for sample in samples for inst in task.build(sample, cfg))
    size = default_batch_size(task, cfg, config.model)
    batches = tuple(tuple(b) for b in make_batches(instances, size))
    return TaskPlan(
        name, task, replace(cfg, batch_size=size), instances, batches, _prompt_hash(task, batches, cfg)
    )


def default_batch_size(task: Task, cfg: TaskConfig, model: str) -> int:
    """Instances per request: ``--batch-size``, else the task's reference size, except one for an in-process
    model when the items carry the whole earlier transcript (context -1, RPP's default).

    Batching shares one request's instructions among its items, but a batch of full-history items repeats the
    transcript once per item. An API bills requests, so the reference sizes stand there. An in-process model
    pays for compute only, and its KV cache re-uses what consecutive one-item prompts share (the instructions
    and the earlier rows: RPP puts the rows before the target line), so that each request evaluates only the
    rows that are new. On the demo data with the local model on 2 cores, RPP took 84 s instead of 311 s (all
    six conversations, labels on 89% of rows as the demo had then).
    """
    if cfg.batch_size is not None:
        return cfg.batch_size
    if reuses_prompt_prefix(model) and context_size(cfg, task.DEFAULT_CONTEXT_SIZE) == -1:
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
    config: RunConfig,
    options: Mapping[str, Json],
    samples: Sequence[Sample],
    plans: Sequence[TaskPlan],
    identity: Mapping[str, Json],
    params: GenerationParams,
) -> dict[str, Json]:
    """``run.json`` at the start of a session (status ``running``)."""
    now = time.time()
    return {
        "format": 1,
        "status": "running",
        "config": config.record(),
        "options": dict(options),
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
        "generation": asdict(params),
        "judges": list(config.judges),
        "counts": {plan.name: {"instances": len(plan.instances)} for plan in plans},
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
    plans: Sequence[TaskPlan], predictions: Sequence[Mapping[str, Any]], requests: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Per-task counts over the whole run directory (all sessions)."""
    counts: dict[str, dict[str, Any]] = {}
    for plan in plans:
        preds = [p for p in predictions if p.get("task") == plan.name]
        reqs = [r for r in requests if r.get("task") == plan.name]
        paid = [r for r in reqs if not r.get("cached")]
        problems = [str((p.get("problems") or [""])[0]) if p.get("problems") else "" for p in preds]
        counts[plan.name] = {
            "instances": len(plan.instances),
            "done": len(preds),
            "valid": sum(bool(p.get("valid")) for p in preds),
            "invalid": sum(not p.get("valid") for p in preds),
            "request_failures": sum(x.startswith("request_failed") for x in problems),
            "parse_failures": sum(x.startswith(("parse_failure", "missing")) for x in problems),
            "invalid_labels": sum(x.startswith("invalid_label") for x in problems),
            "requests": len(reqs),
            "single_retries": sum(bool(r.get("single")) for r in reqs),
            "cache_hits": len(reqs) - len(paid),
            "retries": sum(max(0, int(r.get("attempts") or 0) - 1) for r in reqs),
            "failures": sum(r.get("error") is not None for r in reqs),
            "refusals": sum(bool(r.get("refused")) for r in reqs),
            "masked": sum(bool(r.get("masked")) for r in reqs),
            "tokens": {
                k: sum(int((r.get("usage") or {}).get(k) or 0) for r in paid)
                for k in ("prompt_tokens", "completion_tokens", "reasoning_tokens")
            },
        }
        if plan.cfg.mode == "video":
            counts[plan.name]["video_unusable"] = sum(
                bool((p.get("meta") or {}).get("video_unusable")) for p in preds
            )
            counts[plan.name]["missing_clips"] = sum(
                str(x).startswith("video:") for p in preds for x in p.get("problems") or ()
            )
    return counts


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
