"""The instance list's query: filters, text search, sorting and pagination, parsed from the URL.

A query is a frozen record; :func:`parse_query` reads it from the query string (a bad value is a clear
:class:`BadQuery`, never a traceback) and :func:`params` writes it back, leaving out defaults, so that links
keep the filter (previous/next instance, pages, sorting).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from rescue_bench.errors import BenchError
from rescue_bench.view.rows import FAILURE_KINDS, InstanceRow

SORTS: dict[str, Callable[[InstanceRow], Any]] = {
    "position": lambda r: r.position,
    "sample": lambda r: (r.sample_id, r.row_index),
    "gold": lambda r: (r.gold, r.position),
    "pred": lambda r: (r.predicted, r.position),
    "correct": lambda r: (r.correct is None, bool(r.correct), r.position),
    "judge": lambda r: (r.judge_score is None, r.judge_score or 0.0, r.position),
    "disagreement": lambda r: (r.disagreement is None, r.disagreement or 0.0, r.position),
    "failure": lambda r: (r.failure, r.position),
    "repeat": lambda r: (r.repeat, r.position),
}
COMPARISONS = {
    "a_only": "right here, wrong in the other run",
    "b_only": "wrong here, right in the other run",
    "both_right": "right in both",
    "both_wrong": "wrong in both",
    "differ": "different answers",
}
PER_PAGE_MAX = 500


class BadQuery(BenchError):
    """A query-string value of the wrong type or outside its set."""


@dataclass(frozen=True, slots=True)
class Query:
    """What the instance list shows: one run and task, filtered, sorted and paged."""

    run: int = 0
    task: str = ""
    scenario: str = ""
    sample: str = ""
    gold: str = ""
    pred: str = ""
    correct: str = ""
    """``yes``, ``no`` or empty."""
    failure: str = ""
    """A kind of :data:`FAILURE_KINDS`, ``any`` or empty."""
    disagree: float | None = None
    """Judge disagreement at least this (score points)."""
    q: str = ""
    prev_gold: str = ""
    gold_kind: str = ""
    pred_kind: str = ""
    repeat: int | None = None
    """Only this repeat's rows (a run with ``--repeats``)."""
    at: int | None = None
    """The repeat of the row an instance page was opened from (its previous and next follow the list)."""
    vs: int | None = None
    cmp: str = ""
    sort: str = "position"
    desc: bool = False
    page: int = 1
    per: int = 50


DEFAULTS = Query()


def _coerce(name: str, raw: str, default: Any) -> Any:
    if name in ("disagree", "vs", "repeat", "at"):
        target: Any = float if name == "disagree" else int
    elif isinstance(default, bool):
        return raw.lower() in ("1", "true", "yes", "on")
    else:
        target = type(default)
    try:
        return target(raw.strip()) if raw.strip() or target is str else None
    except ValueError:
        raise BadQuery(f"query parameter {name}={raw!r}: expected {target.__name__}") from None


def parse_query(values: Mapping[str, str]) -> Query:
    """The query from the URL's parameters; unknown parameters are ignored."""
    found: dict[str, Any] = {}
    for f in fields(Query):
        if f.name in values:
            value = _coerce(f.name, values[f.name], getattr(DEFAULTS, f.name))
            found[f.name] = getattr(DEFAULTS, f.name) if value is None else value
    query = replace(DEFAULTS, **found)
    checks = [
        (query.correct in ("", "yes", "no"), "correct: expected yes or no"),
        (
            query.failure in ("", "any", *FAILURE_KINDS),
            f"failure: expected any or {', '.join(FAILURE_KINDS)}",
        ),
        (query.cmp in ("", *COMPARISONS), f"cmp: expected one of {', '.join(COMPARISONS)}"),
        (query.sort in SORTS, f"sort: expected one of {', '.join(SORTS)}"),
        (query.page >= 1 and 1 <= query.per <= PER_PAGE_MAX, f"page >= 1 and 1 <= per <= {PER_PAGE_MAX}"),
        ((query.repeat or 0) >= 0 and (query.at or 0) >= 0, "repeat and at: expected a repeat >= 0"),
    ]
    for ok, message in checks:
        if not ok:
            raise BadQuery(f"bad query: {message}")
    return query


def params(query: Query, **changes: Any) -> dict[str, str]:
    """The query (with ``changes``) as URL parameters, defaults left out; ``page`` resets unless given."""
    if "page" not in changes:
        changes["page"] = 1
    chosen = replace(query, **changes)
    out: dict[str, str] = {}
    for name, value in asdict(chosen).items():
        if value != getattr(DEFAULTS, name) and value is not None:
            out[name] = ("1" if value else "0") if isinstance(value, bool) else str(value)
    return out


def _compare(mine: InstanceRow, theirs: InstanceRow | None, how: str) -> bool:
    if theirs is None:
        return False
    if how == "differ":
        return mine.predicted != theirs.predicted
    if mine.correct is None or theirs.correct is None:
        return False
    wanted = {"a_only": (True, False), "b_only": (False, True), "both_right": (True, True)}
    return (mine.correct, theirs.correct) == wanted.get(how, (False, False))


def _matches(row: InstanceRow, query: Query) -> bool:
    equal = (
        (query.scenario, row.scenario),
        (query.sample, row.sample_id),
        (query.gold, row.gold),
        (query.pred, row.predicted),
        (query.prev_gold, row.prev_gold),
        (query.gold_kind, row.gold_kind),
        (query.pred_kind, row.pred_kind),
    )
    if any(wanted and wanted != value for wanted, value in equal):
        return False
    if query.repeat is not None and row.repeat != query.repeat:
        return False
    if query.correct and row.correct is not (query.correct == "yes"):
        return False
    if query.failure and not (row.failure if query.failure == "any" else row.failure == query.failure):
        return False
    return query.disagree is None or (row.disagreement is not None and row.disagreement >= query.disagree)


def _found(
    row: InstanceRow, needle: str, texts: bool, transcript_hits: Callable[[InstanceRow], bool] | None
) -> bool:
    if needle in row.instance_id.lower():
        return True
    return texts and (needle in row.search or bool(transcript_hits and transcript_hits(row)))


def apply(
    rows: Sequence[InstanceRow],
    query: Query,
    *,
    other: Mapping[tuple[str, int], InstanceRow] | None = None,
    transcript_hits: Callable[[InstanceRow], bool] | None = None,
    texts: bool = True,
) -> list[InstanceRow]:
    """The rows of ``query.task`` that pass every filter, sorted.

    ``other`` is the compared run's rows by (instance, repeat) (for ``cmp``: repeat r is compared with the
    other run's repeat r); ``transcript_hits`` says whether the
    search text occurs in the transcript an instance showed (the text search also looks at the reply).
    With ``texts`` false (a redacted view) the search looks at instance ids only, so it cannot reveal text.
    """
    needle = query.q.strip().lower()
    out = []
    for row in rows:
        if row.task != query.task or not _matches(row, query):
            continue
        if query.cmp and not _compare(row, (other or {}).get(row.key), query.cmp):
            continue
        if needle and not _found(row, needle, texts, transcript_hits):
            continue
        out.append(row)
    if query.sort != "position" or query.desc:
        out.sort(key=SORTS[query.sort], reverse=query.desc)
    return out


@dataclass(frozen=True, slots=True)
class Page:
    rows: Sequence[InstanceRow]
    number: int
    pages: int
    total: int


def paginate(rows: Sequence[InstanceRow], query: Query) -> Page:
    pages = max(1, -(-len(rows) // query.per))
    number = min(query.page, pages)
    start = (number - 1) * query.per
    return Page(rows[start : start + query.per], number, pages, len(rows))


def neighbours(
    rows: Sequence[InstanceRow], instance_id: str, repeat: int = 0
) -> tuple[InstanceRow | None, InstanceRow | None]:
    """The previous and next row around (``instance_id``, ``repeat``) in a filtered list (``None`` at the
    ends); a run with repeats lists one row per (instance, repeat)."""
    for i, row in enumerate(rows):
        if row.key == (instance_id, repeat):
            return (rows[i - 1] if i else None), (rows[i + 1] if i + 1 < len(rows) else None)
    return None, None
