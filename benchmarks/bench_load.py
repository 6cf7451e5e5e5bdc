"""Time loading and validating a paper-scale synthetic file (target: under 1 s for 191 samples).

Usage: python benchmarks/bench_load.py [--samples 191] [--repeat 5] [--seed 0]

Writes a synthetic release JSONL file to a temporary directory, then reads and validates it ``--repeat`` times
(the same work as ``rescue-bench data validate``) and prints the best and median wall-clock times.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rescue_bench.data.synth import write_synthetic
from rescue_bench.data.validate import validate_source

TARGET_SEC = 1.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=191, help="synthetic samples to generate")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs; the best one is reported")
    parser.add_argument("--seed", type=int, default=0, help="generator seed")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic.jsonl"
        start = time.perf_counter()
        summary = write_synthetic(path, samples=args.samples, seed=args.seed)
        generated = time.perf_counter() - start
        timings = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            report = validate_source(path)
            timings.append(time.perf_counter() - start)
        size_mb = path.stat().st_size / 1e6
    if report.errors:
        print(f"validation found {len(report.errors)} errors in synthetic data", file=sys.stderr)
        return 1
    best = min(timings)
    verdict = "within" if best < TARGET_SEC * args.samples / 191 else "OVER"
    print(
        f"generate: {summary.couple + summary.family} samples, {summary.rows:,} rows, {size_mb:.1f} MB "
        f"in {generated:.2f} s"
    )
    median = statistics.median(timings)
    print(
        f"load+validate: best {best:.3f} s, median {median:.3f} s over {args.repeat} runs "
        f"({summary.rows / best:,.0f} rows/s); {verdict} the target of {TARGET_SEC:.1f} s per 191 samples"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
