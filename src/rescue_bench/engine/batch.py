"""Beyond one machine: export a run as OpenAI Batch API lines, and score the results file that comes back.

``export`` writes one line per request, ``{"custom_id", "method", "url", "body"}``: the format that OpenAI's
Batch API and vLLM's ``run_batch`` entry point read. It also creates the run directory (``run.json`` with
status ``exported``), which records the config, so that ``import`` needs only the results file and that
directory.

``import`` answers the run's requests from the results file (matched by ``custom_id``, which carries the
request's content key) and then goes through the same recording, parsing and scoring as an online run, so both
give the same ``scores.json`` for the same replies. A request whose result is missing or failed is a recorded
failure; items missing from a batch reply cannot be asked again singly offline, so they are recorded as
failures too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rescue_bench.data.schema import Sample
from rescue_bench.engine.batch_results import BatchLine, result_reply
from rescue_bench.engine.execute import EngineOptions
from rescue_bench.engine.manifest import (
    TaskPlan,
    build_manifest,
    build_plans,
    check_compatible,
    spec_from_manifest,
)
from rescue_bench.engine.run import RunOptions, RunResult, run_benchmark
from rescue_bench.errors import ConfigError, DataError
from rescue_bench.models.base import Capabilities, GenerationParams, parse_model_name
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import get_preset, normalize_base_url
from rescue_bench.records import Instance, Json, Reply, Request
from rescue_bench.rundir import RUN_FILE, Manifest, RunStore, atomic_write_json
from rescue_bench.spec import RunSpec
from rescue_bench.tasks import TASKS
from rescue_bench.tasks.base import Task

BATCH_URL = "/v1/chat/completions"


def custom_id(request: Request) -> str:
    """``<task>-<first 32 hex of the content key>``: unique per distinct prompt, and checkable on import."""
    return f"{request.task}-{request.content_key()[:32]}"


def batch_line(provider: OpenAICompatProvider, request: Request, params: GenerationParams) -> dict[str, Json]:
    body = provider.body(request, params, provider.effective_format(params))
    return {"custom_id": custom_id(request), "method": "POST", "url": BATCH_URL, "body": body}


def export_provider(spec: RunSpec) -> OpenAICompatProvider:
    """A provider used only to shape request bodies: no key is read, nothing is sent."""
    parsed = parse_model_name(spec.model.name)
    preset = get_preset(parsed.provider)
    url = normalize_base_url(spec.model.base_url or preset.base_url)
    return OpenAICompatProvider(parsed.model, preset=preset, base_url=url, api_key="unused-for-export")


@dataclass(frozen=True, slots=True)
class ExportSummary:
    requests: int
    instances: int
    path: Path
    run_dir: Path


def export_batch(
    config: RunSpec,
    samples: Sequence[Sample],
    out: Path,
    run_dir: Path,
    *,
    tasks: dict[str, Task] | None = None,
) -> ExportSummary:
    """Write the Batch API file for every request of ``config`` and the run directory that will receive it.

    Raises:
        ConfigError: video mode (clips are attached by ``run`` only), or the directory holds another run.
    """
    if config.is_video:
        raise ConfigError("batch export sends text only; for --mode video use `rescue-bench run --clips ...`")
    known = TASKS if tasks is None else tasks
    provider = export_provider(config)
    plans = build_plans(samples, config, known, provider.capabilities)
    params = config.generation_params()
    manifest = build_manifest(config, samples, plans, provider.identity(), known)
    manifest["status"] = "exported"
    manifest["options"] = {"batch_export": str(out)}
    store = RunStore(run_dir)
    check_compatible(store, manifest, known)
    if store.manifest() is None:
        store.write_manifest(manifest)
    out.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with out.open("w", encoding="utf-8") as lines:
        for request in _all_requests(plans):
            lines.write(json.dumps(batch_line(provider, request, params), ensure_ascii=False) + "\n")
            count += 1
    return ExportSummary(count, sum(len(p.instances) for p in plans), out, run_dir)


def _all_requests(plans: Sequence[TaskPlan]) -> list[Request]:
    return [plan.task.render(batch, plan.cfg) for plan in plans for batch in plan.batches]


def config_from_manifest(manifest: dict[str, Json], tasks: dict[str, Task] | None = None) -> RunSpec:
    """The run spec recorded in ``run.json`` (by ``export`` or by any run; format 1 or 2)."""
    return spec_from_manifest(manifest, tasks)


def read_results(path: Path) -> dict[str, Reply]:
    """Replies by ``custom_id`` from an OpenAI / vLLM batch output file.

    A line that is not UTF-8 JSON with a string ``custom_id`` is a :class:`DataError` naming ``file:line``; a
    line whose result cannot be read becomes a failed reply, recorded for its request like any failure.
    """
    if not path.is_file():
        raise ConfigError(f"batch results file {path} not found")
    replies: dict[str, Reply] = {}
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                record = BatchLine.model_validate(_json_line(raw, f"{path}:{number}"))
            except ValidationError:
                raise DataError(f"{path}:{number}: no string field 'custom_id'") from None
            replies[record.custom_id] = result_reply(record)
    return replies


def _json_line(raw: bytes, where: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise DataError(f"{where}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise DataError(f"{where}: JSON nested too deeply") from None


class BatchResultsProvider:
    """Answers a run's requests from a batch results file; it never calls a model."""

    capabilities = Capabilities(cacheable=False, has_endpoint=False, batch_export=False, reads_prompts=False)
    """Results files come from outside; they are recorded in the run, not put in the shared cache."""

    def __init__(self, results: dict[str, Reply], identity: dict[str, Json], name: str) -> None:
        self._results = results
        self._identity = identity
        self.name = name
        self.used: set[str] = set()

    def identity(self) -> dict[str, Json]:
        return dict(self._identity)

    def prepare(self, instances: Sequence[Instance]) -> None:
        return None

    async def complete(self, request: Request, params: GenerationParams) -> Reply:
        key = custom_id(request)
        reply = self._results.get(key)
        if reply is None:
            return Reply.failure(f"batch import: the results file has no answer for {key}")
        self.used.add(key)
        return reply

    async def aclose(self) -> None:
        return None


def write_export_note(run_dir: Path, summary: ExportSummary) -> None:
    """Leave a note in the run directory about where its requests went."""
    atomic_write_json(
        run_dir / "batch_export.json",
        {"requests": summary.requests, "instances": summary.instances, "file": str(summary.path)},
    )


def import_batch(
    results: Path, run_dir: Path, *, quiet: bool = True, tasks: dict[str, Task] | None = None
) -> tuple[RunResult, RunSpec]:
    """Score ``results`` into ``run_dir`` (made by :func:`export_batch`) along the online run's path."""
    manifest = RunStore(run_dir).manifest()
    if manifest is None:
        raise ConfigError(f"{run_dir} has no run.json; give the --run directory that `batch export` made")
    spec = config_from_manifest(manifest, tasks)
    identity = Manifest.from_json(manifest, str(run_dir / RUN_FILE)).model
    provider = BatchResultsProvider(
        read_results(results), dict(identity) if isinstance(identity, dict) else {}, name=spec.model.name
    )
    options = RunOptions(engine=EngineOptions(concurrency=64, max_retries=0, use_cache=False), quiet=quiet)
    return run_benchmark(spec, run_dir, options, model=provider, tasks=tasks), spec
