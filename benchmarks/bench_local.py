"""Decoding threads and OpenMP's wait policy for the in-process local model, side by side.

Usage: ``python benchmarks/bench_local.py [--task itp] [--requests 6] [--rounds 2]``.

Each configuration (decode threads 1 or 2, ``OMP_WAIT_POLICY`` unset or ``PASSIVE``) runs in its own process,
because libgomp reads the policy once when llama.cpp loads it; the rounds interleave the configurations so
that a change in the machine's load hits them alike. Each process asks the first ``--requests`` requests of
``--task`` on the first demo conversation, one after the other (prompt-prefix re-use included), and prints
the seconds the model took. Reported: the seconds of each configuration in each round and the ratio of each
to the default (``decode_threads`` = the usable cores, policy unset).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time

CONFIGS = (("default", None, None), ("1 thread", 1, None), ("passive", None, "PASSIVE"))


def child(task_name: str, n_requests: int, decode_threads: int | None) -> None:
    from rescue_bench.data.load import load_samples
    from rescue_bench.engine.plans import PLAIN, default_batch_size
    from rescue_bench.models.base import Generation
    from rescue_bench.models.local import LocalProvider
    from rescue_bench.spec import RunSpec
    from rescue_bench.tasks import get_task, make_batches

    spec = RunSpec(model="local/gemma-3-270m", data="demo", tasks=[task_name])
    cfg, task = spec.task_config(), get_task(task_name)
    instances = [i for s in load_samples("demo")[:1] for i in task.build(s, cfg)]
    batches = list(make_batches(instances, default_batch_size(task, cfg, PLAIN)))[:n_requests]
    provider = LocalProvider("gemma-3-270m", decode_threads=decode_threads)

    async def ask() -> float:
        await provider.complete(task.render(batches[0], cfg), Generation(max_tokens=1))  # load
        started = time.perf_counter()
        for batch in batches:
            await provider.complete(task.render(batch, cfg), Generation())
        return time.perf_counter() - started

    print(json.dumps({"seconds": round(asyncio.run(ask()), 2)}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="itp")
    parser.add_argument("--requests", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.task, args.requests, args.child or None)
        return 0
    print(f"load average at start {os.getloadavg()}")
    seconds: dict[str, list[float]] = {name: [] for name, _, _ in CONFIGS}
    for _ in range(args.rounds):
        for name, threads, policy in CONFIGS:
            env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
            if policy:
                env["OMP_WAIT_POLICY"] = policy
            command = [sys.executable, __file__, "--task", args.task, "--requests", str(args.requests)]
            out = subprocess.run(
                [*command, "--child", str(threads or 0)], env=env, capture_output=True, text=True
            )
            if out.returncode != 0:
                sys.exit(out.stderr[-2000:])
            seconds[name].append(json.loads(out.stdout.splitlines()[-1])["seconds"])
            print(f"{name}: {seconds[name][-1]} s")
    base = sum(seconds["default"]) / len(seconds["default"])
    for name, values in seconds.items():
        mean = sum(values) / len(values)
        print(f"{name}: {values} s, mean {mean:.2f} s, {mean / base:.2f}x the default")
    print(f"load average at end {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
