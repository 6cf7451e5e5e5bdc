"""What ``run.json`` says about a run: its spec, the config a resumed session compares, its counts and times.

``run.json`` (format 2) stores the whole :class:`~rescue_bench.spec.RunSpec` under ``spec``. Only what changes
the answers goes into ``config`` (:func:`config_record`), which a resumed session compares; how the run goes
(concurrency, rate limits, retries, cache, budget) may differ between sessions of one run. A ``run.json`` of
another format is refused in one line that names the format and the version that wrote it.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from rescue_bench import __version__
from rescue_bench.data.schema import Sample
from rescue_bench.engine.plans import TaskPlan
from rescue_bench.errors import ConfigError
from rescue_bench.records import Json
from rescue_bench.redaction import scrub
from rescue_bench.rundir import PROTOCOL, Manifest, RunStore, describe_changes
from rescue_bench.spec import RunSpec, validate_spec
from rescue_bench.tasks import TASKS
from rescue_bench.tasks.base import Task
from rescue_bench.tasks.perturb import perturbation_record

__all__ = [
    "FORMAT",
    "build_manifest",
    "check_compatible",
    "check_format",
    "config_record",
    "dataset_hash",
    "finish_manifest",
    "git_commit",
    "spec_from_manifest",
    "video_record",
]

FORMAT: Final = 2
"""The ``run.json`` format this version writes and reads: the whole spec under ``spec``."""


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


def check_format(manifest: Mapping[str, Json], where: str) -> None:
    """Refuse, in one line naming its format and the version that wrote it, a ``run.json`` of another format.

    >>> check_format({"format": 3, "package_version": "0.9.0"}, "runs/a/run.json")
    Traceback (most recent call last):
    ...
    rescue_bench.errors.ConfigError: runs/a/run.json: format 3, written by rescue-bench 0.9.0; this \
rescue-bench reads format 2 only: start a new directory
    """
    found = manifest.get("format", 1)
    if found == FORMAT:
        return
    version = manifest.get("package_version")
    by = f"rescue-bench {version}" if isinstance(version, str) and version else "an unknown version"
    raise ConfigError(
        f"{where}: format {found}, written by {by}; "
        f"this rescue-bench reads format {FORMAT} only: start a new directory"
    )


def spec_from_manifest(manifest: Mapping[str, Json], tasks: Mapping[str, Task] | None = None) -> RunSpec:
    """The run spec recorded in ``run.json`` (:class:`ConfigError` for another format)."""
    check_format(manifest, "run.json")
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
    check_format(old, str(store.root / "run.json"))
    protocol = Manifest.from_json(old, "run.json").protocol
    if protocol != PROTOCOL:
        raise ConfigError(
            f"{store.root} holds a run of protocol version {protocol} and this rescue-bench runs version "
            f"{PROTOCOL} (prompts, judge inputs, scoring), so it cannot be continued: start a new directory"
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
    plans: Sequence[TaskPlan],
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
            "timings": {"created": _iso(now), "started": _iso(now), "started_unix": now, "sessions": 1},
        }
    )


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
    # Elapsed time adds up over the sessions of a run; each session's share is kept.
    earlier = timings.get("session_elapsed_s")
    shares = [float(x) for x in earlier if isinstance(x, int | float)] if isinstance(earlier, list) else []
    shares.append(round(now - started, 3))
    timings.update({"finished": _iso(now), "elapsed_s": round(sum(shares), 3), "session_elapsed_s": shares})
    return {
        **manifest,
        "status": status,
        "counts": dict(counts),
        "timings": timings,
        "stop_reason": stop_reason,
    }


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
