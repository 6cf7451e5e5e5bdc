"""Time the statistics of a ten-run study: the many-way comparison behind every rank group (all tasks, all
scopes, every headline metric, 45 pairs each), as ``sweep``, ``report``, ``compare`` and ``view`` compute it.

Usage: ``python benchmarks/bench_ranks.py [--dir DIR] [--samples 191] [--resamples 1000] [--repeats 3]``.

Setup (kept in ``--dir`` when given, so a second call times only the statistics): ``rescue-bench data synth``
(fictional data at the paper's scale) and ten runs on it, all six tasks, BERTScore off: the majority baseline
and nine seeds of the random one (10,568 instances each at 191 samples).

Printed: the best of ``--repeats`` timings of :func:`rescue_bench.report.comparison.compare_many_run_data`
on the ten loaded runs, the number of metric matrices it made, and the ITP F1 groups with their legend.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def _cli(*args: str) -> None:
    from typer.testing import CliRunner

    from rescue_bench.cli.main import app

    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    if result.exit_code != 0:
        raise SystemExit(result.output)


def ten_runs(folder: Path, samples: int) -> list[Path]:
    """The majority baseline and nine seeds of the random one, on ``samples`` synthetic samples."""
    data = folder / "synthetic.jsonl"
    if not data.exists():
        _cli("data", "synth", "--out", str(data), "--samples", str(samples))
    out = []
    for name, model, seed in [("majority", "baseline/majority", 0)] + [
        (f"random-{s}", "baseline/random", s) for s in range(1, 10)
    ]:
        where = folder / name
        manifest = where / "run.json"
        if not (manifest.exists() and json.loads(manifest.read_text()).get("status") == "finished"):
            _cli("run", "--model", model, "--data", str(data), "--out", str(where), "--no-bertscore",
                 "--seed", str(seed), "--quiet")  # fmt: skip
        out.append(where)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--samples", type=int, default=191)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from rescue_bench.report.build import with_scores
    from rescue_bench.report.comparison import compare_many_run_data
    from rescue_bench.rundir import load_run

    with tempfile.TemporaryDirectory() as scratch:
        folder = args.dir or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        runs = [with_scores(load_run(path)) for path in ten_runs(folder, args.samples)]
        timings = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            result = compare_many_run_data(runs, n_resamples=args.resamples)
            timings.append(time.perf_counter() - start)
    matrices = sum(len(scope.metrics) for task in result.tasks for scope in task.scopes.values())
    itp = result.task("itp")
    f1 = next(m for m in itp.scopes["all"].metrics if m.metric == "f1") if itp else None
    print(f"runs {len(runs)}, samples {args.samples}, resamples {args.resamples}")
    print(
        f"statistics: best {min(timings):.2f} s of {args.repeats} ({', '.join(f'{t:.2f}' for t in timings)})"
    )
    print(f"metric matrices {matrices}, 45 pairs each")
    if f1 is not None:
        print(
            "ITP F1 groups: "
            + ", ".join(f"{n} {g or '-'}" for n, g in zip(result.runs, f1.groups, strict=True))
        )
    print(result.legend("all", {("itp", "f1")}))


if __name__ == "__main__":
    main()
