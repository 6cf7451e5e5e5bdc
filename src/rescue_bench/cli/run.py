"""CLI commands: ``rescue-bench run`` and ``estimate`` (``cache`` and ``batch`` live in their own modules).

Both take every run flag (:mod:`rescue_bench.cli.run_flags`), ``--spec FILE.toml`` and ``--print-spec``.

Exit codes of ``run`` and ``batch import`` (:mod:`rescue_bench.cli.outcome`): 0 finished (failed answers are
counted as misses, not fatal), 1 an error, 2 a usage error, 3 ``--budget`` stopped the run, 4 incomplete
(instances or verdicts got no answer: re-run the same command to ask them again), 5 degraded, 130
interrupted (resumable too).
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from rescue_bench.batch.plan import BatchOptions
from rescue_bench.cli.flags import ENGINE, OUTPUT, flag_values
from rescue_bench.cli.outcome import echo_ending, exit_with, summary_line, validity
from rescue_bench.cli.run_flags import SpecCommand, make_spec, print_spec
from rescue_bench.engine.plans import TaskPlan
from rescue_bench.errors import ConfigError
from rescue_bench.evaluation.run import RunOutcome, with_out
from rescue_bench.evaluation.setup import (
    bertscore_settings,
    make_prices,
    price_source,
    spec_prices,
    with_judges,
)
from rescue_bench.judge.after_run import judge_params, wants_bertscore
from rescue_bench.pricing import Prices, TaskEstimate, make_counter
from rescue_bench.printable import echo, markup_safe, printable
from rescue_bench.report.tables import Table as ReportTable
from rescue_bench.report.tables import Value
from rescue_bench.report.terminal import make_console, print_tables, run_summary
from rescue_bench.rundir import Scores
from rescue_bench.spec import RunSpec
from rescue_bench.tasks import judged_tasks

__all__ = ["make_prices", "register", "report_result", "warn"]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.", rich_help_panel=OUTPUT)]
OutDir = Annotated[
    Path | None,
    typer.Option("--out", help="Run directory (default: runs/<model>_<data>).", rich_help_panel=OUTPUT),
]
BatchPoll = Annotated[
    float,
    typer.Option(
        "--batch-poll",
        help="With --batch: seconds before the first poll of a batch, doubled after each (at most 600).",
        rich_help_panel=ENGINE,
    ),
]


def run(ctx: typer.Context, out: OutDir = None, quiet: Quiet = False, batch_poll: BatchPoll = 30.0) -> None:
    """Run RESCUE-Bench against a model; re-running the same command resumes.

    With --judge, the ER/VP predictions are judged after the run, as `rescue-bench score` does.

    Exit codes: 0 finished, 1 error, 2 usage, 3 stopped, 4 incomplete, 5 degraded, 130 interrupted.
    After 3, 4 or 130, the same command resumes.
    """
    from rescue_bench.evaluation.run import SessionOptions, execute, prepare

    flags = flag_values(ctx)
    spec = make_spec(flags, out=out)
    if flags.print_spec:
        print_spec(with_judges(with_out(spec)))
        return
    # Every option is checked before anything else: --batch-poll, then the spec (prepare).
    options = SessionOptions(quiet=quiet, batch=BatchOptions(poll=batch_poll), warn=warn, note=_note)
    prepared = prepare(spec)
    # SIGTERM (a job scheduler, `timeout`) stops the run like Ctrl-C: records closed, run.json "stopped".
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        outcome = asyncio.run(execute(prepared, options))
    except KeyboardInterrupt:
        echo(f"interrupted; re-run the same command to resume {prepared.out}", err=True)
        raise typer.Exit(130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    report_result(outcome, spec.model.name)


def warn(message: str) -> None:
    echo(f"warning: {printable(message)}", err=True)


def _say(line: str) -> None:
    """A line of the estimate, wrapped at the terminal's width like its tables."""
    make_console().print(Text(printable(line)))


def _note(message: str) -> None:
    echo(f"note: {printable(message)}", err=True)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def report_result(outcome: RunOutcome, model: str) -> None:
    """The scores table (final runs only), failed answers, the summary line, the reasons of unfinished work
    and the command that goes on; exits with the status's code (:mod:`rescue_bench.cli.outcome`)."""
    console = make_console()
    if outcome.scores is not None:
        print_tables(console, [(run_summary(outcome.out, outcome.scores), 1)])
        for line in judged_counts(outcome.scores):
            console.print(markup_safe(line))
    failed = {t: (c.failed_answers, c.instances) for t, c in outcome.counts.items() if c.failed_answers > 0}
    if failed:
        listed = ", ".join(f"{t} {bad}/{n}" for t, (bad, n) in failed.items())
        console.print(markup_safe(f"failed answers (scored as misses): {listed}"))
    if outcome.judged is not None:
        for name, tally in outcome.judged.tallies.items():
            console.print(markup_safe(f"judge {name}: {tally.summary()}"))
    console.print(markup_safe(f"run directory: {outcome.out}"))
    echo(summary_line(model, outcome.status, *validity(outcome.counts)))
    dominant = outcome.ending.dominant if outcome.ending is not None else None
    echo_ending(outcome.status, outcome.reason, outcome.unanswered, outcome.counts, dominant)
    exit_with(outcome.status)


def judged_counts(scores: Scores) -> list[str]:
    """One line per judged task whose judge means cover fewer instances than it has (``n_judged < n``)."""
    lines = []
    for task in judged_tasks():
        entry = scores.entry(task)
        if entry.unjudged:
            judged, n = entry.count("n_judged"), entry.count("n")
            lines.append(
                f"{task.upper()} LLM is the mean over {judged} of {n} instances ({n - judged} not judged)"
            )
    return lines


def estimate(ctx: typer.Context) -> None:
    """Requests, prompt tokens and (with prices) cost per task, before spending anything."""
    from rescue_bench.data.load import load_samples
    from rescue_bench.engine.plans import build_plans, select_samples
    from rescue_bench.evaluation.estimate import cap_note, estimate_plan
    from rescue_bench.pricing.estimate import long_conversation_note
    from rescue_bench.video.mode import check_video_config, clip_coverage

    flags = flag_values(ctx)
    spec = make_spec(flags)
    if flags.print_spec:
        print_spec(spec)
        return
    check_video_config(spec)
    price = spec_prices(spec)
    samples = select_samples(load_samples(spec.data), spec)
    if note := long_conversation_note({s.sample_id: len(s.rows) for s in samples}):
        echo(f"warning: {note}", err=True)
    plans = build_plans(samples, spec)
    counter = make_counter(spec.model.name)
    params = spec.generation()
    rows = [estimate_plan(p, counter, params) for p in plans]
    total = sum(c for r in rows if (c := r.cost(price)) is not None) if price else None
    _print_estimate(rows, price, total, f"Estimate for {spec.model.name} (tokenizer: {counter.name})")
    _say(f"max output tokens at the cap each request is sent with: {cap_note(params)}")
    if spec.batch and price is not None:
        _say("--batch: priced at Batch API prices (half the online price).")
    _say("Retries and single re-asks of missing items come on top; cached requests cost nothing.")
    judged = _print_judges(spec, plans)
    for priced in (price_source(spec), *(price_source(spec, judge.name) for judge in spec.judges)):
        _say(f"price of {priced.describe()}")
    if total is not None and judged is not None:
        _say(f"whole run, judges included: at most ${total + judged:.4f}")
        total += judged
    elif spec.judges:
        _say("whole run, judges included: unknown (a price above is unknown)")
    coverage = clip_coverage(spec, plans)
    if coverage is not None:
        _say(
            f"video: {coverage.clips} clips attached over {coverage.requests} requests; "
            f"{coverage.unusable} instances lack the clip their task needs; clip and frame tokens are not "
            "counted above"
        )
    budget = spec.budget.usd
    if budget is not None and total is not None and total > budget:
        _say(
            f"the worst case (${total:.2f}) exceeds --budget ${budget:.2f}: the run would stop before the end"
        )


def _print_judges(spec: RunSpec, plans: list[TaskPlan]) -> float | None:
    """The judge pass's table (requests, re-asks, tokens, cost per judge) and BERTScore pairs.

    Returns the judges' cost at most, when every judge has a price (else ``None``).
    """
    from rescue_bench.evaluation.estimate import cap_note
    from rescue_bench.judge.estimate import bertscore_pairs, estimate_judge

    total: float | None = 0.0
    counters: list[str] = []
    if spec.judges:
        rows: list[tuple[Value, ...]] = []
        for judge in spec.judges:
            counter = make_counter(judge.name)
            params = judge_params(judge)
            row = estimate_judge(judge.name, plans, counter, spec.judge_repeats, params)
            cost = row.cost(_judge_prices(spec, judge.name))
            total = None if cost is None or total is None else total + cost
            numbers = (row.instances, row.requests, row.reasks, row.prompt_tokens, row.max_output_tokens)
            rows.append((judge.name, *(f"{n:,}" for n in numbers), "-" if cost is None else f"{cost:.4f}"))
            counters.append(f"{judge.name}: {counter.name}, output at {cap_note(params)}")
        title = "Judge pass (ER/VP; every prediction counted as valid, re-asks at most one each)"
        print_tables(make_console(), [(ReportTable("judges", title, JUDGE_COLUMNS, tuple(rows)), 1)])
        _say(f"judge tokenizers and output caps: {'; '.join(counters)}")
    if wants_bertscore(bertscore_settings(spec), spec.tasks):
        instances, pairs = bertscore_pairs(plans)
        _say(f"BERTScore (local, no cost): {pairs:,} text pairs over {instances:,} ER/VP instances.")
    return total if spec.judges else None


def _judge_prices(spec: RunSpec, judge: str) -> Prices | None:
    """The judge's prices for the estimate; a prices file without its entry leaves its cost open."""
    try:
        return spec_prices(spec, judge)
    except ConfigError as exc:
        echo(f"note: {exc}", err=True)
        return None


ESTIMATE_COLUMNS = (
    "Task",
    "Instances",
    "Requests",
    "Prompt tokens",
    "Max output tokens",
    "Cost (USD, at most)",
)
"""The estimate's headers (85 columns wide)."""
JUDGE_COLUMNS = (
    "Judge",
    "Instances",
    "Requests",
    "Re-asks\n(at most)",
    "Prompt\ntokens",
    "Max output\ntokens",
    "Cost (USD,\nat most)",
)
"""The judge pass's headers, two lines where a header is wider than its numbers (the table fits 100 columns
beside a long judge name)."""


def _print_estimate(rows: list[TaskEstimate], price: Prices | None, total: float | None, title: str) -> None:
    body: list[tuple[Value, ...]] = []
    for r in rows:
        cost = r.cost(price)
        numbers = (r.instances, r.requests, r.prompt_tokens, r.max_output_tokens)
        body.append((r.task, *(f"{n:,}" for n in numbers), "-" if cost is None else f"{cost:.4f}"))
    sums = (
        sum(r.instances for r in rows),
        sum(r.requests for r in rows),
        sum(r.prompt_tokens for r in rows),
        sum(r.max_output_tokens for r in rows),
    )
    body.append(("all", *(f"{n:,}" for n in sums), "-" if total is None else f"{total:.4f}"))
    print_tables(make_console(), [(ReportTable("estimate", title, ESTIMATE_COLUMNS, tuple(body)), 1)])


def register(app: typer.Typer) -> None:
    """Add ``run`` and ``estimate`` to the root app."""
    app.command("run", cls=SpecCommand)(run)
    app.command("estimate", cls=SpecCommand)(estimate)
