"""Measure ``sweep``: N models over the paper-sized synthetic data against one fake endpoint, at once.

Usage: ``python benchmarks/bench_sweep.py [--models 10] [--samples 191] [--concurrency 32] [--latency 0.5]``.

Setup: the synthetic dataset of :mod:`rescue_bench.data.synth` (``--samples`` fictional samples), all six
tasks, BERTScore off, no judges, and the fake OpenAI-compatible server of ``tests/fakes/openai_server.py``
in a separate process answering every request after ``--latency`` seconds. Each model
(``vllm/bench-<i>``, its own cache keys) has ``--concurrency`` requests in flight.

Printed: requests per model and in all, the wall time of the sweep, the ideal wall time (every model at once,
each keeping its ``concurrency`` requests in flight: ``requests per model * latency / concurrency``), their
ratio, the ideal of running the models one after another, and the harness CPU (this process).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


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


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--samples", type=int, default=191)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.5)
    args = parser.parse_args()

    from rescue_bench.data.synth import write_synthetic
    from rescue_bench.study import StudyOptions, run_study, validate_study

    load = os.getloadavg()[0]
    server, url = start_server(args.latency)
    try:
        with tempfile.TemporaryDirectory() as folder:
            tmp = Path(folder)
            os.environ["RESCUE_BENCH_CACHE_DIR"] = str(tmp / "cache")
            data = write_synthetic(tmp / "synthetic.jsonl", samples=args.samples, seed=0).path
            table = {
                "data": str(data),
                "out": str(tmp / "study"),
                "bertscore": False,
                "engine": {"concurrency": args.concurrency, "max_retries": 2, "timeout": 60},
                "models": [{"name": f"vllm/bench-{i}", "base_url": url} for i in range(args.models)],
            }
            study = validate_study(table)
            cpu, wall = cpu_seconds(), time.perf_counter()
            record = run_study(study, StudyOptions(quiet=True))
            wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
            requests = [r.counts.done for r in record.runs]
            sent = [
                sum(1 for _ in (tmp / "study" / r.dir / "requests.jsonl").open(encoding="utf-8"))
                for r in record.runs
            ]
    finally:
        server.terminate()
        server.wait()
    per_model = max(sent)
    ideal = per_model * args.latency / args.concurrency
    print(
        f"models {args.models}, samples {args.samples}, concurrency {args.concurrency}, "
        f"latency {args.latency}"
    )
    print(f"statuses: {sorted({r.status for r in record.runs})}; instances per model {requests[0]}")
    print(f"requests per model {per_model}, in all {sum(sent)}")
    print(f"wall {wall:.1f} s; ideal (all models at once) {ideal:.1f} s; ratio {wall / ideal:.2f}")
    print(f"ideal one model after another {ideal * args.models:.1f} s")
    print(f"harness CPU {cpu:.1f} s ({1000 * cpu / sum(sent):.2f} ms per request)")
    print(f"load average at start {load:.2f}, at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
