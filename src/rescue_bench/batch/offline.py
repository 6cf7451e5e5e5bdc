"""Beyond one machine: export a run as OpenAI Batch API lines, and score the results file that comes back.

``export`` writes one line per request, ``{"custom_id", "method", "url", "body"}``: the format that OpenAI's
Batch API and vLLM's ``run_batch`` entry point read. It also creates the run directory (``run.json`` with
status ``exported``), which records the config, so that ``import`` needs only the results file and that
directory.

With ``repeats = K`` every batch is written K times: repeat r > 0 with the seed the online run sends it with
(:func:`~rescue_bench.engine.execute.repeat_params`) and the custom id ``<id>-r<r>``
(:func:`~rescue_bench.batch.plan.repeat_custom_id`); ``import`` maps each result back to its repeat.

``import`` answers the run's requests from the results file (matched by ``custom_id``, which carries the
request's content key and repeat): :class:`ResultsFile` is a way of asking handed to the run operation, so
the replies go through the online run's recording, parsing and scoring, then its judge pass and statuses,
and both give the same ``scores.json`` for the same replies. A request whose result is missing or failed
is a recorded failure; items missing from a batch reply cannot be asked again singly offline, so they are
recorded as failures too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rescue_bench.batch.plan import (
    BATCH_URL,
    batch_line,
    check_repeats_keyed,
    repeat_custom_id,
    repeat_of,
)
from rescue_bench.batch.results import BatchResultsProvider, custom_id, parse_results
from rescue_bench.data.load import load_samples
from rescue_bench.data.schema import Sample
from rescue_bench.engine.asking import Pending, Route
from rescue_bench.engine.execute import EngineOptions
from rescue_bench.engine.plans import TaskPlan, build_plans, select_samples
from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Generation, Provider, parse_model_name
from rescue_bench.models.env import lookup
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import LOCAL_PLACEHOLDER_KEY, get_preset, normalize_base_url
from rescue_bench.records import Json, Reply, Request
from rescue_bench.redaction import redact_reply, url_secrets
from rescue_bench.rundir import RUN_FILE, Manifest, RunStore, atomic_write_json, run_lock
from rescue_bench.spec import RunSpec
from rescue_bench.spec.record import build_manifest, check_compatible, spec_from_manifest
from rescue_bench.tasks import TASKS
from rescue_bench.tasks.base import Task

__all__ = [
    "BATCH_URL",
    "IN_HAND",
    "BatchResultsProvider",
    "ExportSummary",
    "ResultsFile",
    "batch_line",
    "config_from_manifest",
    "custom_id",
    "export_batch",
    "import_results",
    "read_results",
    "write_export_note",
]


def export_provider(spec: RunSpec) -> OpenAICompatProvider:
    """A provider used only to shape request bodies: no key is read, nothing is sent.

    Raises:
        ConfigError: the spec's provider is not an OpenAI-compatible preset (its requests have no Batch line).
    """
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
    params = config.generation()
    check_repeats_keyed(params, max(plan.repeats for plan in plans))
    built = Manifest.from_json(build_manifest(config, samples, plans, provider.identity(), known))
    manifest = built.model_copy(update={"status": "exported", "options": {"batch_export": str(out)}})
    store = RunStore(run_dir)
    with run_lock(run_dir, create=True):  # another writer of the directory (a run, an import) is refused
        check_compatible(store, manifest.to_json(), known)
        if store.manifest() is None:
            store.write_manifest(manifest.to_json())
    out.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with out.open("w", encoding="utf-8") as lines:
        for request, repeat in _all_requests(plans):
            line = batch_line(provider, request, params, repeat)
            lines.write(json.dumps(line, ensure_ascii=False) + "\n")
            count += 1
    return ExportSummary(count, sum(p.asks for p in plans), out, run_dir)


def _all_requests(plans: Sequence[TaskPlan]) -> list[tuple[Request, int]]:
    """Every request of the run with its repeat, task by task and repeat by repeat (the run's order)."""
    return [
        (plan.task.render(batch, plan.cfg), repeat)
        for plan in plans
        for repeat in range(plan.repeats)
        for batch in plan.batches_of(repeat)
    ]


class RepeatResultsProvider(BatchResultsProvider):
    """:class:`BatchResultsProvider` that finds each request's result under its repeat's custom id: the
    engine sends repeat r with :func:`repeat_params` of the run's ``base`` settings, which
    :func:`repeat_of` reads back."""

    def __init__(
        self, results: Mapping[str, Reply], identity: dict[str, Json], name: str, base: Generation
    ) -> None:
        super().__init__(results, identity, name)
        self._by_id = results
        self._base = base

    async def complete(self, request: Request, params: Generation) -> Reply:
        key = repeat_custom_id(request, repeat_of(self._base, params))
        reply = self._by_id.get(key)
        if reply is None:
            return Reply.failure(f"batch import: the results file has no answer for {key}")
        self.used.add(key)
        return reply


def config_from_manifest(manifest: dict[str, Json], tasks: dict[str, Task] | None = None) -> RunSpec:
    """The run spec recorded in ``run.json`` (by ``export`` or by any run)."""
    return spec_from_manifest(manifest, tasks)


def read_results(path: Path) -> dict[str, Reply]:
    """Replies by ``custom_id`` from an OpenAI / vLLM batch output file (:func:`parse_results`).

    A line that is not UTF-8 JSON with a string ``custom_id`` is a :class:`DataError` naming ``file:line``; a
    line whose result cannot be read becomes a failed reply, recorded for its request like any failure.
    """
    if not path.is_file():
        raise ConfigError(f"batch results file {path} not found")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"batch results file {path} cannot be read ({exc.__class__.__name__})") from None
    return parse_results(data, str(path))


def write_export_note(run_dir: Path, summary: ExportSummary) -> None:
    """Leave a note in the run directory about where its requests went."""
    with run_lock(run_dir, create=True):
        atomic_write_json(
            run_dir / "batch_export.json",
            {"requests": summary.requests, "instances": summary.instances, "file": str(summary.path)},
        )


@dataclass(frozen=True, slots=True)
class ResultsFile:
    """``batch import`` as a way of asking (an :class:`~rescue_bench.engine.asking.Asker`): the run's requests
    are answered from a Batch API results file, by :class:`RepeatResultsProvider`, which the session records
    as the run's model. The run operation (:func:`rescue_bench.evaluation.run.execute`) takes it like any way
    of asking, so an imported run gets the judge pass, BERTScore, statuses and exit codes of every run."""

    provider: RepeatResultsProvider

    def model(self, spec: RunSpec) -> Provider:
        return self.provider

    def check(self, spec: RunSpec, model: Provider) -> None:
        if spec.is_video:
            raise ConfigError("batch import reads text replies only; video mode is run by `rescue-bench run`")

    async def route(self, pending: Pending) -> Route:
        # The replies are in hand: no pace, no retries, no cache, and nothing more to pay.
        return Route(pending.model, pending.plans, None, engine=IN_HAND)


IN_HAND: Final = EngineOptions(concurrency=64, adaptive=False, max_retries=0, use_cache=False)
"""How the engine asks replies already in hand (a results file)."""


def import_results(
    results: Path, run_dir: Path, *, tasks: Mapping[str, Task] | None = None, base_url: str | None = None
) -> tuple[RunSpec, ResultsFile]:
    """The spec ``run_dir`` records (made by :func:`export_batch`) and the way of asking that answers it from
    ``results``, to hand to the run operation (the engine's session along the online run's path).

    A results file holding answers to requests the run does not have (another run's file) is refused before
    anything is recorded. Instances an earlier import left invalid are answered again from this file, so a
    complete file imported after a partial one completes the run. Replies are redacted as online ones are
    (:func:`endpoint_secrets`); ``base_url`` is the endpoint address ``batch export`` was given, whose secrets
    (a query key, a password) ``run.json`` does not hold: they are taken out of the replies too.

    Raises:
        ConfigError: no ``run.json``, or results whose custom ids are not the run's.
    """
    manifest = RunStore(run_dir).manifest()
    if manifest is None:
        raise ConfigError(f"{run_dir} has no run.json; give the --run directory that `batch export` made")
    # The results are in hand: nothing is submitted, whatever the recorded spec says about --batch.
    recorded = config_from_manifest(manifest, dict(tasks) if tasks is not None else None)
    engine = recorded.engine.model_copy(update={"retry_failed": True})
    spec = recorded.model_copy(update={"batch": False, "engine": engine, "out": run_dir})
    known = TASKS if tasks is None else tasks
    replies = read_results(results)
    shaper = export_provider(spec)
    chosen = select_samples(load_samples(spec.data), spec)
    _check_ids(replies, _custom_ids(spec, chosen, known, shaper), results, run_dir)
    secrets = (*endpoint_secrets(spec, shaper), *url_secrets(base_url))
    identity = Manifest.from_json(manifest, str(run_dir / RUN_FILE)).model
    provider = RepeatResultsProvider(
        {cid: redact_reply(reply, secrets) for cid, reply in replies.items()},
        dict(identity) if isinstance(identity, dict) else {},
        spec.model.name,
        spec.generation(),
    )
    return spec, ResultsFile(provider)


def _custom_ids(
    spec: RunSpec, samples: Sequence[Sample], tasks: Mapping[str, Task], provider: OpenAICompatProvider
) -> set[str]:
    """The custom id of every line ``batch export`` writes for ``spec`` (every batch, every repeat), its
    requests planned for ``provider`` (:func:`export_provider`)."""
    plans = build_plans(samples, spec, tasks, provider.capabilities)
    return {repeat_custom_id(request, repeat) for request, repeat in _all_requests(plans)}


def _check_ids(replies: Mapping[str, Reply], expected: set[str], results: Path, run_dir: Path) -> None:
    foreign = sorted(set(replies) - expected)
    if foreign:
        raise ConfigError(
            f"{results}: {len(foreign)} of {len(replies)} results answer requests that are not in the run "
            f"{run_dir} (first: {foreign[0]!r}); is it another run's results file? Nothing was recorded"
        )


def endpoint_secrets(spec: RunSpec, provider: OpenAICompatProvider) -> tuple[str, ...]:
    """The API key the spec's model endpoint would use (if set here) and its URL's secrets: what the online
    path takes out of every reply, taken out of imported replies too. ``provider`` is the spec's
    :func:`export_provider`, which names the key variables its endpoint reads."""
    names = (spec.model.api_key_env,) if spec.model.api_key_env else provider.preset.key_envs
    key, _ = lookup(names)
    keys = (key,) if key and key != LOCAL_PLACEHOLDER_KEY else ()
    return (*keys, *url_secrets(spec.model.base_url))
