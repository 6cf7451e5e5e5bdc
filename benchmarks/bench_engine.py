"""Measure the engine on a fake endpoint: throughput, harness CPU, memory, cached re-run, sequential speedup.

Usage: ``python benchmarks/bench_engine.py [--samples 191] [--concurrency 64] [--latency 0.5]
[--sequential-subset 20]``.

Setup: the full-scale synthetic dataset (:mod:`rescue_bench.data.synth`, 191 fictional samples), all six
tasks, and the fake OpenAI-compatible server of ``tests/fakes/openai_server.py`` in a separate process (so its
CPU is not counted as the harness's), answering every request after ``--latency`` seconds with no concurrency
limit of its own.

Reported:

* throughput of the online run with caches off (as the peers are measured), against the ideal
  ``concurrency / latency`` (target: at least 90%); the run that fills the cache is reported beside it, and so
  is a second caches-off run in the same process, which finds the SDK imported (as a study's next run does);
* harness CPU per request (user + system time of this process, all threads, divided by requests; target:
  below the best peer's, which ``bench_peers.py`` measures side by side on the same machine; an earlier
  figure does not carry over to another host or load), covering everything a run does: data loading,
  building and rendering, the SDK and HTTP stack, cache, recording, parsing, scoring and aggregation;
* peak resident memory of this process (target < 500 MB);
* a fully cached re-run of the same config into a new run directory (target < 5 s);
* the speedup over a client that works like the reference scripts (one request at a time, then a 0.3 s sleep).
  Its time is measured on ``--sequential-subset`` requests and extrapolated to the whole run;
* the import of the ``openai`` SDK side, timed in a fresh interpreter: a process pays it once, at its first
  request, inside the request phase of its first online run (``models/openai_sdk.py``);
* the load average at start and end, and the share of CPU time the hypervisor took during the caches-off
  run (``steal``, :mod:`host`): the machine's other work shows in the throughput first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

from host import CpuTimes, steal_share

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


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of another process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed_run(config: Any, out: Path, concurrency: int, *, cache: bool) -> tuple[Any, float, float]:
    from rescue_bench.engine.run import RunOptions, execute_run
    from rescue_bench.spec import EngineSpec

    limits = EngineSpec(concurrency=concurrency, max_retries=2, timeout=60, cache=cache)
    spec = config.model_copy(update={"engine": limits})
    cpu, wall = cpu_seconds(), time.perf_counter()
    result = asyncio.run(execute_run(spec, out, RunOptions(quiet=True)))
    return result, time.perf_counter() - wall, cpu_seconds() - cpu


def sdk_import_seconds() -> float:
    """Seconds a fresh interpreter that has the engine loaded takes to import the SDK side of the provider."""
    probe = (
        "import time, rescue_bench.engine.run; t = time.perf_counter(); "
        "import rescue_bench.models.openai_sdk; print(time.perf_counter() - t)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def sequential_subset(base_url: str, data: str, n: int) -> tuple[float, int]:
    """Seconds for ``n`` requests sent like the reference scripts: blocking, one by one, 0.3 s apart."""
    from openai import OpenAI

    from rescue_bench.data.load import load_samples
    from rescue_bench.engine.plans import build_plans, select_samples
    from rescue_bench.spec import RunSpec

    config = RunSpec(model="vllm/bench", data=data)
    plans = build_plans(select_samples(load_samples(data), config), config)
    requests = [p.task.render(b, p.cfg) for p in plans for b in p.batches[: max(1, n // len(plans))]][:n]
    client = OpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)
    started = time.perf_counter()
    for request in requests:
        client.chat.completions.create(
            model="bench",
            messages=cast(Any, list(request.messages)),
            temperature=0,
            max_tokens=request.max_tokens,
            response_format={"type": "json_object"},
        )
        time.sleep(0.3)
    return time.perf_counter() - started, len(requests)


def report(f: dict[str, Any], ideal: float, waves: float, concurrency: int) -> str:
    """The figures as sentences, each with its target."""
    share = 100 * f["throughput_vs_ideal"]
    phase = 100 * f["request_phase_vs_ideal"]
    lines = [
        f"throughput {f['throughput_rps']} req/s end to end = {share:.1f}% of the ideal {ideal:g} req/s"
        " (target >= 90%)",
        f"request phase alone: {f['request_phase_rps']} req/s = {phase:.1f}%; setup {f['setup_s']} s,"
        f" asking {f['requests_s']} s"
        f" (at least {waves:g} s in waves of {concurrency}), finishing {f['finish_s']} s",
        f"a second caches-off run in the same process (the SDK imported, as a study's next run):"
        f" {f['second_run_wall_s']} s = {100 * f['second_run_vs_ideal']:.1f}% of the ideal, at"
        f" {_percent(f['steal_during_second_run'])} steal",
        f"harness CPU {f['cpu_ms_per_request']} ms per request (target: below the best peer's, which"
        " bench_peers.py measures on the same machine), of which everything but the"
        f" HTTP calls (the fully cached re-run) {f['cached_cpu_ms_per_request']} ms; fake server CPU"
        f" {f['server_cpu_ms_per_request']} ms per request",
        f"peak RSS {f['peak_rss_mb']} MB (target < 500 MB); cached re-run {f['cached_rerun_s']} s"
        " (target < 5 s)",
        f"the cache-filling run (caches on, writing every reply): {f['cache_filling_wall_s']} s ="
        f" {100 * f['cache_filling_vs_ideal']:.1f}% of the ideal,"
        f" CPU {f['cache_filling_cpu_ms_per_request']} ms per request",
        f"HTTP transport: {f['transport']} (models/http_pool.py); importing the SDK took"
        f" {f['sdk_import_s']} s in a fresh interpreter, paid at the first request, inside the asking",
        f"sequential reference-like client: {f['sequential_subset']} requests in"
        f" {f['sequential_subset_s']} s,"
        f" extrapolated to {f['requests']}: {f['sequential_extrapolated_s']} s; speedup {f['speedup']}x"
        " (extrapolated from the subset, not run in full)",
        f"load average (1, 5, 15 min) at start {f['load_start']}, at end {f['load_end']} (the benchmark"
        " itself raises the 1-minute figure by a few tenths; other load slows the throughput most)",
        "CPU time taken by the hypervisor (steal) during the caches-off run:"
        f" {_percent(f['steal_during_online_run'])} of the time the machine's cores wanted",
    ]
    return "\n".join(lines)


def _percent(share: float | None) -> str:
    return "not readable here" if share is None else f"{100 * share:.1f}%"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=191)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--sequential-subset", type=int, default=20)
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)

    load_start = [round(x, 2) for x in os.getloadavg()]
    tmp = Path(tempfile.mkdtemp(prefix="bench_engine_"))
    os.environ["RESCUE_BENCH_CACHE_DIR"] = str(tmp / "cache")
    from rescue_bench.data.synth import write_synthetic
    from rescue_bench.models.http_pool import uses_aiohttp
    from rescue_bench.spec import ModelSpec, RunSpec

    summary = write_synthetic(tmp / "synthetic.jsonl", samples=args.samples, seed=0)
    print(summary.describe())
    server, base_url = start_server(args.latency)
    try:
        config = RunSpec(model=ModelSpec(name="vllm/bench", base_url=base_url), data=str(summary.path))
        server_cpu, host_before = process_cpu(server.pid), CpuTimes.now()
        # Caches off, as the peers are measured (bench_peers.py); then one run fills the cache, and a
        # fully cached re-run of the same config reads it into a new directory.
        result, wall, cpu = timed_run(config, tmp / "online", args.concurrency, cache=False)
        server_cpu, steal = process_cpu(server.pid) - server_cpu, steal_share(host_before, CpuTimes.now())
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        again_before = CpuTimes.now()
        _, again_wall, _ = timed_run(config, tmp / "online-again", args.concurrency, cache=False)
        again_steal = steal_share(again_before, CpuTimes.now())
        requests = sum(c.requests for c in result.counts.values())
        instances = sum(c.instances for c in result.counts.values())
        _, filling_wall, filling_cpu = timed_run(config, tmp / "filling", args.concurrency, cache=True)
        cached, cached_wall, cached_cpu = timed_run(config, tmp / "cached", args.concurrency, cache=True)
        hits = sum(c.cache_hits for c in cached.counts.values())
        seq_time, seq_n = sequential_subset(base_url, str(summary.path), args.sequential_subset)
        sdk_import = sdk_import_seconds()
    finally:
        server.terminate()
        server.wait(10)

    ideal = args.concurrency / args.latency
    waves = -(-requests // args.concurrency) * args.latency
    timings = json.loads((tmp / "online" / "run.json").read_text())["timings"]
    asking = timings["requests_s"]
    figures = {
        "samples": args.samples,
        "instances": instances,
        "requests": requests,
        "status": result.status,
        "invalid": sum(c.invalid for c in result.counts.values()),
        "wall_s": round(wall, 2),
        "throughput_rps": round(requests / wall, 1),
        "ideal_rps": ideal,
        "throughput_vs_ideal": round(requests / wall / ideal, 3),
        "second_run_wall_s": round(again_wall, 2),
        "second_run_vs_ideal": round(requests / again_wall / ideal, 3),
        "steal_during_second_run": again_steal,
        "lower_bound_wall_s": waves,
        "setup_s": timings["setup_s"],
        "requests_s": asking,
        "finish_s": timings["finish_s"],
        "request_phase_rps": round(requests / asking, 1),
        "request_phase_vs_ideal": round(requests / asking / ideal, 3),
        "cpu_s": round(cpu, 2),
        "cpu_ms_per_request": round(1000 * cpu / requests, 3),
        "server_cpu_ms_per_request": round(1000 * server_cpu / requests, 3),
        "peak_rss_mb": round(peak_mb),
        "cache_filling_wall_s": round(filling_wall, 2),
        "cache_filling_vs_ideal": round(requests / filling_wall / ideal, 3),
        "cache_filling_cpu_ms_per_request": round(1000 * filling_cpu / requests, 3),
        "cached_rerun_s": round(cached_wall, 2),
        "cached_cpu_ms_per_request": round(1000 * cached_cpu / requests, 3),
        "cached_hits": hits,
        "sequential_subset": seq_n,
        "sequential_subset_s": round(seq_time, 2),
        "sequential_extrapolated_s": round(seq_time / seq_n * requests, 1),
        "speedup": round(seq_time / seq_n * requests / wall, 1),
        "sdk_import_s": round(sdk_import, 3),
        "transport": "aiohttp (the SDK's DefaultAioHttpClient)" if uses_aiohttp() else "httpx2",
        "load_start": load_start,
        "load_end": [round(x, 2) for x in os.getloadavg()],
        "steal_during_online_run": steal,
    }
    print(json.dumps(figures, indent=2))
    print(report(figures, ideal, waves, args.concurrency))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
