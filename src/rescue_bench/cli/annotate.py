"""CLI commands: ``rescue-bench annotate ingest | draft | export`` (see docs/data-building.md)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final

import typer

from rescue_bench.cli.flags import flag_values, option, with_flags
from rescue_bench.cli.run_flags import ModelCommand, model_settings
from rescue_bench.errors import ConfigError, DataError
from rescue_bench.printable import echo
from rescue_bench.taxonomy import Scenario

if TYPE_CHECKING:
    from rescue_bench.annotate.draft import Counts, DraftSettings
    from rescue_bench.annotate.ingest import IngestResult
    from rescue_bench.pricing import Prices
    from rescue_bench.spec import EngineSpec, ModelSpec

annotate_app = typer.Typer(
    help="Build new data: subtitles and video in, row clips and model drafts out, drafts to release JSONL.",
    no_args_is_help=True,
)

Workdir = Annotated[Path, typer.Argument(help="The annotation work directory (made by `annotate ingest`).")]
SHOWN = 20
SCENARIOS: Final[dict[str, Scenario]] = {"couple": "couple", "family": "family"}
"""Warnings printed in full; the rest are counted."""


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _pairs(text: str) -> tuple[tuple[str, str], ...]:
    """``"A=B, C=D"`` as pairs; :class:`ConfigError` for an item without ``=``."""
    pairs = []
    for item in _names(text):
        label, sep, name = item.partition("=")
        if not sep or not label.strip() or not name.strip():
            raise ConfigError(f"--speaker-map: {item!r} is not LABEL=NAME")
        pairs.append((label.strip(), name.strip()))
    return tuple(pairs)


def _warn(lines: tuple[str, ...] | list[str]) -> None:
    for line in lines[:SHOWN]:
        echo(line, err=True)
    if len(lines) > SHOWN:
        echo(f"... and {len(lines) - SHOWN} more", err=True)


@dataclass(frozen=True, slots=True)
class IngestOptions:
    """What ``annotate ingest`` is given (:data:`INGEST_FLAGS`)."""

    video: Path
    subtitles: Path
    scenario: str
    participants: str
    out: Path
    min_segment_sec: float
    split_gap: float | None
    therapist_names: str
    id_prefix: str | None
    skip_bad_cues: bool
    jobs: int
    speaker_map: str


INGEST_FLAGS: Final = (
    option("--video", "video", Path, "The source video.", required=True),
    option("--subtitles", "subtitles", Path, "Its subtitles (.srt or .vtt).", required=True),
    option("--scenario", "scenario", str, "couple or family.", required=True),
    option("--participants", "participants", str, 'On-screen people, e.g. "Alan,Evelyn".', required=True),
    option("--out", "out", Path, "The work directory to create (or resume).", required=True),
    option("--min-segment-sec", "min_segment_sec", float, "Drop segments shorter than this.", 120.0),
    option(
        "--split-gap", "split_gap", float, "Start a new segment after a silence this long (s); default: one."
    ),
    option(
        "--therapist-names",
        "therapist_names",
        str,
        "Names the subtitles use for the therapist, comma-separated.",
        "",
    ),
    option("--id-prefix", "id_prefix", str, "Sample ids are <prefix>/segNN (default: video name)."),
    option("--skip-bad-cues", "skip_bad_cues", bool, "Leave malformed cues out instead of stopping.", False),
    option("--jobs", "jobs", int, "ffmpeg processes at once.", 2),
    option(
        "--speaker-map",
        "speaker_map",
        str,
        'Subtitle labels spelled otherwise, comma-separated LABEL=NAME (e.g. "Alna=Alan,Dr R=Therapist").',
        "",
    ),
)


@annotate_app.command("ingest", cls=with_flags(lambda: INGEST_FLAGS))
def ingest(ctx: typer.Context) -> None:
    """Cut a video into segments and row clips along its subtitles, and write their manifests."""
    from rescue_bench.annotate.ingest import IngestSettings
    from rescue_bench.annotate.ingest import ingest as run_ingest

    o = flag_values(ctx).record(IngestOptions, INGEST_FLAGS)
    if o.scenario not in SCENARIOS:
        raise ConfigError(f"--scenario must be couple or family (got {o.scenario!r})")
    settings = IngestSettings(
        scenario=SCENARIOS[o.scenario],
        participants=_names(o.participants),
        therapist_names=_names(o.therapist_names),
        min_segment_sec=o.min_segment_sec,
        split_gap=o.split_gap,
        id_prefix=o.id_prefix,
        allow_bad_cues=o.skip_bad_cues,
        jobs=o.jobs,
        speaker_map=_pairs(o.speaker_map),
    )
    _print_ingest(o.out, run_ingest(o.video, o.subtitles, o.out, settings, log=echo))


def _print_ingest(out: Path, result: IngestResult) -> None:
    _warn(list(result.warnings))
    for line in result.dropped:
        echo(line)
    rows = sum(len(s.rows) for s in result.segments)
    echo(
        f"{out}: {len(result.segments)} segment(s), {rows} rows; {result.clips_cut} clip(s) cut, "
        f"{result.clips_kept} kept; {len(result.dropped)} segment(s) dropped"
    )


@annotate_app.command("draft", cls=ModelCommand)
def draft(
    ctx: typer.Context,
    workdir: Workdir,
    frames: Annotated[
        int, typer.Option("--frames", help="Still frames per row sent as images (0: none).")
    ] = 0,
    rows_per_request: Annotated[
        int, typer.Option("--rows-per-request", help="Rows annotated per request.")
    ] = 20,
    force: Annotated[bool, typer.Option("--force", help="Draft segments that have a draft again.")] = False,
    estimate: Annotated[
        bool, typer.Option("--estimate", help="Only print requests, tokens and cost.")
    ] = False,
    price_in: Annotated[
        float | None, typer.Option("--price-in", help="USD per million prompt tokens.")
    ] = None,
    price_out: Annotated[
        float | None, typer.Option("--price-out", help="USD per million output tokens.")
    ] = None,
) -> None:
    """Pre-annotate every segment with a model: six dimensions per row, checked, one repair round.

    The model, generation and engine flags are ``run``'s, with its defaults; ``--max-tokens`` caps each
    request (default: rows x 700 + 500 tokens, 16,000 at most).
    """
    from rescue_bench.annotate.draft import DraftSettings
    from rescue_bench.spec import ModelSpec

    given = model_settings(flag_values(ctx))
    if "name" not in given.model:
        raise ConfigError("--model: give the model to draft with (provider/model, e.g. openai/gpt-4o)")
    model = given.validate(ModelSpec)
    if frames < 0 or rows_per_request < 1:
        raise ConfigError("--frames must be >= 0 and --rows-per-request >= 1")
    cap = {} if model.max_tokens is None else {"max_tokens": model.max_tokens}
    settings = DraftSettings(frames=frames, rows_per_request=rows_per_request, **cap)
    if estimate:
        _estimate(workdir, model.name, settings, force, price_in, price_out)
        return
    from rescue_bench.evaluation.setup import make_prices

    prices = make_prices(model.name, price_in, price_out, None)
    _print_draft(workdir, _draft(workdir, model, given.engine, settings, force, prices))


def _print_draft(workdir: Path, counts: Counts) -> None:
    echo(
        f"{workdir}: {len(counts.drafted)} segment(s) drafted, {len(counts.skipped)} already drafted, "
        f"{len(counts.failed)} failed; {counts.rows} rows, {counts.flagged_rows} with open violations; "
        f"{counts.requests} request(s) ({counts.repairs} repair, {counts.cached} cached), "
        f"{counts.prompt_tokens:,} prompt + {counts.completion_tokens:,} completion tokens" + _spend(counts)
    )
    if counts.failed:
        echo(f"failed: {', '.join(counts.failed)}; re-run the same command to retry them", err=True)
        raise typer.Exit(1)


def _spend(counts: Counts) -> str:
    if counts.spent_usd is None or counts.spent_total_usd is None:
        return ""
    spent, total = counts.spent_usd, counts.spent_total_usd
    return f"; ${spent:.4f} spent in finished rounds, ${total:.4f} in total for this work directory"


def _draft(
    workdir: Path,
    model: ModelSpec,
    engine: EngineSpec,
    settings: DraftSettings,
    force: bool,
    prices: Prices | None = None,
) -> Counts:
    from rescue_bench.annotate.draft import Counts
    from rescue_bench.annotate.run import draft_workdir
    from rescue_bench.engine.execute import EngineOptions
    from rescue_bench.models.base import check_settings
    from rescue_bench.models.registry import get_model
    from rescue_bench.rundir.cache import ResponseCache
    from rescue_bench.workdir import read_info

    read_info(workdir)  # a clear error before any endpoint is contacted
    provider = get_model(
        model.name, base_url=model.base_url, api_key_env=model.api_key_env, timeout=engine.timeout
    )
    # A model reads prompts behind an endpoint or in this process; baselines and replays do not draft.
    if not (provider.capabilities.has_endpoint or provider.capabilities.reuses_prompt_prefix):
        raise ConfigError(
            f"{model.name} answers benchmark items, not prompts: choose a chat model to draft with"
        )
    # --max-tokens caps each draft request through its own cap (DraftSettings), which the request carries.
    params = model.generation().model_copy(update={"max_tokens": None})
    check_settings(provider, params)
    options = EngineOptions.of(engine, model.concurrency)
    cache = ResponseCache() if engine.cache else None
    counts = Counts()
    cached_before = cache.stats().entries if cache is not None and cache.usable else None

    async def go() -> Counts:
        try:
            return await draft_workdir(
                workdir, provider, params, settings, force=force, engine_options=options, cache=cache,
                log=echo, prices=prices, counts=counts,
            )  # fmt: skip
        finally:
            await provider.aclose()

    try:
        return asyncio.run(go())
    except KeyboardInterrupt:
        kept = None if cache is None or cached_before is None else cache.stats().entries - cached_before
        _interrupted(workdir, counts, kept)
        raise typer.Exit(130) from None
    finally:
        if cache is not None:
            cache.close()


def _interrupted(workdir: Path, counts: Counts, kept: int | None) -> None:
    """What Ctrl-C kept, and how to go on (the replies in the cache are not paid for again)."""
    replies = (
        f"{kept} new repl(ies) kept in the response cache (a re-run reads them, not paid again)"
        if kept is not None
        else "no response cache (--no-cache): replies of unfinished segments are lost"
    )
    echo(
        f"interrupted: {len(counts.drafted)} segment(s) drafted and written; {replies}{_spend(counts)}. "
        f"Re-run the same command to resume {workdir}: drafted segments are skipped.",
        err=True,
    )


def _estimate(
    workdir: Path,
    model: str,
    settings: DraftSettings,
    force: bool,
    price_in: float | None,
    price_out: float | None,
) -> None:
    from rescue_bench.annotate.run import estimate_workdir
    from rescue_bench.evaluation.setup import make_prices
    from rescue_bench.pricing import make_counter

    prices = make_prices(model, price_in, price_out, None)
    counter = make_counter(model)
    result = estimate_workdir(workdir, settings, counter, force=force)
    cost = result.cost(prices)
    echo(
        f"{workdir}: {result.instances} rows to draft in {result.requests} first-round request(s); "
        f"{result.prompt_tokens:,} prompt tokens ({counter.name}), "
        f"at most {result.max_output_tokens:,} output tokens"
        + (f"; at most ${cost:.4f}" if cost is not None else "")
    )
    notes = ["repair requests (one per answer that breaks a rule) come on top"]
    if settings.frames:
        notes.append(f"{settings.frames} image(s) per row are not counted")
    echo("; ".join(notes).capitalize() + ".")


@annotate_app.command("export")
def export(
    workdir: Workdir,
    out: Annotated[Path, typer.Option("--out", help="The release-format JSONL file to write.")],
) -> None:
    """Write the drafts as release-format JSONL (one sample per drafted segment), then validate it."""
    from rescue_bench.data.validate import validate_source
    from rescue_bench.workdir import export_release, read_info

    read_info(workdir)
    result = export_release(workdir)
    if not result.samples:
        raise DataError(f"{workdir}: no drafted segment to export (run `rescue-bench annotate draft` first)")
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as handle:
        for sample in result.samples:
            handle.write(json.dumps(sample, ensure_ascii=False) + "\n")
    report = validate_source(out)
    _warn([p.render() for p in (*report.errors, *report.warnings)])
    if result.undrafted:
        echo(f"not drafted yet (left out): {', '.join(result.undrafted)}", err=True)
    echo(
        f"{out}: {report.summary().split(': ', 1)[1]}; "
        f"{result.flagged_rows} row(s) with open draft violations"
    )


def register(app: typer.Typer) -> None:
    """Add ``annotate ingest | draft | export`` to the root app."""
    app.add_typer(annotate_app, name="annotate")
