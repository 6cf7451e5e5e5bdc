"""What ``run.json`` records of a run's spec: the config a resumed session compares, and the whole record
a session starts with.

``run.json`` stores the whole :class:`~rescue_bench.spec.RunSpec` under ``spec``. Only what changes the
answers goes into ``config`` (:func:`config_record`), which a resumed session compares; how the run goes
(concurrency, rate limits, retries, cache, budget) may differ between sessions of one run. The file's format
(its version, the one-line refusal of another one, the end of a session) is
:mod:`rescue_bench.rundir.manifest`'s.
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from collections.abc import Mapping, Sequence
from typing import Protocol

from rescue_bench.data.release import release_origin
from rescue_bench.data.schema import Sample
from rescue_bench.errors import ConfigError
from rescue_bench.records import Json
from rescue_bench.redaction import scrub
from rescue_bench.rundir import PROTOCOL, Manifest, RunStore, describe_changes
from rescue_bench.rundir.manifest import FORMAT, check_format, git_commit, iso_time
from rescue_bench.spec.run import RunSpec
from rescue_bench.spec.validate import validate_spec
from rescue_bench.tasks import TASKS
from rescue_bench.tasks.base import Task, TaskConfig
from rescue_bench.tasks.perturb import perturbation_record
from rescue_bench.version import __version__

__all__ = [
    "PlanFacts",
    "build_manifest",
    "check_compatible",
    "config_record",
    "dataset_hash",
    "spec_from_manifest",
    "video_record",
]


class PlanFacts(Protocol):
    """What ``run.json`` records of a task's plan (``engine.plans.TaskPlan`` has it)."""

    @property
    def name(self) -> str: ...
    @property
    def prompt_hash(self) -> str: ...
    @property
    def cfg(self) -> TaskConfig: ...
    @property
    def asks(self) -> int: ...


def config_record(spec: RunSpec, tasks: Mapping[str, Task] = TASKS) -> dict[str, Json]:
    """The compared part of ``run.json``. The dataset is compared by content hash, not by path."""
    ids = None if spec.sample_ids is None else _digest(sorted(spec.sample_ids))[:16]
    model = spec.model
    options: dict[str, Json] = {n: o.model_dump(mode="json") for n, o in spec.options_of(tasks).items()}
    return {
        "protocol": PROTOCOL,
        "model": model.name,
        "tasks": list(spec.tasks),
        "mode": spec.mode,
        "context_size": spec.context_size,
        "batch_size": spec.batch_size,
        "limit_samples": spec.limit_samples,
        "sample_ids": ids,
        "task_options": options,
        "video": video_record(spec),
        # Only a perturbed run has the key, so the config of every unperturbed run is as it was.
        **({"perturbation": perturbation_record(spec.perturb, model.seed or 0)} if spec.perturb else {}),
        **({"repeats": spec.repeats} if spec.repeats > 1 else {}),
        # The generation settings not at their defaults: a setting added later leaves every config as it was.
        **model.settings(),
    }


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


def spec_from_manifest(manifest: Mapping[str, Json], tasks: Mapping[str, Task] | None = None) -> RunSpec:
    """The run spec recorded in ``run.json`` (:class:`ConfigError` for another format)."""
    check_format(manifest, "run.json")
    spec = Manifest.from_json(manifest, "run.json").spec
    if spec is None:
        raise ConfigError("run.json records no spec; was it made by this version of rescue-bench?")
    return validate_spec(spec, where="run.json: spec", tasks=tasks)


def check_compatible(
    store: RunStore, manifest: Mapping[str, Json], tasks: Mapping[str, Task] = TASKS
) -> None:
    """Raise :class:`ConfigError`, naming what changed, when the directory holds a run of another config."""
    old = store.manifest()
    if old is None:
        store.check_compatible(manifest)  # no run yet: refuses only records without a run.json
        return
    check_format(old, str(store.root / "run.json"))
    recorded = Manifest.from_json(old, str(store.root / "run.json"))
    if recorded.protocol > PROTOCOL:
        raise ConfigError(str(recorded.protocol_note(store.root)))
    if recorded.protocol != PROTOCOL:
        raise ConfigError(
            f"{store.root} holds a run of protocol version {recorded.protocol} and this rescue-bench runs "
            f"version {PROTOCOL} (prompts, judge inputs, scoring), so it cannot be continued: start a new "
            "directory"
        )
    changes = describe_changes(scrub(dict(old)), manifest)
    if changes:
        listed = "; ".join(changes[:5]) + (f"; and {len(changes) - 5} more" if len(changes) > 5 else "")
        raise ConfigError(
            f"{store.root} holds a run with another configuration ({listed}); "
            "use another --out, or remove the directory to start over"
        )


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
    plans: Sequence[PlanFacts],
    identity: Mapping[str, Json],
    tasks: Mapping[str, Task] = TASKS,
) -> dict[str, Json]:
    """``run.json`` at the start of a session (status ``running``), every URL in it without its secrets
    (:func:`~rescue_bench.redaction.scrub`: so a resumed run compares like with like)."""
    now = time.time()
    return scrub(
        {
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
                **release_origin(config.data),
            },
            "selection": {
                "data": config.data,
                "sample_ids": None if config.sample_ids is None else list(config.sample_ids),
            },
            "prompt_hashes": {plan.name: plan.prompt_hash for plan in plans},
            "batch_sizes": {plan.name: plan.cfg.batch_size for plan in plans},
            "model": dict(identity),
            "generation": config.generation().model_dump(mode="json"),
            "judges": [j.name for j in config.judges],
            "counts": {plan.name: {"instances": plan.asks} for plan in plans},
            "timings": {
                "created": iso_time(now),
                "started": iso_time(now),
                "started_unix": now,
                "sessions": 1,
            },
        }
    )


def _digest(obj: Json) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()
