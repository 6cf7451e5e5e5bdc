"""Build and render all six tasks over the 191-sample synthetic dataset, and print how long it takes.

Usage: ``python benchmarks/bench_tasks.py [--samples 191] [--mode dialogue] [--repeat 3]``.

The data is generated (fictional, :mod:`rescue_bench.data.synth`) and loaded through the normal loader first;
the timed part is what a run does before it calls a model: ``build`` every instance of every task, batch them
with the task's default batch size and ``render`` every request. The target is under 3 s for 191 samples.
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import tempfile
import time
from pathlib import Path

from rescue_bench.data.load import load_samples
from rescue_bench.data.schema import Sample
from rescue_bench.data.synth import write_synthetic
from rescue_bench.engine.plans import PLAIN, default_batch_size
from rescue_bench.tasks import TASK_NAMES, TASKS, build_instances, make_batches
from rescue_bench.tasks.base import TaskConfig, resolve_mode


def build_and_render(samples: list[Sample], cfg: TaskConfig) -> dict[str, tuple[int, int, int]]:
    """Per task: instances, requests and characters of all rendered messages."""
    out: dict[str, tuple[int, int, int]] = {}
    for name in TASK_NAMES:
        task = TASKS[name]
        instances = build_instances(task, samples, cfg)
        batches = make_batches(instances, default_batch_size(task, cfg, PLAIN))
        requests = [task.render(batch, cfg) for batch in batches]
        chars = sum(len(str(m["content"])) for r in requests for m in r.messages)
        out[name] = (len(instances), len(requests), chars)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=191)
    parser.add_argument("--mode", default="dialogue")
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions; the best is reported")
    args = parser.parse_args(argv)
    mode = resolve_mode(args.mode)
    with tempfile.TemporaryDirectory() as tmp:
        summary = write_synthetic(Path(tmp) / "synthetic.jsonl", samples=args.samples, seed=0)
        samples = load_samples(summary.path)
    print(summary.describe())
    times = []
    counts: dict[str, tuple[int, int, int]] = {}
    for _ in range(max(1, args.repeat)):
        cfg = TaskConfig(mode=mode)  # a new config (as each run's plans have), so no rendered rows are reused
        gc.collect()
        start = time.perf_counter()
        counts = build_and_render(samples, cfg)
        times.append(time.perf_counter() - start)
    print(f"{'task':<5} {'instances':>9} {'requests':>8} {'prompt chars':>13}")
    for name, (instances, requests, chars) in counts.items():
        print(f"{name:<5} {instances:>9,} {requests:>8,} {chars:>13,}")
    total = sum(c[0] for c in counts.values())
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"mode {mode}: {total:,} instances built and rendered in {min(times):.2f} s "
        f"(best of {len(times)}; all: {', '.join(f'{t:.2f}' for t in times)}); peak RSS {peak_mb:.0f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
