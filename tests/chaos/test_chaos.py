"""The chaos test: a full run through a storm of faults and two SIGKILLs ends exactly like a fault-free run.

Setup: a 40-sample synthetic dataset (both scenarios, all six tasks, about 700 requests) and one
:class:`~tests.fakes.chaos_server.ChaosServer` on loopback whose answers depend only on the request content.

1. **Fault-free run**: ``rescue-bench run`` with fault injection off, in its own cache, to the end.
2. **Chaos run**, same command, another run directory and cache, faults on (10% HTTP 500, 5% 429 with
   Retry-After, 3% hangs past the client's timeout, 2% truncated or HTML bodies, 1% TCP resets):

   * session 1 is SIGKILLed the moment a seeded random request reaches the server (*hard kill*: anything may
     be in flight, a write may be torn);
   * session 2 is SIGKILLed after the server froze every response from the first single re-ask after a
     seeded random request on (so at least one batch is caught between its answer and its re-ask) and the
     client settled (*quiesced kill*: whatever the client had been answered must be on disk or in the
     response cache);
   * session 3 resumes and finishes.

Every client process draws its own string-hash seed, as in real use, so nothing may depend on set order
(BERTScore, computed by ``run`` after the requests, once did: see ``test_reproducible.py``).

Invariants (the checks live in :mod:`tests.chaos.audit`, whose own tests show each one failing):

* ``scores.json`` of the chaos run is byte-identical to the fault-free run's, and every prediction line is
  equal;
* ``predictions.jsonl`` has every instance exactly once;
* no request is sent again after a success was delivered for it, except a reply still in flight at the hard
  kill (not yet in the response cache); such re-sends are bounded by the concurrency;
* the server's successful requests are exactly the fault-free run's requests, each once (plus those
  excused re-sends);
* failure and retry counts: ``run.json`` counts are built from ``requests.jsonl``, which holds what finished
  requests went through, so they cannot include the attempts of a killed process's unfinished batches. What
  must agree: every ``requests.jsonl`` line matches the server's attempts of that request *in the session
  that wrote it* (same number of attempts, all faults but a successful last one, or all faults for an
  ``error``); ``counts.<task>.retries`` equals the faulted attempts of recorded requests minus their
  failures, ``failures`` the recorded requests that never succeeded (0 here: the server never faults one
  content more than 3 times in a row, the client retries 5 times), ``requests`` and ``cache_hits`` the
  lines; attempts no line explains (orphans) occur only in killed sessions;
* after the quiesced kill, every batch the server had fully answered has its request and prediction lines
  on disk.

* a resumed session asks nothing (not even the cache) for instances finished before it started.

How it fails when resume is broken (each demonstrated by hand, patching the engine in the client processes
only): make ``JsonlAppender.append`` in ``engine/store.py`` skip its ``flush()``. Records then sit in
Python's buffer and die with the process. The response cache still answers the lost batches on resume, so
scores, predictions and counts all still agree, but the quiesced-kill check fails: "batch ... answered but
request lines lost" and "... predictions lost". If resumed batches skip the cache (``refresh``), a batch
answered before the quiesced kill but still waiting for a single re-ask is paid for again: "sent again
(request #350, session 3) after its success #303 in session 2". If a resumed run ignores
``predictions.jsonl``, finished instances are asked again (from the cache): the last check fails.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from pathlib import Path

import pytest
from tests.chaos import audit
from tests.chaos.harness import (
    MODEL,
    Client,
    Snapshot,
    cache_keys_of,
    kill_at_request,
    kill_when_settled,
    read_json,
)
from tests.fakes.chaos_server import FAULTS, NO_FAULTS, ChaosServer, FaultRates, outcome_counts

from rescue_bench.data.load import load_samples
from rescue_bench.data.synth import write_synthetic
from rescue_bench.engine.plans import build_plans
from rescue_bench.spec import RunSpec

SEED = int(os.environ.get("RESCUE_CHAOS_SEED", "8"))
"""Seeds the data, the faults and the kill moments; set ``RESCUE_CHAOS_SEED`` to try another storm."""
SAMPLES = 40
CLIENT_TIMEOUT = 4.0
HANG = 6.0
CONCURRENCY = 16
RUN_LIMIT = 240.0


@pytest.mark.slow
def test_chaos_run_ends_like_a_fault_free_run(tmp_path: Path) -> None:
    data = tmp_path / "synthetic.jsonl"
    summary = write_synthetic(data, samples=SAMPLES, seed=SEED)
    assert summary.couple and summary.family, "both scenarios must be present"
    workload = audit.Workload.from_plans(
        build_plans(load_samples(data), RunSpec(model=MODEL, data=str(data)))
    )
    rng = random.Random(SEED)
    n_requests = len(workload.batches)
    server = ChaosServer(seed=SEED, rates=NO_FAULTS, hang=HANG, retry_after=1.0, max_streak=3)
    with server:
        clean = Client(
            server.base_url, data, tmp_path / "fault_free", tmp_path / "cache_fault_free", CLIENT_TIMEOUT
        )
        server.begin_session(0)
        clean.finish(RUN_LIMIT)
        clean_entries = server.entries()

        server.reset_log()
        server.set_rates(FaultRates())
        chaos = Client(server.base_url, data, tmp_path / "chaos", tmp_path / "cache_chaos", CLIENT_TIMEOUT)
        try:
            server.begin_session(1)
            kill_at_request(
                server, chaos, rng.randint(n_requests * 15 // 100, n_requests * 40 // 100), RUN_LIMIT
            )
            first = Snapshot.take(chaos)
            server.begin_session(2)
            n2 = rng.randint(n_requests * 15 // 100, n_requests * 30 // 100)
            singles = {key for batch in workload.batches.values() for key in batch.single_keys}
            freeze = kill_when_settled(
                server,
                chaos,
                n2,
                settle=1.5,
                idle=0.5,
                timeout=RUN_LIMIT,
                when=lambda entry: entry.key in singles,  # catch a batch between its answer and a re-ask
            )
            second = Snapshot.take(chaos)
            settled, judged = audit.settled_batches_recorded(
                workload, server.entries(), 2, second.records[len(first.records) :], second.predictions
            )
            server.begin_session(3)
            chaos.finish(RUN_LIMIT)
            entries = server.entries()
        finally:
            server.dump_log(tmp_path / "server_log.jsonl")

    # -- the two kills happened mid-run and left something to resume from
    expected = workload.instance_ids
    assert 0 < len({p["instance_id"] for p in first.predictions}) < len(expected)
    assert len(first.predictions) < len({p["instance_id"] for p in second.predictions}) < len(expected)
    assert freeze < CLIENT_TIMEOUT - 1.0, f"the freeze lasted {freeze:.1f} s, close to the client's timeout"
    assert judged > 0, "no batch was fully answered before the freeze: the flush check judged nothing"
    assert not settled, "\n".join(settled[:10])

    # -- same results as the fault-free run
    assert (chaos.out / "scores.json").read_bytes() == (clean.out / "scores.json").read_bytes()
    final = read_jsonl_list(chaos.out / "predictions.jsonl")
    reference = read_jsonl_list(clean.out / "predictions.jsonl")
    assert not audit.exactly_once(final, expected), audit.exactly_once(final, expected)[:10]
    assert not audit.exactly_once(reference, expected)
    assert {p["instance_id"]: p for p in final} == {p["instance_id"]: p for p in reference}

    # -- no paid request wasted
    manifest = read_json(chaos.out / "run.json")
    cache_key_of = cache_keys_of(workload.requests, manifest)
    records = read_jsonl_list(chaos.out / "requests.jsonl")
    assert records[: len(first.records)] == first.records, "requests.jsonl is not append-only across sessions"
    assert records[: len(second.records)] == second.records
    for record in records:
        if record["request_key"] in cache_key_of:
            assert record["cache_key"] == cache_key_of[record["request_key"]]
    resent, excused = audit.resent_after_success(entries, {1: first.cache_keys}, cache_key_of)
    assert not resent, "\n".join(resent[:10])
    assert excused[1] <= CONCURRENCY, f"{excused[1]} re-sends excused by the hard kill, more than in flight"
    clean_keys = Counter(e.key for e in clean_entries)
    assert set(clean_keys.values()) == {1}, "the fault-free run sent a request twice"
    paid = Counter(e.key for e in entries if e.outcome == "ok" and e.delivered)
    assert set(paid) == set(clean_keys), "the chaos run paid for other requests than the fault-free run"
    assert sum(paid.values()) - len(paid) <= sum(excused.values())

    # -- counts agree with the server's log
    per_session = {
        1: first.records,
        2: second.records[len(first.records) :],
        3: records[len(second.records) :],
    }
    redone = audit.finished_work_not_redone(per_session[2], (p["instance_id"] for p in first.predictions))
    redone += audit.finished_work_not_redone(per_session[3], (p["instance_id"] for p in second.predictions))
    assert not redone, "\n".join(redone[:10])
    acc = audit.account(entries, per_session, final_session=3)
    assert not acc.problems, "\n".join(acc.problems[:10])
    assert not audit.counts_agree(manifest["counts"], acc, records)
    assert acc.orphans[3] == 0
    assert sum(c["failures"] for c in manifest["counts"].values()) == 0
    assert sum(c["retries"] for c in manifest["counts"].values()) > 0
    clean_manifest = read_json(clean.out / "run.json")
    clean_acc = audit.account(
        clean_entries, {0: read_jsonl_list(clean.out / "requests.jsonl")}, final_session=0
    )
    assert not clean_acc.problems
    assert all(c["retries"] == 0 and c["failures"] == 0 for c in clean_manifest["counts"].values())
    assert manifest["status"] == "finished" and manifest["timings"]["sessions"] == 3

    # -- the storm was real
    outcomes = outcome_counts(entries)
    assert all(outcomes.get(fault, 0) > 0 for fault in FAULTS), outcomes
    report(outcomes, acc, manifest, excused, freeze, judged, len(entries))


def read_jsonl_list(path: Path) -> list[dict[str, object]]:
    from rescue_bench.rundir import read_jsonl

    return list(read_jsonl(path))


def report(
    outcomes: dict[str, int],
    acc: audit.Accounting,
    manifest: dict[str, object],
    excused: Counter[int],
    freeze: float,
    judged: int,
    total: int,
) -> None:
    """Print what the storm did (shown with ``pytest -s``)."""
    counts = manifest["counts"]
    assert isinstance(counts, dict)
    print(f"\nchaos: {total} requests at the server, outcomes {dict(sorted(outcomes.items()))}")
    print(f"orphans per session {dict(acc.orphans)}, re-sends excused by the hard kill {dict(excused)}")
    print(f"quiesced kill: freeze {freeze:.2f} s, {judged} answered batches checked on disk")
    for task, c in counts.items():
        print(
            f"  {task}: requests {c['requests']}, cache hits {c['cache_hits']}, retries {c['retries']}, "
            f"failures {c['failures']}, invalid {c['invalid']}"
        )
