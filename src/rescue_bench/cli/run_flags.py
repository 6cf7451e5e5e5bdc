"""Options shared by ``run``, ``estimate`` and ``batch export``, and the run config they make."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from rescue_bench.cli.tasks import GoldField, RppCurrent, RppGold, SspEmotion
from rescue_bench.engine.manifest import ALL_TASKS, RunConfig
from rescue_bench.errors import ConfigError

__all__ = ["GoldField", "RppCurrent", "RppGold", "SspEmotion"]


class VideoForm(StrEnum):
    video = "video"
    frames = "frames"


Model = Annotated[
    str, typer.Option("--model", "-m", help="provider/model, e.g. openai/gpt-4o, local/gemma-3-270m.")
]
Tasks = Annotated[str, typer.Option("--tasks", help="all, or a comma list of itp,rpp,stp,ssp,er,vp.")]
Data = Annotated[
    str, typer.Option("--data", help="A release JSONL file, a directory, 'hf[:repo]' or 'demo'.")
]
Mode = Annotated[
    str,
    typer.Option("--mode", help="dialogue (text), or video (ER/VP/SSP with row clips; needs --clips)."),
]
Context = Annotated[
    int | None, typer.Option("--context-size", help="-1 all prior rows, 0 none, N the last N.")
]
BatchSize = Annotated[
    int | None,
    typer.Option("--batch-size", help="Instances per request (default: per task; 1 in video mode)."),
]
Judge = Annotated[
    list[str] | None,
    typer.Option("--judge", help="Judge model for ER/VP, asked after the run (repeatable)."),
]
Limit = Annotated[int | None, typer.Option("--limit-samples", help="Only the first N selected samples.")]
SampleIds = Annotated[
    Path | None, typer.Option("--sample-ids", help="JSON list, {'sample_ids': [...]}, or lines.")
]
Seed = Annotated[int | None, typer.Option("--seed", help="Sent to the model as its seed; seeds baselines.")]
BaseUrl = Annotated[str | None, typer.Option("--base-url", help="Endpoint of an OpenAI-compatible server.")]
KeyEnv = Annotated[
    str | None, typer.Option("--api-key-env", help="Name of the variable that holds the API key.")
]
NoThink = Annotated[
    bool, typer.Option("--disable-thinking", help="Send the endpoint's switch to turn off thinking.")
]
PriceIn = Annotated[float | None, typer.Option("--price-in", help="USD per million prompt tokens.")]
PriceOut = Annotated[float | None, typer.Option("--price-out", help="USD per million completion tokens.")]
Prices = Annotated[
    Path | None, typer.Option("--prices", help="JSON file of prices (per model or one entry).")
]
Checkpoints = Annotated[
    int, typer.Option("--checkpoints-per-sample", help="ER/VP: checkpoints per conversation at most.")
]
Clips = Annotated[
    list[Path] | None,
    typer.Option("--clips", help="Video mode: an annotate work directory or review assets (repeatable)."),
]
Form = Annotated[
    VideoForm, typer.Option("--video-form", help="Video mode: send clips as video, or as still frames.")
]
Frames = Annotated[int, typer.Option("--video-frames", help="Video mode: frames per clip (frames form).")]
ClipUrl = Annotated[
    str | None,
    typer.Option("--clip-url-base", help="Video mode: URL the clips are served under (default: data URLs)."),
]
Fps = Annotated[
    float | None, typer.Option("--video-fps", help="Video mode: 'fps' sent with each clip (DashScope).")
]


def parse_sample_ids(path: Path) -> tuple[str, ...]:
    """Sample ids from a JSON list, a ``{"sample_ids": [...]}`` object, or lines (``#`` comments)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--sample-ids: cannot read {path} ({exc.__class__.__name__})") from None
    stripped = text.strip()
    if stripped.startswith(("[", "{")):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--sample-ids: {path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
        ids = data.get("sample_ids") if isinstance(data, dict) else data
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ConfigError(f"--sample-ids: {path} must hold a list of strings or {{'sample_ids': [...]}}")
        return tuple(ids)
    return tuple(
        line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    )


def task_names(tasks: str) -> tuple[str, ...]:
    """
    >>> task_names("all") == ALL_TASKS, task_names(" ER, vp ")
    (True, ('er', 'vp'))
    """
    names = (
        ALL_TASKS
        if tasks.strip().lower() == "all"
        else tuple(t.strip().lower() for t in tasks.split(",") if t.strip())
    )
    unknown = [t for t in names if t not in ALL_TASKS]
    if unknown or not names:
        raise ConfigError(
            f"--tasks: unknown task {unknown[0] if unknown else tasks!r}; use all or {','.join(ALL_TASKS)}"
        )
    return names


def make_config(
    *,
    model: str,
    tasks: str = "all",
    data: str = "demo",
    mode: str = "dialogue",
    context_size: int | None = None,
    batch_size: int | None = None,
    judge: list[str] | None = None,
    limit_samples: int | None = None,
    sample_ids: Path | None = None,
    seed: int | None = None,
    disable_thinking: bool = False,
    base_url: str | None = None,
    api_key_env: str | None = None,
    rpp_gold_field: GoldField = GoldField.auto,
    rpp_current_turn: bool = False,
    ssp_target_emotion: bool = False,
    checkpoints_per_sample: int = 5,
    clips: list[Path] | None = None,
    video_form: VideoForm = VideoForm.video,
    video_frames: int = 4,
    clip_url_base: str | None = None,
    video_fps: float | None = None,
) -> RunConfig:
    """The run config of the command-line options (the ones a command lacks keep their defaults)."""
    if batch_size is not None and batch_size < 1:
        raise ConfigError(f"--batch-size must be at least 1 (got {batch_size})")
    return RunConfig(
        model=model,
        tasks=task_names(tasks),
        data=data,
        mode=mode,
        context_size=context_size,
        batch_size=batch_size,
        judges=tuple(judge or ()),
        limit_samples=limit_samples,
        sample_ids=parse_sample_ids(sample_ids) if sample_ids else None,
        seed=seed,
        disable_thinking=disable_thinking,
        base_url=base_url,
        api_key_env=api_key_env,
        rpp_gold_field=GoldField(rpp_gold_field).value,
        rpp_include_current_turn=rpp_current_turn,
        ssp_include_target_emotion=ssp_target_emotion,
        checkpoints_per_sample=checkpoints_per_sample,
        clips=tuple(str(c) for c in clips or ()),
        video_form=VideoForm(video_form).value,
        video_frames=video_frames,
        clip_url_base=clip_url_base,
        video_fps=video_fps,
    )


CONFIG_OPTIONS = frozenset(inspect.signature(make_config).parameters)


def config_from(options: Mapping[str, Any]) -> RunConfig:
    """:func:`make_config` of those of a command's parameters that it takes (pass ``locals()``)."""
    return make_config(**{k: v for k, v in options.items() if k in CONFIG_OPTIONS})


def default_out(config: RunConfig) -> Path:
    """``runs/<model>_<data>[_<tasks>]``: the same command lands in (and resumes) the same directory."""

    def slug(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"

    data = slug(Path(config.data).stem if config.data not in ("demo", "hf") else config.data)
    tasks = "" if config.tasks == ALL_TASKS else "_" + "-".join(config.tasks)
    mode = "_video" if config.video else ""
    return Path("runs") / f"{slug(config.model)}_{data}{tasks}{mode}"


def make_prices(model: str, price_in: float | None, price_out: float | None, prices: Path | None) -> Any:
    from rescue_bench.pricing import Prices, load_prices

    if prices is not None:
        if price_in is not None or price_out is not None:
            raise ConfigError("give either --prices or --price-in/--price-out, not both")
        return load_prices(prices, model)
    if (price_in is None) != (price_out is None):
        raise ConfigError("--price-in and --price-out go together")
    return None if price_in is None or price_out is None else Prices(price_in, price_out)
