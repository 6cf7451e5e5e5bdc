"""CLI commands: ``rescue-bench score`` (re-judge a run) and ``rescue-bench judge calibrate``.

``score RUN --judge M [--judge M2]`` asks only the judge models (and the local BERTScore model) about the
run's existing ER/VP predictions; nothing is regenerated. It resumes like a run: instances a judge already
graded are skipped. ``judge calibrate --human ratings.csv --run RUN`` prints the paper's Table 12 layout.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from rescue_bench.cli.flags import flag_values
from rescue_bench.cli.outcome import EXIT_DEGRADED, EXIT_INCOMPLETE, resume_command
from rescue_bench.cli.run_flags import EndpointCommand, ModelSettings, model_settings
from rescue_bench.errors import ConfigError, DataError
from rescue_bench.evaluation.run import judge_again
from rescue_bench.judge.after_run import JudgeSettings
from rescue_bench.judge.bertscore import BUNDLED_MODEL, DEFAULT_MODEL
from rescue_bench.judge.calibrate import calibrate as run_calibration
from rescue_bench.judge.calibrate import read_ratings, table12_columns, table12_rows
from rescue_bench.judge.runner import JudgeRunResult
from rescue_bench.printable import echo, printable
from rescue_bench.report.entries import ScopeEntry
from rescue_bench.report.tables import Table
from rescue_bench.report.writers import markdown_table
from rescue_bench.rundir import (
    RUN_FILE,
    SCORES_FILE,
    Manifest,
    Scores,
    check_run_dir,
    load_run,
    read_json_object,
)
from rescue_bench.spec import JudgeSpec
from rescue_bench.tasks import judged_tasks

RunDir = Annotated[
    Path, typer.Argument(help="A run directory (holds predictions.jsonl).", show_default=False)
]
JudgeOpt = Annotated[
    list[str] | None,
    typer.Option("--judge", help="Judge model provider/model for ER/VP (repeatable: several judges)."),
]


def _warn(message: str) -> None:
    echo(f"warning: {printable(message)}", err=True)


def _print_result(result: JudgeRunResult) -> None:
    for name, tally in result.tallies.items():
        echo(
            f"{name}: {tally.summary()}; {tally.reasked} re-asked, {tally.skipped_invalid} invalid "
            f"predictions at the floor, {tally.resumed} already judged; {tally.requests} requests, "
            f"{tally.usage.total_tokens} tokens"
        )
    if result.bertscore_hash:
        echo(f"BERTScore: {result.bertscored} instances scored ({result.bertscore_hash})")
    scores = Scores.of(result.scores)
    for task in judged_tasks():
        entry = ScopeEntry.of(scores, task, "all")
        if entry.model_fields_set or entry.model_extra:
            llm, f1 = entry.metric("llm"), entry.metric("bertscore_f1")
            unscored = entry.n_unscored if "n_unscored" in entry.model_fields_set else 0
            # n is what the mean is over: the judged instances, not every instance of the task.
            judged_n = entry.n_judged if "n_judged" in entry.model_fields_set else entry.n
            echo(
                f"{task.upper()}: LLM {'not judged' if llm is None else f'{llm:.3f}'} "
                f"(n={judged_n}, unscored {unscored}), BERTScore {'–' if f1 is None else f'{f1:.4f}'}"
            )


RetryUnscored = Annotated[
    bool, typer.Option("--retry-unscored", help="Ask again the instances a judge left unscored.")
]
BertscoreModel = Annotated[
    str | None,
    typer.Option(
        "--bertscore-model",
        help=f"BERTScore backbone: HF id or path, {BUNDLED_MODEL} (bundled, offline) or 'none' to skip "
        f"[default: {DEFAULT_MODEL}, as the reference scripts; skipped with a warning when not cached].",
    ),
]
BertscoreLayers = Annotated[
    int | None, typer.Option("--bertscore-layers", help="Layer of the backbone (default: tuned/last).")
]


def score(
    ctx: typer.Context,
    run_dir: RunDir,
    judge: JudgeOpt = None,
    retry_unscored: RetryUnscored = False,
    bertscore_model: BertscoreModel = None,
    bertscore_layers: BertscoreLayers = None,
) -> None:
    """Judge (or re-judge) an existing run's ER/VP predictions without regenerating them.

    The model, generation and engine flags are ``run``'s, with its defaults: ``--base-url`` and
    ``--api-key-env`` name the judges' endpoint, and the generation settings are every judge's.
    """
    try:
        check_run_dir(run_dir)
    except DataError as exc:
        raise ConfigError(str(exc)) from None  # the run to score is a usage error (exit 2)
    given = model_settings(flag_values(ctx))
    spec = _score_pass(given, judge or [], retry_unscored, bertscore_model, bertscore_layers)
    result = asyncio.run(judge_again(run_dir, spec, warn=_warn))
    _print_result(result)
    echo(f"scores written to {run_dir / SCORES_FILE}")
    if result.status == "incomplete":
        echo(
            f"incomplete: {result.unanswered()} judge verdicts got no answer; resume: {resume_command()}",
            err=True,
        )
        raise typer.Exit(EXIT_INCOMPLETE)
    ended = Manifest.from_json(read_json_object(run_dir / RUN_FILE) or {}, str(run_dir / RUN_FILE))
    if ended.status == "degraded":  # the judges' degraded rule, or the model's: run's exit code
        echo(f"degraded: {ended.stop_reason or 'most answers failed'}", err=True)
        raise typer.Exit(EXIT_DEGRADED)


def _score_pass(
    given: ModelSettings,
    judge: list[str],
    retry_unscored: bool,
    bertscore_model: str | None,
    bertscore_layers: int | None,
) -> JudgeSettings:
    """The pass's settings: the endpoint flags are its default endpoint, the generation settings every
    judge's."""
    # The endpoint flags name the judges' endpoint; the generation settings are every judge's.
    judges = (given.validate(JudgeSpec, name=n, name_flag="--judge") for n in judge)
    backbone = _backbone(bertscore_model)
    return JudgeSettings(
        tuple(judges),
        given.engine,
        bertscore=None if bertscore_model is None else backbone is not None,
        bertscore_model=backbone or DEFAULT_MODEL,
        bertscore_layers=bertscore_layers,
        retry_unscored=retry_unscored,
    )


def _backbone(given: str | None) -> str | None:
    """``--bertscore-model``: the default backbone when not given, ``None`` for 'none'."""
    if given is None:
        return DEFAULT_MODEL
    return None if given.lower() == "none" else given


def calibrate(
    human: Annotated[
        Path, typer.Option("--human", help="Ratings CSV: item_id,instance_id,task,annotator,human_score.")
    ],
    run_dir: Annotated[Path, typer.Option("--run", help="The judged run directory.")],
    judge: Annotated[
        str | None, typer.Option("--judge", help="Compare this judge only (default: mean).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Compare judge scores with human ratings in the layout of the paper's Table 12."""
    ratings = read_ratings(human)
    run = load_run(run_dir)
    result = run_calibration(ratings, run.judgment_lines, judge, str(human), run.manifest.config)
    if as_json:
        echo(json.dumps(result.to_json(), indent=2))
        return
    table = Table("calibration", "Human vs LLM-as-judge", table12_columns(), tuple(table12_rows(result)))
    # The judge's name and the instance ids come from the ratings file and the run: shown, never obeyed.
    echo(printable(f"judge: {result.judge}; {result.matched} ratings matched"))
    echo(printable(markdown_table(table)))
    if result.unmatched:
        shown = ", ".join(result.unmatched[:5]) + (" ..." if len(result.unmatched) > 5 else "")
        unmatched = f"{len(result.unmatched)} rated instances have no valid judge score in the run: {shown}"
        echo(printable(unmatched, one_line=True), err=True)


def register(app: typer.Typer) -> None:
    """Add ``score`` and the ``judge`` group to the root app."""
    app.command("score", cls=EndpointCommand)(score)
    group = typer.Typer(help="Judge reliability tools.", no_args_is_help=True)
    group.command("calibrate")(calibrate)
    app.add_typer(group, name="judge")
