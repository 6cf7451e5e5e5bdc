"""Time the README's main job: the demo study (``examples/demo-study.toml``: the local model beside the two
baselines, all six tasks, the local model judging ER and VP), then the report of the local model's run.

Usage: ``python benchmarks/bench_demo.py [--study examples/demo-study.toml] [--keep DIR]``.

It runs exactly what ``make demo`` runs after installing (``rescue-bench sweep STUDY --out DIR`` and
``rescue-bench report DIR/<local model> --out DIR/report``), as subprocesses, with ``--no-cache`` so that
every request is computed (the assembled model file stays in the user cache). Target: under 5 minutes for both
on 2 cores.

Reported: the wall time of each command, the study's CPU time, the local model's requests and prompt tokens
per task, and the seconds each task took (between its first and its last recorded request; the engine asks
one task after the other, the judge passes of the other runs in between), the judge pass of each run, and
the load averages at the start and end (the machine may be shared).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 300.0


def timed(command: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of a child command; exits when it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def per_task(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Requests, prompt tokens and seconds of each task, from ``requests.jsonl`` (in finishing order)."""
    lines = [json.loads(line) for line in (run_dir / "requests.jsonl").read_text().splitlines()]
    out: dict[str, dict[str, Any]] = collections.defaultdict(lambda: {"requests": 0, "prompt_tokens": 0})
    previous = lines[0]["time"] - lines[0]["latency"] if lines else 0.0
    seconds: dict[str, float] = collections.defaultdict(float)
    for line in lines:
        task = out[line["task"]]
        task["requests"] += 1
        task["prompt_tokens"] += line["usage"]["prompt_tokens"]
        seconds[line["task"]] += line["time"] - previous
        previous = line["time"]
    for name, task in out.items():
        task["seconds"] = round(seconds[name], 1)
    return dict(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", type=Path, default=REPO / "examples" / "demo-study.toml")
    parser.add_argument("--keep", type=Path, help="study directory to write (default: a temporary one)")
    args = parser.parse_args(argv)
    study = tomllib.loads(args.study.read_text())
    local = next(m["name"] for m in study["models"] if m["name"].startswith("local/"))
    study_dir = args.keep or Path(tempfile.mkdtemp(prefix="bench_demo_")) / "study"
    run_dir = study_dir / local.replace("/", "-")
    cli = str(Path(sys.executable).with_name("rescue-bench"))
    load_start = os.getloadavg()
    sweep = [cli, "sweep", str(args.study), "--out", str(study_dir), "--no-cache", "--quiet"]
    run_wall, run_cpu = timed(sweep)
    report_wall, _ = timed([cli, "report", str(run_dir), "--out", str(study_dir / "report")])
    load_end = os.getloadavg()
    tasks = per_task(run_dir)
    judged = {
        entry.name: json.loads((entry / "judging.json").read_text())["counts"]
        for entry in sorted(study_dir.iterdir())
        if (entry / "judging.json").is_file()
    }
    figures = {
        "study": str(args.study),
        "samples": study.get("sample_ids", "all"),
        "model": local,
        "run_wall_s": round(run_wall, 1),
        "run_cpu_s": round(run_cpu, 1),
        "report_wall_s": round(report_wall, 1),
        "total_wall_s": round(run_wall + report_wall, 1),
        "requests": sum(t["requests"] for t in tasks.values()),
        "tasks": tasks,
        "judge_passes": judged,
        "loadavg_start": [round(x, 2) for x in load_start],
        "loadavg_end": [round(x, 2) for x in load_end],
        "run_dir": str(run_dir),
    }
    print(json.dumps(figures, indent=2))
    met = "met" if figures["total_wall_s"] < TARGET_S else "MISSED"
    print(
        f"run {figures['run_wall_s']} s (CPU {figures['run_cpu_s']} s) + report {figures['report_wall_s']} s"
        f" = {figures['total_wall_s']} s for {figures['requests']} requests; target < {TARGET_S:g} s: {met}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
