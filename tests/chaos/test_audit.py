"""The chaos test's checks fail when their invariant is broken (small hand-made logs and records)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from tests.chaos import audit
from tests.engine import tiny_task
from tests.fakes.chaos_server import Entry, Outcome

from rescue_bench.records import Instance, Shown
from rescue_bench.tasks.base import Task


def entry(
    index: int, session: int, key: str, outcome: Outcome = "ok", *, delivered: bool = True, reply: str = ""
) -> Entry:
    return Entry(index, session, key, 1, outcome, float(index), reply if outcome == "ok" else None, delivered)


def record(
    key: str, attempts: int, *, task: str = "itp", cached: bool = False, error: str | None = None
) -> dict[str, Any]:
    return {"request_key": key, "task": task, "attempts": attempts, "cached": cached, "error": error}


def test_exactly_once() -> None:
    lines = [{"instance_id": "a"}, {"instance_id": "b"}, {"instance_id": "b"}, {"instance_id": "x"}]
    problems = audit.exactly_once(lines, ["a", "b", "c"])
    assert problems == [
        "b: 2 prediction lines",
        "c: no prediction line",
        "x: prediction for an instance the run does not have",
    ]
    assert audit.exactly_once(lines[:2], ["a", "b"]) == []


def test_a_resend_after_a_success_is_a_violation_unless_it_was_in_flight_at_a_hard_kill() -> None:
    log = [entry(0, 1, "k", "http_500"), entry(1, 1, "k"), entry(2, 2, "k")]
    problems, _ = audit.resent_after_success(log, {}, {"k": "ck"})
    assert len(problems) == 1 and "sent again" in problems[0]
    # session 1 was hard-killed before the reply reached the cache: excused
    problems, excused = audit.resent_after_success(log, {1: set()}, {"k": "ck"})
    assert problems == [] and excused[1] == 1
    # a re-send that meets a fault and is retried is still one request in flight at the kill
    retried = [*log[:2], entry(2, 2, "k", "http_500"), entry(3, 2, "k"), entry(4, 2, "j")]
    problems, excused = audit.resent_after_success(retried, {1: set()}, {"k": "ck"})
    assert problems == [] and excused[1] == 1
    # ... but not when the cache had it
    problems, _ = audit.resent_after_success(log, {1: {"ck"}}, {"k": "ck"})
    assert len(problems) == 1
    # a success that was held (never delivered) is not a success
    held = [entry(0, 1, "k", delivered=False), entry(1, 2, "k")]
    assert audit.resent_after_success(held, {}, {})[0] == []


def test_accounting_matches_records_with_server_attempts_per_session() -> None:
    log = [
        entry(0, 1, "a", "http_429"),
        entry(1, 1, "a"),
        entry(2, 1, "b", "reset"),
        entry(3, 2, "b"),
        entry(4, 2, "c"),
    ]
    records = {1: [record("a", 2)], 2: [record("b", 1), record("c", 1, task="er")]}
    acc = audit.account(log, records, final_session=2)
    assert acc.problems == []
    assert acc.orphans == {1: 1}  # b's reset in the killed session 1
    assert (acc.faults["itp"], acc.faults["er"], sum(acc.failures.values())) == (1, 0, 0)
    counts = {"itp": {"retries": 1, "failures": 0, "requests": 2, "cache_hits": 0}}
    assert audit.counts_agree(counts, acc, records[1] + records[2][:1]) == []
    wrong = {"itp": {"retries": 0, "failures": 0, "requests": 2, "cache_hits": 0}}
    assert audit.counts_agree(wrong, acc, records[1] + records[2][:1]) == [
        "run.json counts.itp.retries = 0, server log says 1"
    ]


def test_accounting_violations() -> None:
    log = [entry(0, 1, "a", "http_500"), entry(1, 1, "a"), entry(2, 2, "z", "http_500")]
    cases: list[tuple[dict[int, list[dict[str, Any]]], str]] = [
        ({1: [record("a", 1)]}, "recorded 1 attempts, the server saw 2"),
        ({1: [record("a", 2, error="HTTP 500")]}, "recorded as failed but succeeded"),
        (
            {1: [record("a", 2)], 2: [record("q", 0, cached=True)]},
            "cache hit in session 2 for a request never paid",
        ),
        ({1: [record("a", 2)]}, "the final session sent 1 requests that it never recorded"),
    ]
    for records, message in cases:
        problems = audit.account(log, records, final_session=2).problems
        assert any(message in p for p in problems), (message, problems)


def workload() -> tuple[audit.Workload, list[Instance]]:
    instances = [
        Instance(
            f"s::echo::{i}",
            "echo",
            "s",
            "couple",
            i,
            "no",
            ("yes", "no"),
            Shown("dialogue", 0, speaker="Ana", extra={"text": "t"}),
        )
        for i in (1, 2)
    ]
    batch = audit.Batch("main", cast(Task, tiny_task), tuple(instances), ("single1", "single2"))
    return audit.Workload(frozenset(i.id for i in instances), {"main": batch}, {}), instances


def answer(ids: Sequence[str]) -> str:
    return json.dumps({"answers": [{"id": i, "answer": "no"} for i in ids]})


def test_a_fully_answered_batch_must_be_on_disk_after_a_quiesced_kill() -> None:
    load, instances = workload()
    full = [entry(0, 2, "main", reply=answer(["c1", "c2"]))]
    predictions = [{"instance_id": i.id} for i in instances]
    assert audit.settled_batches_recorded(load, full, 2, [record("main", 1)], predictions) == ([], 1)
    problems, judged = audit.settled_batches_recorded(load, full, 2, [], [])
    assert judged == 1 and len(problems) == 2  # request lines and predictions both lost


def test_a_batch_still_waiting_for_a_single_re_ask_is_not_judged() -> None:
    load, _ = workload()
    partial = [entry(0, 2, "main", reply=answer(["c1"])), entry(1, 2, "single2", delivered=False)]
    assert audit.settled_batches_recorded(load, partial, 2, [], []) == ([], 0)
    answered = [*partial[:1], entry(1, 2, "single2", reply=answer(["c1"]))]
    problems, judged = audit.settled_batches_recorded(load, answered, 2, [], [])
    assert judged == 1 and any("single2"[:12] in p for p in problems)


def test_a_resumed_session_must_not_redo_finished_instances() -> None:
    records = [{**record("k", 0, cached=True), "instance_ids": ["a", "b"]}]
    assert audit.finished_work_not_redone(records, ["a"]) == []
    assert audit.finished_work_not_redone(records, ["a", "b"]) == [
        "k (itp) asked again for finished instances ['a', 'b']"
    ]
