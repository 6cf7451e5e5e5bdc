"""Report tables of how each run went, as plain data like :mod:`rescue_bench.report.tables`: its judges and
their agreement, its repeats, its parse failures and invalid labels, and its requests, tokens and cost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rescue_bench.pricing import Prices
from rescue_bench.records import Json
from rescue_bench.report.entries import Agreement, RepeatSpread, ScopeEntry, UsageEntry
from rescue_bench.report.tables import Cell, Table, Value, display_names, scored_tasks, task_names
from rescue_bench.rundir import RunData, ScoresMeta
from rescue_bench.tasks import judged_tasks, percent_tasks


def judges(runs: Sequence[RunData]) -> Table:
    """The judges of each run and, with several judges, their agreement (ER ``s_emo``, VP total)."""
    rows: list[tuple[Value, ...]] = []
    for name, run in zip(display_names(runs), runs, strict=True):
        meta = run.score_record.meta if run.score_record is not None else ScoresMeta()
        listed = ", ".join(meta.judges) or "none"
        agreement = meta.judge_agreement or {}
        for task in judged_tasks():
            if agreement.get(task):
                entry = Agreement.model_validate(agreement[task])
                alpha = entry.alpha_ordinal
                rows.append(
                    (
                        name,
                        task.upper(),
                        listed,
                        entry.n_items,
                        None if alpha is None else Cell(alpha, digits=3),
                        Cell(entry.exact_agreement, scale=100.0, digits=1),
                        Cell(entry.mae, digits=3),
                    )
                )
        if not agreement:
            rows.append((name, task_names(judged_tasks(), ", "), listed, None, None, None, None))
    return Table(
        "judges",
        "Judges and inter-judge agreement",
        ("Model", "Task", "Judges", "Items", "Krippendorff alpha (ordinal)", "Exact agreement (%)", "MAE"),
        tuple(rows),
        "Agreement on the ER emotion score (1-5) and the VP total (0-6) over the items at least two "
        "judges scored; a score is the per-instance mean over the judges with a valid verdict.",
    )


def repeats(runs: Sequence[RunData]) -> Table:
    """Tasks asked several times (``repeats``, CircularEval): each headline metric's mean over repeats with
    its two-level CI, the between-repeat spread, and CircularEval's accuracy (both scenarios). No rows for
    runs without repeats (the report then leaves the table out)."""
    rows: list[tuple[Value, ...]] = []
    for name, run in zip(display_names(runs), runs, strict=True):
        for task in scored_tasks(run):
            entry = ScopeEntry.of(run.score_record, task, "all")
            if entry.repeats is not None:
                rows.extend(_repeat_rows(name, task, entry, entry.repeats))
    return Table(
        "repeats",
        "Repeats: mean over repeats, spread between them, CircularEval",
        ("Model", "Task", "Repeats", "Metric", "Mean [95% CI]", "SD", "Min", "Max", "Circular [95% CI]"),
        tuple(rows),
        "The CI resamples conversations, then repeats within each (two-level bootstrap, docs/repeats.md); "
        "SD, min and max are those of the repeats' own values. Circular: correct under every rotation of "
        "the label list (label-order:all).",
    )


def _repeat_rows(name: str, task: str, entry: ScopeEntry, spread: RepeatSpread) -> list[tuple[Value, ...]]:
    scale = 100.0 if task in percent_tasks() else 1.0
    circular = entry.circular
    rows: list[tuple[Value, ...]] = []
    for metric, sd in spread.sd.items():
        value = entry.metric(metric)
        if value is None or sd is None:
            continue
        lo, hi = entry.bounds(metric)
        low, high = spread.range.get(metric) or (None, None)
        ring: Value = None
        if circular is not None and metric in ("accuracy", "recall_at_1"):
            ring = Cell(circular.accuracy, circular.ci[0], circular.ci[1], scale=scale)
        rows.append(
            (
                name,
                task.upper(),
                spread.k,
                metric,
                Cell(value, lo, hi, scale=scale),
                Cell(sd, scale=scale),
                Cell(low, scale=scale),
                Cell(high, scale=scale),
                ring,
            )
        )
    return rows


def failures(runs: Sequence[RunData]) -> Table:
    """Parse failures, invalid labels and unscored judge verdicts per run and task (both scenarios)."""
    rows: list[tuple[Value, ...]] = []
    for name, run in zip(display_names(runs), runs, strict=True):
        for task in scored_tasks(run):
            entry = ScopeEntry.of(run.score_record, task, "all")
            if entry.empty:
                continue
            n = entry.count("n")
            parse, invalid = entry.count("parse_failures"), entry.count("invalid_labels")
            rows.append(
                (
                    name,
                    task.upper(),
                    n,
                    entry.count("valid"),
                    parse,
                    Cell(parse / n if n else 0.0, scale=100.0, digits=1),
                    invalid,
                    Cell(invalid / n if n else 0.0, scale=100.0, digits=1),
                    entry.n_unscored if task in judged_tasks() else None,
                )
            )
    return Table(
        "failures",
        "Parse failures and invalid labels",
        (
            "Model",
            "Task",
            "n",
            "Valid",
            "Parse failures",
            "Parse failures (%)",
            "Invalid labels",
            "Invalid labels (%)",
            "Judge unscored",
        ),
        tuple(rows),
        "Invalid answers are scored as misses (and at the floor for ER/VP), never dropped.",
    )


PriceOf = Callable[[str], Prices]
"""The prices of a ``provider/model`` (raises ConfigError when unknown)."""


def usage(runs: Sequence[RunData], prices: PriceOf | None = None) -> Table:
    """Requests, tokens and cost per run and task (from run.json counts), plus each judge's pass.

    Cost is the run's recorded cost when there is one, else tokens x ``prices`` of the model (or judge).
    """
    rows: list[tuple[Value, ...]] = []
    for name, run in zip(display_names(runs), runs, strict=True):
        for task, entry in run.manifest.counts.items():
            rows.append(_usage_row(name, task.upper(), UsageEntry.of(entry.to_json()), run.name, prices))
        for judge, tally in run.judging.counts.items():
            rows.append(_usage_row(name, f"judge {judge}", UsageEntry.of(tally.model_dump()), judge, prices))
    return Table(
        "usage",
        "Requests, tokens and cost",
        (
            "Model",
            "Part",
            "Requests",
            "Prompt tokens",
            "Completion tokens",
            "Reasoning tokens",
            "Truncated replies",
            "Empty after reasoning",
            "Cost (USD)",
        ),
        tuple(rows),
        "Cost: recorded by the run, or tokens x --prices; '–' when neither is known. Truncated replies (at "
        "the output cap) and replies empty after their reasoning are parse failures, scored as misses.",
    )


def _usage_row(
    name: str, part: str, entry: UsageEntry, model: str, prices: PriceOf | None
) -> tuple[Value, ...]:
    tokens = entry.counted
    prompt, completion = _whole(tokens.prompt_tokens), _whole(tokens.completion_tokens)
    cost = entry.recorded_cost()
    if cost is None and prices is not None and prompt + completion:
        cost = prices(model).cost(prompt, completion)
    return (
        name,
        part,
        entry.requests,
        tokens.prompt_tokens,
        tokens.completion_tokens,
        tokens.reasoning_tokens,
        entry.truncated,
        entry.empty_after_reasoning,
        Cell(float(cost), digits=4) if cost is not None else None,
    )


def _whole(value: Json) -> int:
    return int(value) if isinstance(value, int | float | str) and value else 0
