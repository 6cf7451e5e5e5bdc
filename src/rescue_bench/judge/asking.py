"""Asking one judge about a run's ER and VP predictions: the requests, the re-ask, the counts.

One request per sample, task and repeat holds that sample's checkpoints (at most ``max_per_request``); an
item whose verdict is out of range, missing or unreadable (or whose request failed) is asked once more, in
one re-ask request per sample; if it is still invalid it is **left unscored and counted**, never clamped or
defaulted. Invalid predictions are not sent (:func:`plan_groups` counts them). The judge is an injected
async callable, :data:`Complete`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence, Set
from dataclasses import dataclass

from rescue_bench.engine.ending import reason_of
from rescue_bench.errors import BenchError
from rescue_bench.judge import rubric
from rescue_bench.judge.merge import AFTER_REASK, no_verdict, prediction_fingerprint
from rescue_bench.judge.rubric import JudgeItem, Verdict
from rescue_bench.pricing import BudgetExceeded
from rescue_bench.records import ProblemKind, Reply, Request
from rescue_bench.rundir import JudgeCounts, JudgmentLine, PredictionLine

Complete = Callable[[Request], Awaitable[Reply]]
CompleteAgain = Callable[[Request, int], Awaitable[Reply]]
"""Ask a request for the n-th time (``judge_repeats``): its own cache entry and seed (``Engine.ask``)."""
RAW_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class Judge:
    """A judge model: its ``provider/model`` name, how to ask it, and its own requests in flight (``None``:
    the pass's)."""

    name: str
    complete: Complete
    concurrency: int | None = None
    again: CompleteAgain | None = None
    """How to ask judge repeat n > 0; ``None``: as repeat 0 (a fake judge in tests)."""

    async def ask(self, request: Request, judge_repeat: int) -> Reply:
        if judge_repeat == 0 or self.again is None:
            return await self.complete(request)
        return await self.again(request, judge_repeat)


class JudgeStopped(BenchError):
    """The budget stopped the judge pass before a request that could pass it; ``tally`` is what was done."""

    def __init__(self, reason: str, tally: JudgeCounts) -> None:
        super().__init__(f"judge pass stopped: {reason}")
        self.reason = reason
        self.tally = tally


def judge_item(record: PredictionLine) -> JudgeItem:
    """The judge's view of a prediction record: the turn, gold, prediction value and its reason."""
    return JudgeItem(
        record.instance_id,
        record.task,
        record.gold,
        record.prediction,
        record.speaker,
        record.repeat,
        timestamp=record.meta_text("timestamp"),
        utterance=record.meta_text("utterance"),
        reason=record.reason,
    )


def plan_groups(
    records: Iterable[PredictionLine], done: Set[str], max_per_request: int = 10
) -> tuple[list[list[JudgeItem]], JudgeCounts]:
    """Requests to send (one per sample, task and repeat, chunked), and the counts of what is not sent.

    ``done`` holds line keys (:attr:`PredictionLine.key`): an instance's repeats are judged apart, and a
    request never holds two repeats of one instance.

    >>> recs = [PredictionLine(instance_id=f"s::er::{i}", task="er", sample_id="s", valid=i != 3,
    ...         gold={"emotion": "x"}, prediction={"emotion": "y"}) for i in range(1, 5)]
    >>> groups, tally = plan_groups(recs, done={"s::er::4"})
    >>> [[it.instance_id for it in g] for g in groups], tally.skipped_invalid, tally.resumed
    ([['s::er::1', 's::er::2']], 1, 1)
    """
    by_key: dict[tuple[str, str, int], list[JudgeItem]] = {}
    skipped = resumed = 0
    for record in records:
        if record.task not in rubric.JUDGE_TASKS:
            continue
        if not record.valid:
            skipped += 1
        elif record.key in done:
            resumed += 1
        else:
            by_key.setdefault((record.sample_id, record.task, record.repeat), []).append(judge_item(record))
    groups = [
        items[i : i + max_per_request]
        for items in by_key.values()
        for i in range(0, len(items), max_per_request)
    ]
    return groups, JudgeCounts(skipped_invalid=skipped, resumed=resumed)


def _verdicts(items: Sequence[JudgeItem], request: Request, reply: Reply) -> dict[str, Verdict]:
    if not reply.ok:
        return {it.instance_id: Verdict(None, f"request_failed: {reply.error}") for it in items}
    by_opaque = rubric.parse_verdicts(items[0].task, reply.text, request.opaque_ids)
    return {iid: by_opaque[oid] for iid, oid in zip(request.instance_ids, request.opaque_ids, strict=True)}


def _judgment(
    item: JudgeItem, judge: str, first: Verdict, second: Verdict | None, texts: list[str], judge_repeat: int
) -> JudgmentLine:
    final = second or first
    hash_ = rubric.prompt_hash(item.task)
    line = {"instance_id": item.instance_id, "task": item.task, "judge": judge}
    where = {"repeat": item.repeat, "judge_repeat": judge_repeat}
    if final.valid:
        assert final.scores is not None
        problems = ((f"reasked: {first.problem}",) if second else ()) + final.notes
        raw = {"verdict": final.raw, "attempts": 2 if second else 1, "prompt_hash": hash_}
        return JudgmentLine(**line, valid=True, scores=final.scores, problems=problems, raw=raw, **where)
    problems = (str(first.problem), f"{AFTER_REASK}{final.problem}") if second else (str(first.problem),)
    raw = {"replies": [t[:RAW_LIMIT] for t in texts], "attempts": len(texts), "prompt_hash": hash_}
    return JudgmentLine(**line, valid=False, scores={}, problems=problems, raw=raw, **where)


async def judge_group(
    items: Sequence[JudgeItem], judge: Judge, judge_repeat: int = 0
) -> tuple[list[JudgmentLine], JudgeCounts]:
    """Judge one sample's items: one request, and one re-ask for the items whose verdict was invalid.

    ``judge_repeat`` > 0 asks the same requests again, each as its own cache entry (:attr:`Judge.again`).
    """
    first_request = rubric.render(items)
    try:
        reply = await judge.ask(first_request, judge_repeat)
    except BudgetExceeded as exc:
        raise JudgeStopped(str(exc), JudgeCounts()) from None
    first = _verdicts(items, first_request, reply)
    usage, failed, texts = reply.usage, int(not reply.ok), [reply.text or f"<request failed: {reply.error}>"]
    problems = {iid: str(v.problem) for iid, v in first.items() if not v.valid}
    second: dict[str, Verdict] = {}
    if problems:
        retry_request = rubric.render_reask(items, problems)
        try:
            retry_reply = await judge.ask(retry_request, judge_repeat)
        except BudgetExceeded as exc:
            # Nothing of this sample is recorded (a resumed pass asks it again); what it spent is counted.
            raise JudgeStopped(str(exc), JudgeCounts(requests=1, usage=reply.usage)) from None
        second = _verdicts([it for it in items if it.instance_id in problems], retry_request, retry_reply)
        usage, failed = usage + retry_reply.usage, failed + int(not retry_reply.ok)
        texts.append(retry_reply.text or f"<request failed: {retry_reply.error}>")
    judgments = [
        _judgment(it, judge.name, first[it.instance_id], second.get(it.instance_id), texts, judge_repeat)
        for it in items
    ]
    valid = sum(j.valid for j in judgments)
    silent = [j for j in judgments if no_verdict(j)]
    reasons: dict[str, int] = {}
    for line in silent:
        reason = reason_of(line.problems[-1].removeprefix(AFTER_REASK))
        reasons[reason] = reasons.get(reason, 0) + 1
    unscored: dict[str, int] = {}
    for line in judgments:
        if not line.valid and not no_verdict(line):
            kind = str(ProblemKind.of(line.problems[-1].removeprefix(AFTER_REASK)))
            unscored[kind] = unscored.get(kind, 0) + 1
    tally = JudgeCounts(
        sent=len(items),
        requests=1 + bool(problems),
        reasked=len(problems),
        valid=valid,
        unscored=len(items) - valid - len(silent),
        failed_requests=failed,
        unanswered=len(silent),
        unanswered_reasons=reasons,
        unscored_reasons=unscored,
        usage=usage,
    )
    return judgments, tally


def fingerprint(record: PredictionLine) -> str:
    """:func:`~rescue_bench.judge.merge.prediction_fingerprint` of a typed prediction line."""
    return prediction_fingerprint(record.valid, record.prediction)


async def judge_records(
    records: Iterable[PredictionLine],
    judge: Judge,
    *,
    done: Set[str] = frozenset(),
    sink: Callable[[list[JudgmentLine]], None] = lambda _: None,
    concurrency: int = 8,
    max_per_request: int = 10,
    judge_repeat: int = 0,
    tick: Callable[[JudgeCounts], None] = lambda _: None,
) -> JudgeCounts:
    """Judge each valid ER/VP prediction whose line key is not in ``done``, for the ``judge_repeat``-th time;
    ``sink`` gets each sample's judgments on arrival, ``tick`` its counts (a progress display)."""
    records = list(records)
    fingerprints = {r.key: fingerprint(r) for r in records}
    groups, tally = plan_groups(records, done, max_per_request)
    gate = asyncio.Semaphore(max(1, judge.concurrency or concurrency))

    stopped: list[JudgeStopped] = []

    async def run(items: list[JudgeItem]) -> JudgeCounts:
        async with gate:
            if stopped:  # the budget is spent: no further sample starts
                return JudgeCounts()
            try:
                judgments, counts = await judge_group(items, judge, judge_repeat)
            except JudgeStopped as exc:
                stopped.append(exc)
                return exc.tally
        sink([j.model_copy(update={"prediction_hash": fingerprints.get(j.key)}) for j in judgments])
        tick(counts)
        return counts

    for counts in await asyncio.gather(*(run(g) for g in groups)):
        tally = tally + counts
    if stopped:
        raise JudgeStopped(stopped[0].reason, tally)
    return tally
