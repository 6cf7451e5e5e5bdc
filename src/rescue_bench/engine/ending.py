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

from rescue_bench.models.presets import SCHEMA_KEEPER, keeps_schema
from rescue_bench.records import ProblemKind
from rescue_bench.rundir import Counts, PredictionLine
from rescue_bench.rundir.counts import total
from rescue_bench.rundir.status import RunStatus

_ATTEMPTS = re.compile(r" \(gave up after \d+ attempts?[^)]*\)$")
_OVERFLOWS = (
    # OpenAI, vLLM: "maximum context length is 2048 tokens. However, you requested 3878 tokens"
    re.compile(
        r"maximum context length is (?P<ctx>\d+) tokens.*?(?:requested|contains at least) (?P<n>\d+)", re.S
    ),
    # llama-cpp-python: "Requested tokens (3878) exceed context window of 2048"
    re.compile(r"Requested tokens \((?P<n>\d+)\) exceed context window of (?P<ctx>\d+)"),
    # llama-server: "request (4476 tokens) exceeds the available context size (4096 tokens)"
    re.compile(r"request \((?P<n>\d+) tokens\) exceeds the available context size \((?P<ctx>\d+) tokens"),
    re.compile(r"exceeds the available context size(?P<ctx>)(?P<n>)"),
)
_OVERFLOW_FIX = (
    "raise the server's context size (llama.cpp: -c/--ctx-size, llama-cpp-python: --n_ctx, vLLM: "
    "--max-model-len, Ollama: num_ctx), or ask less: a smaller --context-size (fewer earlier rows) or "
    "--max-tokens"
)

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


def unanswered(record: PredictionLine) -> bool:
    """Whether a prediction line records an instance that got no answer (asked again by a re-run).

    >>> line = PredictionLine(instance_id="i", task="itp", problems=("request_failed: HTTP 503",))
    >>> unanswered(line), unanswered(line.model_copy(update={"problems": ("parse_failure: empty",)}))
    (True, False)
    >>> unanswered(line.model_copy(update={"valid": True}))
    False
    """
    return not record.answered


def reason_of(problem: str) -> str:
    """A problem string as a reason to group by: without its kind and its count of attempts; a context
    overflow as one reason per context size, with the fix (:func:`overflow`).

    >>> reason_of("request_failed: connection error: refused (gave up after 6 attempts)")
    'connection error: refused'
    >>> reason_of("parse_failure: not JSON")
    'parse_failure: not JSON'
    """
    if ProblemKind.of(problem) is ProblemKind.REQUEST_FAILED:
        problem = problem.split(":", 1)[1].strip()
    found = overflow(problem)
    return overflow_reason(found[0]) if found else _ATTEMPTS.sub("", problem)


def overflow(problem: str) -> tuple[int | None, int | None] | None:
    """The server's context size and the request's tokens of a context-overflow error (each ``None`` when
    the message does not say); ``None`` for any other problem.

    >>> overflow("HTTP 400: maximum context length is 2048 tokens. However, you requested 3878 tokens")
    (2048, 3878)
    >>> overflow("HTTP 400: Requested tokens (3001) exceed context window of 2048"), overflow("HTTP 503")
    ((2048, 3001), None)
    """
    for pattern in _OVERFLOWS:
        if match := pattern.search(problem):
            ctx, n = match.group("ctx"), match.group("n")
            return (int(ctx) if ctx else None, int(n) if n else None)
    return None


def overflow_reason(context: int | None, tokens: int | None = None) -> str:
    """A context overflow in plain words: the sizes and the fix.

    >>> overflow_reason(2048, 3878)[:90]
    "context overflow: requests of up to 3878 tokens exceed the server's context of 2048 tokens"
    """
    size = f"requests of up to {tokens} tokens" if tokens else "requests"
    ctx = f"the server's context of {context} tokens" if context else "the server's context size"
    return f"context overflow: {size} exceed {ctx}; {_OVERFLOW_FIX}"


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


def run_status(
    lines: Iterable[PredictionLine], planned: int, degraded_share: float, step_down: str | None = None
) -> Ending:
    """The status of a session that asked everything it had to (no budget stop, no interrupt).

    ``step_down``: the endpoint's step-down of the answer format (:func:`stepped_down`), which is then the
    likely fix of a run whose answers failed.
    """
    unanswered_by: dict[str, Counter[str]] = {}
    failed: Counter[str] = Counter()
    kinds: Counter[ProblemKind] = Counter()
    largest: dict[tuple[str, str], tuple[int | None, int]] = {}
    for line in lines:
        if line.valid:
            continue
        first = line.problems[0] if line.problems else "other: no reason recorded"
        reason = reason_of(first)
        if (found := overflow(first)) and found[1]:  # a task's overflows are one reason: its largest request
            seen = largest.get((line.task, reason), (None, 0))[1]
            largest[line.task, reason] = (found[0], max(seen, found[1]))
        if unanswered(line):
            unanswered_by.setdefault(line.task, Counter())[reason] += 1
        else:
            failed[reason] += 1
            kinds[ProblemKind.of(first)] += 1
    for (task, reason), (context, tokens) in largest.items():
        if reason in unanswered_by.get(task, {}):
            unanswered_by[task][overflow_reason(context, tokens)] += unanswered_by[task].pop(reason)
    share = sum(failed.values()) / planned if planned else 0.0
    dominant = None
    if failed:
        kind = kinds.most_common(1)[0][0]
        dominant = (failed.most_common(1)[0][0], step_down or _HINTS.get(kind))
    no_answer = sum(sum(c.values()) for c in unanswered_by.values())
    status = _status(planned, no_answer, sum(failed.values()), degraded_share)
    return Ending(status, unanswered_by, share, dominant)


def stepped_down(counts: Mapping[str, Counts], asked: str) -> str | None:
    """The step-down of the answer format that ``run.json``'s counts record, in words, with the preset that
    keeps the schema; ``None`` when every answer was asked as ``asked`` or with the schema inside
    ``json_object`` (``llamacpp-server/``'s own way, nothing lost).

    >>> stepped_down({"itp": Counts(response_formats={"json_object": 3})}, "json_schema")[:99]
    "the endpoint refused the run's response format (json_schema): the answers were asked in json_object"
    >>> stepped_down({"itp": Counts(response_formats={"json_object+schema": 3})}, "json_schema") is None
    True
    """
    used: dict[str, list[str]] = {}
    for task, count in counts.items():
        for label in count.response_formats:
            if label != asked and not keeps_schema(label):
                used.setdefault(label, []).append(task)
    if not used:
        return None
    label, tasks = max(used.items(), key=lambda item: len(item[1]))
    return (
        f"the endpoint refused the run's response format ({asked}): the answers were asked in {label} "
        f"({', '.join(tasks)}), without the answer's schema; {SCHEMA_KEEPER}"
    )


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
