"""What each page shows, as plain template contexts shared by the local app and the static bundle."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rescue_bench.report.comparison import compare_run_data, comparison_table
from rescue_bench.report.run_tables import usage
from rescue_bench.report.tables import Table, leaderboard, per_scenario
from rescue_bench.tasks import tasks_of_kind
from rescue_bench.view.data import ReplyRecord, RunView, Source, run_labels
from rescue_bench.view.filters import COMPARISONS, Query, apply, neighbours, paginate, params
from rescue_bench.view.matrices import all_matrices
from rescue_bench.view.rows import FAILURE_KINDS, InstanceRow
from rescue_bench.view.transcript import Rebuilt, rebuild, transcript_hit

Context = dict[str, Any]


@dataclass(frozen=True, slots=True)
class TaskCounts:
    task: str
    expected: int | None
    instances: int
    valid: int
    failures: Mapping[str, int]
    correct: int | None


def task_counts(view: RunView) -> list[TaskCounts]:
    """Per task: instances written (of those planned), valid, each kind of failure, top-1 correct."""
    out = []
    for task in view.tasks:
        rows = [r for r in view.rows if r.task == task]
        kinds = Counter(r.failure for r in rows if r.failure)
        judged = [r.correct for r in rows if r.correct is not None]
        out.append(
            TaskCounts(
                task=task,
                expected=view.expected(task),
                instances=len(rows),
                valid=sum(r.valid for r in rows),
                failures={k: kinds.get(k, 0) for k in FAILURE_KINDS},
                correct=sum(judged) if judged else None,
            )
        )
    return out


def overview(views: Sequence[RunView]) -> Context:
    data = [v.data for v in views]
    return {
        "title": "Runs",
        "views": views,
        "broken": [],
        "counts": {v.index: task_counts(v) for v in views},
        "tables": [leaderboard(data), per_scenario(data), usage(data)],
        "failure_kinds": FAILURE_KINDS,
    }


def choices(rows: Sequence[InstanceRow], task: str) -> Context:
    """The values the list's drop-down filters offer for one task."""
    mine = [r for r in rows if r.task == task]
    return {
        "scenarios": sorted({r.scenario for r in mine}),
        "samples": sorted({r.sample_id for r in mine}),
        "golds": sorted({r.gold for r in mine}) if task not in tasks_of_kind("generation") else [],
        "preds": sorted({r.predicted for r in mine}) if task not in tasks_of_kind("generation") else [],
    }


def hits_for(view: RunView, source: Source | None, query: Query) -> Any:
    """A predicate: does the query's text occur in a transcript row an instance was shown (up to its row)?"""
    needle = query.q.strip().lower()
    if not needle or source is None or source.problem:
        return None
    first = transcript_hit(source.texts, needle)

    def hit(row: InstanceRow) -> bool:
        row_hit = first.get(row.sample_id)
        return row_hit is not None and row_hit <= row.row_index

    return hit


def pick(views: Sequence[RunView], index: int | None) -> RunView | None:
    """The run with this index among ``views`` (a damaged run is not among them)."""
    return next((v for v in views if v.index == index), None)


def _run(views: Sequence[RunView], index: int) -> RunView:
    found = pick(views, index)
    if found is None:
        raise KeyError(f"no run {index}")
    return found


def filtered(
    views: Sequence[RunView], query: Query, source: Source | None, *, texts: bool = True
) -> list[InstanceRow]:
    """The rows of the list ``query`` asks for; ``texts`` false searches instance ids only (redacted)."""
    view = _run(views, query.run)
    found = pick(views, query.vs)
    other = found.by_key if found is not None else None
    hits = hits_for(view, source, query) if texts else None
    return apply(view.rows, query, other=other, transcript_hits=hits, texts=texts)


def instances(
    views: Sequence[RunView], query: Query, source: Source | None, *, texts: bool = True
) -> Context:
    view = _run(views, query.run)
    rows = filtered(views, query, source, texts=texts)
    page = paginate(rows, query)
    other = pick(views, query.vs)
    return {
        "title": f"{query.task.upper()} instances of {view.name}",
        "view": view,
        "views": views,
        "query": query,
        "filters": params(query, page=query.page),
        "page": page,
        "other": other,
        "choices": choices(view.rows, query.task),
        "failure_kinds": FAILURE_KINDS,
        "comparisons": COMPARISONS,
        "params": params,
    }


def side_by_side(
    views: Sequence[RunView], instance_id: str, repeat: int = 0
) -> list[tuple[RunView, InstanceRow | None]]:
    """Every run's row of the instance: the same repeat where a run has it, else its first."""
    return [(v, v.by_key.get((instance_id, repeat)) or v.by_id.get(instance_id)) for v in views]


@dataclass(frozen=True, slots=True)
class RepeatReply:
    """One repeat of an instance as its page shows it: the row (answer, verdict, scores) and the reply."""

    row: InstanceRow
    scores: Mapping[str, Any]
    reply: ReplyRecord | None


def repeat_replies(view: RunView, instance_id: str) -> list[RepeatReply]:
    """Every repeat's answer, scores and reply of one instance (empty for a run without repeats)."""
    if view.repeats <= 1:
        return []
    return [
        RepeatReply(
            row,
            view.records[row.position].scores,
            view.reply_of(row),
        )
        for row in view.repeats_of(instance_id)
    ]


def shown_repeat(query: Query) -> int:
    """The repeat an instance page shows first: the row it was opened from, or the list's repeat filter."""
    if query.at is not None:
        return query.at
    return 0 if query.repeat is None else query.repeat


def instance(
    views: Sequence[RunView],
    query: Query,
    instance_id: str,
    source: Source | None,
    rows: Sequence[InstanceRow] | None,
    *,
    texts: bool = True,
) -> Context | None:
    """The instance page, or ``None`` when the run has no such instance."""
    view = _run(views, query.run)
    repeat = shown_repeat(query)
    row = view.by_key.get((instance_id, repeat))
    if row is None:
        return None
    reply: ReplyRecord | None = view.reply_of(row)
    rebuilt = rebuild(source, row.task, row.sample_id, row.instance_id, reply) if source else Rebuilt()
    record = view.records[row.position]
    listed = rows if rows is not None else filtered(views, query, source, texts=texts)
    before, after = neighbours(listed, instance_id, repeat)
    return {
        "title": instance_id,
        "view": view,
        "views": views,
        "row": row,
        "record": record,
        "reply": reply,
        "judgments": view.judgments.get(record.key, ()),
        "rebuilt": rebuilt,
        "before": before,
        "after": after,
        "query": query,
        "filters": params(query, page=query.page),
        "others": side_by_side(views, instance_id, repeat) if len(views) > 1 else [],
        "repeats": repeat_replies(view, instance_id),
    }


@dataclass(frozen=True, slots=True)
class Discordant:
    task: str
    a_only: int
    b_only: int


def discordant(a: RunView, b: RunView) -> list[Discordant]:
    """Per top-1 task both runs have: instances right only in A, and right only in B (with repeats, each
    (instance, repeat) against the same repeat of B, as the filter ``cmp`` lists them)."""
    out = []
    for task in [t for t in a.tasks if t in b.tasks]:
        pairs = [(r, b.by_key.get(r.key)) for r in a.rows if r.task == task and r.correct is not None]
        both = [(r.correct, o.correct) for r, o in pairs if o is not None and o.correct is not None]
        if both:
            out.append(Discordant(task, both.count((True, False)), both.count((False, True))))
    return out


def compare(a: RunView, b: RunView, result: Mapping[str, Any]) -> Context:
    labels = run_labels([a, b])
    names = [labels[a.index], labels[b.index]]
    table: Table = comparison_table(result, (names[0], names[1]), scopes=("all", "couple", "family"))
    return {
        "title": f"{names[0]} vs {names[1]}",
        "a": a,
        "b": b,
        "names": names,
        "table": table,
        "discordant": discordant(a, b),
    }


def comparison_result(a: RunView, b: RunView, resamples: int = 1000) -> Mapping[str, Any]:
    """The paired comparison of ``compare``; raises a :class:`~rescue_bench.errors.BenchError` on mismatch."""
    return compare_run_data(a.data, b.data, n_resamples=resamples)


def matrices(view: RunView) -> Context:
    return {"title": f"Matrices of {view.name}", "view": view, "matrices": all_matrices(view.records)}
