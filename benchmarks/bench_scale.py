"""Scaling curves: the engine on 1x, 2x, 5x and 10x the paper's size against a fixed-latency fake endpoint.

Usage: ``python benchmarks/bench_scale.py [--factors 1,2,5,10] [--latency 0.2] [--concurrency 64]
[--repeat 2] [--json FILE]``.

Setup: for each factor, a synthetic dataset of ``factor x 191`` fictional samples (191 to 1,910;
:mod:`rescue_bench.data.synth`), all six tasks, and the fake OpenAI-compatible server of
``tests/fakes/openai_server.py`` in a separate process, answering every request after ``--latency`` seconds.
Each run is a fresh worker process (``--worker``), so its peak memory is its own, with its own response
cache, so nothing is answered from an earlier run. Each factor runs ``--repeat`` times and the run with the
least CPU per request is reported (all are printed): on a shared machine other load only ever adds CPU time.

Reported per factor: instances, requests, wall time, requests per second, harness CPU per request (user +
system time of the worker, all threads, over requests: loading, building, rendering, HTTP, cache, recording,
parsing, scoring, aggregation), peak resident memory, and memory per instance: (peak RSS - RSS after the
imports) / instances. Target: CPU per request and memory per instance stay within 20% from 1x to 10x (flat
means the harness scales linearly; the fixed part of the memory, interpreter and libraries, is left out).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PAPER_SAMPLES = 191
TOLERANCE = 0.20


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


def rss_mb() -> float:
    """Current resident memory of this process (Linux /proc), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def worker(data: Path, out: Path, base_url: str, concurrency: int) -> dict[str, Any]:
    """One measured run in this (fresh) process; the figures as a dict."""
    import asyncio

    import openai  # noqa: F401  (imported before the baseline, like everything the run loads)

    import rescue_bench.metrics.aggregate
    import rescue_bench.models.registry
    import rescue_bench.tasks  # noqa: F401
    from rescue_bench.engine.run import RunOptions, execute_run
    from rescue_bench.spec import EngineSpec, ModelSpec, RunSpec

    import_rss = rss_mb()
    config = RunSpec(
        model=ModelSpec(name="vllm/bench-scale", base_url=base_url),
        data=str(data),
        engine=EngineSpec(concurrency=concurrency, max_retries=2, timeout=60),
    )
    options = RunOptions(quiet=True)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu, wall = usage.ru_utime + usage.ru_stime, time.perf_counter()
    result = asyncio.run(execute_run(config, out, options))
    wall = time.perf_counter() - wall
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - cpu
    peak = usage.ru_maxrss / 1024
    requests = sum(c.requests for c in result.counts.values())
    instances = sum(c.instances for c in result.counts.values())
    return {
        "status": result.status,
        "instances": instances,
        "requests": requests,
        "invalid": sum(c.invalid for c in result.counts.values()),
        "wall_s": round(wall, 2),
        "requests_per_s": round(requests / wall, 1),
        "cpu_s": round(cpu, 2),
        "cpu_ms_per_request": round(1000 * cpu / requests, 3),
        "import_rss_mb": round(import_rss, 1),
        "peak_rss_mb": round(peak, 1),
        "kb_per_instance": round(1024 * (peak - import_rss) / instances, 2),
    }


def measure(factor: int, tmp: Path, base_url: str, concurrency: int, repeat: int) -> dict[str, Any]:
    """The best of ``repeat`` fresh runs (least CPU per request: other load on the machine only adds)."""
    from rescue_bench.data.synth import write_synthetic

    samples = factor * PAPER_SAMPLES
    summary = write_synthetic(tmp / f"synthetic_{factor}x.jsonl", samples=samples, seed=0)
    runs = []
    for attempt in range(repeat):
        name = f"{factor}x_{attempt}"
        env = {**os.environ, "RESCUE_BENCH_CACHE_DIR": str(tmp / f"cache_{name}"), "PYTHONPATH": str(REPO)}
        command = [sys.executable, __file__, "--worker", str(summary.path), str(tmp / f"run_{name}")]
        done = subprocess.run(
            [*command, base_url, str(concurrency)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"worker for {factor}x failed:\n{done.stderr[-3000:]}")
        runs.append(json.loads(done.stdout.splitlines()[-1]))
    best = min(runs, key=lambda r: float(r["cpu_ms_per_request"]))
    every = [r["cpu_ms_per_request"] for r in runs]
    return {
        "factor": factor,
        "samples": samples,
        "rows": summary.rows,
        **best,
        "cpu_ms_per_request_runs": every,
    }


def spread(values: list[float]) -> float:
    """max / min - 1: how far apart the values are (0.2 means the largest is 20% above the smallest)."""
    return max(values) / min(values) - 1.0


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--worker":
        data, out, base_url, concurrency = sys.argv[2:6]
        print(json.dumps(worker(Path(data), Path(out), base_url, int(concurrency))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factors", default="1,2,5,10", help="multiples of the paper's 191 samples")
    parser.add_argument(
        "--latency", type=float, default=0.2, help="seconds the fake endpoint takes per request"
    )
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument(
        "--repeat", type=int, default=2, help="runs per factor; the least CPU/request is kept"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    factors = [int(f) for f in args.factors.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="bench_scale_"))
    server, base_url = start_server(args.latency)
    rows = []
    try:
        for factor in factors:
            rows.append(measure(factor, tmp, base_url, args.concurrency, args.repeat))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        server.terminate()
        server.wait(10)
    print(
        f"\nlatency {args.latency:g} s, concurrency {args.concurrency}, fake server in its own process; "
        f"best of {args.repeat} runs per factor (least CPU per request)"
    )
    header = f"{'factor':>6} {'samples':>7} {'instances':>9} {'requests':>8} {'wall s':>7} {'req/s':>6}"
    print(header + f" {'CPU ms/req':>10} {'peak MB':>7} {'KB/instance':>11}")
    for r in rows:
        print(
            f"{r['factor']:>5}x {r['samples']:>7,} {r['instances']:>9,} {r['requests']:>8,} "
            f"{r['wall_s']:>7.1f} {r['requests_per_s']:>6.1f} {r['cpu_ms_per_request']:>10.3f} "
            f"{r['peak_rss_mb']:>7.0f} {r['kb_per_instance']:>11.2f}"
        )
    cpu = spread([r["cpu_ms_per_request"] for r in rows])
    mem = spread([r["kb_per_instance"] for r in rows])
    for name, value in (("CPU per request", cpu), ("memory per instance", mem)):
        verdict = "flat (within 20%)" if value <= TOLERANCE else "NOT flat (more than 20% apart)"
        print(f"{name}: largest {100 * value:.1f}% above smallest across {args.factors}: {verdict}")
    if args.json:
        args.json.write_text(
            json.dumps({"rows": rows, "cpu_spread": cpu, "memory_spread": mem}, indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
