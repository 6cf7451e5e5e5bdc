"""How a session ends: its status, and the reasons behind the instances that got no answer or failed.

A prediction whose first problem is ``request_failed`` got *no answer* (the endpoint never replied usefully):
unfinished work, asked again by a plain re-run. Any other invalid prediction is *an answer that fails*,
scored as a miss. :func:`run_status` turns the run's final lines into its status
(:mod:`rescue_bench.rundir.status`); :func:`failure_reasons` groups either kind by reason, for the last lines
a session prints and for ``run.json``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rescue_bench.records import Json, ProblemKind
from rescue_bench.rundir import Counts, PredictionLine
from rescue_bench.rundir.counts import total
from rescue_bench.rundir.status import RunStatus

_ATTEMPTS = re.compile(r" \(gave up after \d+ attempts?[^)]*\)$")

_FORMAT_HINT = (
    "the replies do not have the answer's shape (an empty object, prose): the endpoint may ignore the "
    "response format asked for; try another --response-format (json_schema, json_object, text)"
)
_HINTS: Mapping[ProblemKind, str] = {
    ProblemKind.MISSING: _FORMAT_HINT,
    ProblemKind.PARSE_FAILURE: _FORMAT_HINT + ", or a larger --max-tokens if replies are cut off",
    ProblemKind.INVALID_LABEL: "the answers use labels outside the task's set: check the model and prompt",
    ProblemKind.REFUSED: "the endpoint's moderation refused the prompts",
}


def unanswered(record: Mapping[str, Json] | PredictionLine) -> bool:
    """Whether a prediction line records an instance that got no answer (asked again by a re-run).

    >>> unanswered({"valid": False, "problems": ["request_failed: HTTP 503"]})
    True
    >>> unanswered({"valid": False, "problems": ["parse_failure: empty"]}), unanswered({"valid": True})
    (False, False)
    """
    if isinstance(record, PredictionLine):
        valid, problems = record.valid, list(record.problems)
    else:
        valid, given = bool(record.get("valid")), record.get("problems")
        problems = [str(p) for p in given] if isinstance(given, list) else []
    return not valid and bool(problems) and ProblemKind.of(problems[0]) is ProblemKind.REQUEST_FAILED


def reason_of(problem: str) -> str:
    """A problem string as a reason to group by: without its kind and its count of attempts.

    >>> reason_of("request_failed: connection error: refused (gave up after 6 attempts)")
    'connection error: refused'
    >>> reason_of("parse_failure: not JSON")
    'parse_failure: not JSON'
    """
    if ProblemKind.of(problem) is ProblemKind.REQUEST_FAILED:
        problem = problem.split(":", 1)[1].strip()
    return _ATTEMPTS.sub("", problem)


@dataclass(frozen=True, slots=True)
class Ending:
    """A run's status with the counts behind it."""

    status: RunStatus
    unanswered: dict[str, Counter[str]]
    """Task -> reason -> instances that got no answer (empty when every instance has one)."""
    invalid_share: float
    """Share of the planned instances whose answer failed (0 when nothing is planned)."""
    dominant: tuple[str, str | None] | None = None
    """The most frequent reason an answer failed, and the likely fix when one is known."""


def run_status(lines: Iterable[PredictionLine], planned: int, degraded_share: float) -> Ending:
    """The status of a session that asked everything it had to (no budget stop, no interrupt)."""
    unanswered_by: dict[str, Counter[str]] = {}
    failed: Counter[str] = Counter()
    kinds: Counter[ProblemKind] = Counter()
    for line in lines:
        if line.valid:
            continue
        first = line.problems[0] if line.problems else "other: no reason recorded"
        if unanswered(line):
            unanswered_by.setdefault(line.task, Counter())[reason_of(first)] += 1
        else:
            failed[reason_of(first)] += 1
            kinds[ProblemKind.of(first)] += 1
    share = sum(failed.values()) / planned if planned else 0.0
    dominant = None
    if failed:
        kind = kinds.most_common(1)[0][0]
        dominant = (failed.most_common(1)[0][0], _HINTS.get(kind))
    no_answer = sum(sum(c.values()) for c in unanswered_by.values())
    status = _status(planned, no_answer, sum(failed.values()), degraded_share)
    return Ending(status, unanswered_by, share, dominant)


def degraded_reason(ending: Ending) -> str | None:
    """One line for a degraded run: the share of failed answers, the main reason and the likely fix.

    >>> degraded_reason(Ending("degraded", {}, 1.0, ("parse_failure: not JSON", "try text")))
    '100% of the answers failed; main reason: parse_failure: not JSON; likely fix: try text'
    """
    if ending.status != "degraded":
        return None
    text = f"{100 * ending.invalid_share:.0f}% of the answers failed"
    if ending.dominant is not None:
        reason, hint = ending.dominant
        text += f"; main reason: {reason}" + (f"; likely fix: {hint}" if hint else "")
    return text


def counted_status(counts: Mapping[str, Counts], degraded_share: float) -> RunStatus:
    """The status a run's per-task counts (``run.json``) give when its session asked everything.

    >>> counted_status({"itp": Counts(instances=4, invalid=1)}, 0.5)
    'finished'
    >>> counted_status({"itp": Counts(instances=4, invalid=3, request_failures=1)}, 0.5)
    'incomplete'
    >>> counted_status({"itp": Counts(instances=4, invalid=2)}, 0.5)
    'degraded'
    """
    tasks = counts.values()
    no_answer = total(tasks, "request_failures")
    return _status(total(tasks, "instances"), no_answer, total(tasks, "invalid") - no_answer, degraded_share)


def _status(planned: int, no_answer: int, failed: int, degraded_share: float) -> RunStatus:
    """The one rule: any instance without an answer is unfinished; too many failed answers is degraded."""
    if no_answer:
        return "incomplete"
    return "degraded" if planned and failed / planned >= degraded_share else "finished"


def summarise(reasons: Counter[str], limit: int = 3) -> str:
    """``reason: n`` for the most frequent reasons, the rest counted.

    >>> summarise(Counter({"HTTP 503": 3, "timed out": 1}))
    'HTTP 503: 3; timed out: 1'
    """
    top = reasons.most_common(limit)
    text = "; ".join(f"{reason}: {n}" for reason, n in top)
    rest = sum(reasons.values()) - sum(n for _, n in top)
    return f"{text}; {rest} more" if rest else text
