"""Our engine against a client that works like the reference scripts, on the same fake endpoint and data.

Usage: ``python benchmarks/bench_reference.py [--samples 191] [--latency 0.5] [--concurrency 16]
[--subset 60] [--full] [--json FILE]``.

Setup: a synthetic dataset of ``--samples`` fictional samples (:mod:`rescue_bench.data.synth`), all six
tasks, and the fake OpenAI-compatible server of ``tests/fakes/openai_server.py`` in a separate process,
answering every request after ``--latency`` seconds.

* **engine**: ``execute_run`` as ``rescue-bench run`` calls it (async, ``--concurrency`` requests in flight,
  the response cache on but empty), timed in full;
* **reference-like client** (../shared/docs/protocol.md sections 0, 1.4, 1.7 and 8): the same requests in the
  same batches (each task's default batch size, never crossing a sample), one at a time with a blocking
  ``requests.post`` (a new connection per call, no session), the prompt as a single user message,
  ``response_format: json_object``, ``timeout=240`` and ``time.sleep(0.3)`` after every request; items
  missing from a reply are asked again singly, as the scripts do. A full sequential run takes about
  ``requests x (latency + 0.3 s)``, so by default only ``--subset`` requests, spread evenly over the run, are
  timed and the total is extrapolated from their mean; ``--full`` times all of them.

Printed: both wall times, the ratio (reference / engine), and whether the reference figure was extrapolated.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SLEEP = 0.3


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    script = REPO / "tests" / "fakes" / "openai_server.py"
    proc = subprocess.Popen(
        [sys.executable, str(script), "--latency", str(latency)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def run_engine(data: Path, out: Path, base_url: str, concurrency: int) -> tuple[float, int]:
    from rescue_bench.engine.run import RunOptions, execute_run
    from rescue_bench.spec import EngineSpec, ModelSpec, RunSpec

    config = RunSpec(
        model=ModelSpec(name="vllm/bench-reference", base_url=base_url),
        data=str(data),
        engine=EngineSpec(concurrency=concurrency),
    )
    options = RunOptions(quiet=True)
    started = time.perf_counter()
    result = asyncio.run(execute_run(config, out, options))
    wall = time.perf_counter() - started
    assert result.status == "finished", result.stop_reason
    return wall, sum(c.requests for c in result.counts.values())


def reference_requests(data: Path) -> list[tuple[Any, Any, tuple[Any, ...]]]:
    """(plan, request, batch) of every batch, in the scripts' order: task by task, sample by sample."""
    from rescue_bench.data.load import load_samples
    from rescue_bench.engine.plans import build_plans
    from rescue_bench.spec import RunSpec

    plans = build_plans(load_samples(data), RunSpec(model="vllm/bench-reference", data=str(data)))
    return [(plan, plan.task.render(batch, plan.cfg), batch) for plan in plans for batch in plan.batches]


def post(base_url: str, request: Any) -> str:
    """One call as ``eval_common.call_json_model`` makes it (5 attempts, sleeping 4 s x attempt between)."""
    import requests

    content = "\n\n".join(str(m["content"]) for m in request.messages)
    body = {
        "model": "bench-reference",
        "messages": [{"role": "user", "content": content}],
        "temperature": 0,
        "max_tokens": request.max_tokens,
        # json_object as the scripts send it; the schema rides along so the fake server shapes its answer
        "response_format": {"type": "json_object", "schema": request.response_schema},
    }
    for attempt in range(1, 6):
        try:
            response = requests.post(
                f"{base_url}/chat/completions",
                json=body,
                headers={"Authorization": "Bearer sk-bench", "Content-Type": "application/json"},
                timeout=240,
            )
            response.raise_for_status()
            return str(response.json()["choices"][0]["message"]["content"])
        except Exception:
            if attempt == 5:
                raise
            time.sleep(4 * attempt)
    raise AssertionError("unreachable")


def run_reference(base_url: str, work: list[tuple[Any, Any, tuple[Any, ...]]]) -> tuple[float, int]:
    """Time ``work`` like the scripts: each request, then a 0.3 s sleep; missing items asked again singly."""
    started = time.perf_counter()
    calls = 0
    for plan, request, batch in work:
        text = post(base_url, request)
        calls += 1
        time.sleep(SLEEP)
        predictions = plan.task.parse(text, batch)
        for inst, pred in zip(batch, predictions, strict=True):
            if len(batch) > 1 and pred.problems and pred.problems[0].startswith("missing"):
                post(base_url, plan.task.render([inst], plan.cfg))
                calls += 1
                time.sleep(SLEEP)
    return time.perf_counter() - started, calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=191)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument(
        "--concurrency", type=int, default=16, help="the engine's (rescue-bench run's default)"
    )
    parser.add_argument("--subset", type=int, default=60, help="reference requests timed when not --full")
    parser.add_argument("--full", action="store_true", help="time the whole sequential run (slow)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="bench_reference_"))
    os.environ["RESCUE_BENCH_CACHE_DIR"] = str(tmp / "cache")
    from rescue_bench.data.synth import write_synthetic

    summary = write_synthetic(tmp / "synthetic.jsonl", samples=args.samples, seed=0)
    print(summary.describe())
    work = reference_requests(summary.path)
    step = 1 if args.full else max(1, len(work) // args.subset)
    subset = work[::step][: len(work) if args.full else args.subset]
    server, base_url = start_server(args.latency)
    try:
        engine_wall, engine_requests = run_engine(summary.path, tmp / "run", base_url, args.concurrency)
        reference_wall, reference_calls = run_reference(base_url, subset)
    finally:
        server.terminate()
        server.wait(10)
    per_call = reference_wall / reference_calls
    total_calls = engine_requests if not args.full else reference_calls
    reference_total = per_call * total_calls
    figures = {
        "samples": args.samples,
        "latency_s": args.latency,
        "engine_concurrency": args.concurrency,
        "engine_requests": engine_requests,
        "engine_wall_s": round(engine_wall, 2),
        "reference_timed_requests": reference_calls,
        "reference_timed_s": round(reference_wall, 2),
        "reference_s_per_request": round(per_call, 4),
        "reference_total_s": round(reference_total, 1),
        "reference_extrapolated": not args.full,
        "ratio": round(reference_total / engine_wall, 1),
    }
    print(json.dumps(figures, indent=2))
    how = (
        f"extrapolated from {reference_calls} timed requests ({per_call:.3f} s each) to {total_calls}"
        if not args.full
        else f"timed in full ({reference_calls} requests)"
    )
    print(f"engine: {engine_requests} requests in {engine_wall:.1f} s (concurrency {args.concurrency})")
    print(f"reference-like client: {reference_total:.0f} s, {how}")
    print(f"ratio reference / engine: {figures['ratio']}x at {args.latency:g} s latency")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
