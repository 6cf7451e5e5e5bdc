"""Invariant checks of a chaos run: pure functions over the server's log and the run directory's records.

Each check returns a list of violations (human-readable strings); an empty list means the invariant holds.
Keeping them pure lets :mod:`tests.chaos.test_audit` show, on small hand-made logs, that every check does
fail when its invariant is broken.

Vocabulary: a *session* is one client process (``ChaosServer.begin_session``); an *entry* is one request
the server received; a *record* is one ``requests.jsonl`` line; the *key* of both is the engine's
``request_key`` (the content hash of messages, schema and token limit).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tests.fakes.chaos_server import Entry

from rescue_bench.engine.plans import TaskPlan
from rescue_bench.records import Instance, Request
from rescue_bench.tasks.base import Task

Record = Mapping[str, Any]


@dataclass(frozen=True)
class Batch:
    """One batch of the run's plan: its request key and the keys of its single re-asks."""

    key: str
    task: Task
    instances: tuple[Instance, ...]
    single_keys: tuple[str, ...]
    """Aligned with ``instances``; empty for a one-item batch (never re-asked singly)."""

    def needed_singles(self, reply: str) -> list[str]:
        """Keys of the single re-asks that the engine must send after ``reply`` (items missing from it)."""
        if not self.single_keys:
            return []
        predictions = self.task.parse(reply, self.instances)
        return [
            key
            for key, pred in zip(self.single_keys, predictions, strict=True)
            if pred.problems and pred.problems[0].startswith("missing")
        ]


@dataclass(frozen=True)
class Workload:
    """Everything a run must ask, computed in the test from the same data and config."""

    instance_ids: frozenset[str]
    batches: Mapping[str, Batch]
    requests: Mapping[str, Request]
    """Every request the plan can send (batches and single re-asks), by key."""

    @classmethod
    def from_plans(cls, plans: Sequence[TaskPlan]) -> Workload:
        batches: dict[str, Batch] = {}
        requests: dict[str, Request] = {}
        for plan in plans:
            for batch in plan.batches:
                request = plan.task.render(batch, plan.cfg)
                singles = [plan.task.render([inst], plan.cfg) for inst in batch] if len(batch) > 1 else []
                for r in (request, *singles):
                    requests[r.content_key()] = r
                key = request.content_key()
                batches[key] = Batch(key, plan.task, tuple(batch), tuple(r.content_key() for r in singles))
        ids = frozenset(inst.id for plan in plans for inst in plan.instances)
        return cls(ids, batches, requests)


def by_session(entries: Iterable[Entry]) -> dict[int, dict[str, list[Entry]]]:
    """Entries grouped by session, then by key, in arrival order."""
    out: dict[int, dict[str, list[Entry]]] = defaultdict(lambda: defaultdict(list))
    for entry in sorted(entries, key=lambda e: e.index):
        out[entry.session][entry.key].append(entry)
    return out


def exactly_once(predictions: Sequence[Record], expected: Iterable[str]) -> list[str]:
    """Every expected instance has exactly one prediction line, and nothing else has one."""
    counts = Counter(str(p.get("instance_id")) for p in predictions)
    wanted = set(expected)
    problems = [f"{iid}: {n} prediction lines" for iid, n in sorted(counts.items()) if n != 1]
    problems += [f"{iid}: no prediction line" for iid in sorted(wanted - set(counts))]
    problems += [
        f"{iid}: prediction for an instance the run does not have" for iid in sorted(set(counts) - wanted)
    ]
    return problems


def resent_after_success(
    entries: Sequence[Entry], hard_kills: Mapping[int, set[str]], cache_key_of: Mapping[str, str]
) -> tuple[list[str], Counter[int]]:
    """No request is sent again once a success for it was delivered.

    The one exception is a hard kill (SIGKILL at an arbitrary moment): a success delivered to a session that
    was then killed may be re-sent by a later session if its reply had not reached the response cache yet,
    i.e. it was still in flight. ``hard_kills`` maps such sessions to the cache keys committed when they died.

    Returns the violations and, per hard-killed session, how many requests were allowed a re-send that way:
    distinct requests, each at most one in flight at the kill, while a re-sent request may need several
    sends (a fault on the re-send is retried).
    """
    problems: list[str] = []
    allowed: dict[int, set[str]] = defaultdict(set)
    for key, items in by_key(entries).items():
        successes: list[Entry] = []
        for entry in items:
            for done in successes:
                excused = (
                    done.session in hard_kills
                    and done.session < entry.session
                    and cache_key_of.get(key) not in hard_kills[done.session]
                )
                if not excused:
                    problems.append(
                        f"{key[:12]}: sent again (request #{entry.index}, session {entry.session}) after "
                        f"its success #{done.index} in session {done.session}"
                    )
                    break
                allowed[done.session].add(key)
            if entry.outcome == "ok" and entry.delivered:
                successes = [entry]
    return problems, Counter({session: len(keys) for session, keys in allowed.items()})


def by_key(entries: Iterable[Entry]) -> dict[str, list[Entry]]:
    out: dict[str, list[Entry]] = defaultdict(list)
    for entry in sorted(entries, key=lambda e: e.index):
        out[entry.key].append(entry)
    return out


@dataclass(frozen=True)
class Accounting:
    """Server attempts matched to the records of the session that recorded them."""

    problems: list[str]
    orphans: Counter[int]
    """Per session: requests the server saw that no record of that session accounts for (in-flight work of
    a killed process)."""
    faults: Counter[str]
    """Per task: faulted attempts of recorded requests."""
    failures: Counter[str]
    """Per task: recorded requests with no successful attempt."""


def account(
    entries: Sequence[Entry], records: Mapping[int, Sequence[Record]], final_session: int
) -> Accounting:
    """Match every recorded request with the server's attempts of it in the same session.

    A paid (not cached) record must have exactly as many ``attempts`` as the server saw for its key in its
    session, every attempt but a successful last one must be a fault, and an ``error`` record must have no
    success. A cached record must answer a key that succeeded at the server in an earlier session. Requests
    the server saw but no record of that session explains are orphans: allowed in a killed session (work in
    flight), a violation in the final one.
    """
    grouped = by_session(entries)
    problems: list[str] = []
    faults: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    orphans: Counter[int] = Counter()
    paid_before: set[str] = set()
    for session in sorted(set(grouped) | set(records)):
        seen = grouped.get(session, {})
        attempts: Counter[str] = Counter()
        for record in records.get(session, ()):
            key, task = str(record["request_key"]), str(record["task"])
            if record.get("cached"):
                if key not in paid_before:
                    problems.append(f"{key[:12]}: cache hit in session {session} for a request never paid")
                continue
            attempts[key] += int(record["attempts"])
            tries = seen.get(key, [])
            bad = [e for e in tries if e.outcome != "ok"]
            faults[task] += len(bad)
            if record.get("error") is not None:
                failures[task] += 1
                if len(bad) != len(tries):
                    problems.append(f"{key[:12]}: recorded as failed but succeeded at the server")
            elif not tries or tries[-1].outcome != "ok" or len(bad) != len(tries) - 1:
                problems.append(
                    f"{key[:12]}: recorded as answered, server outcomes {[e.outcome for e in tries]}"
                )
        for key, tries in seen.items():
            if key not in attempts:
                orphans[session] += len(tries)
            elif attempts[key] != len(tries):
                problems.append(
                    f"{key[:12]}: session {session} recorded {attempts[key]} attempts, "
                    f"the server saw {len(tries)}"
                )
        if orphans[session] and session == final_session:
            problems.append(f"the final session sent {orphans[session]} requests that it never recorded")
        paid_before |= {k for k, tries in seen.items() if any(e.outcome == "ok" for e in tries)}
    return Accounting(problems, orphans, faults, failures)


def counts_agree(
    counts: Mapping[str, Mapping[str, Any]], acc: Accounting, records: Sequence[Record]
) -> list[str]:
    """``run.json`` counts per task against the server's log.

    ``retries`` must equal the faulted attempts of recorded requests and ``failures`` the recorded requests
    that never succeeded; ``requests`` and ``cache_hits`` must equal the records.
    """
    problems: list[str] = []
    per_task: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        per_task[str(record["task"])].append(record)
    for task, c in counts.items():
        mine = per_task.get(task, [])
        expected = {
            # every attempt after the first is a retry, so a request that never succeeded has one fault
            # more than it has retries
            "retries": acc.faults[task] - acc.failures[task],
            "failures": acc.failures[task],
            "requests": len(mine),
            "cache_hits": sum(bool(r.get("cached")) for r in mine),
        }
        for name, value in expected.items():
            if c.get(name) != value:
                problems.append(f"run.json counts.{task}.{name} = {c.get(name)}, server log says {value}")
    return problems


def finished_work_not_redone(records: Sequence[Record], finished_before: Iterable[str]) -> list[str]:
    """A resumed session asks nothing for instances that were finished before it started (not even from the
    cache): every request it recorded covers at least one unfinished instance."""
    done = set(finished_before)
    return [
        f"{str(r['request_key'])[:12]} ({r['task']}) asked again for finished instances "
        f"{list(r['instance_ids'])[:3]}"
        for r in records
        if set(r["instance_ids"]) <= done
    ]


def settled_batches_recorded(
    workload: Workload,
    entries: Sequence[Entry],
    session: int,
    records: Sequence[Record],
    predictions: Iterable[Record],
) -> tuple[list[str], int]:
    """After a quiesced kill: every batch the server had fully answered is on disk.

    A batch is fully answered in ``session`` when its request got a delivered success there, and so did each
    single re-ask that this reply calls for. Its request lines and its instances' prediction lines must then
    be in the files (they are written to the kernel before the engine sends anything else). Batches
    that the plan does not know (a resumed remainder of a torn batch) are not judged.

    Returns the violations and how many batches were judged.
    """
    delivered = {e.key: e for e in entries if e.session == session and e.outcome == "ok" and e.delivered}
    recorded = {str(r["request_key"]) for r in records}
    done = {str(p.get("instance_id")) for p in predictions}
    problems: list[str] = []
    judged = 0
    for key, entry in delivered.items():
        batch = workload.batches.get(key)
        if batch is None:
            continue
        singles = batch.needed_singles(entry.reply or "")
        if not all(s in delivered for s in singles):
            continue
        judged += 1
        lost = [k[:12] for k in (key, *singles) if k not in recorded]
        if lost:
            problems.append(
                f"batch {key[:12]} ({batch.task.INFO.name}) answered but request lines lost: {lost}"
            )
        missing = [i.id for i in batch.instances if i.id not in done]
        if missing:
            problems.append(f"batch {key[:12]} answered but predictions lost: {missing[:3]}")
    return problems, judged
