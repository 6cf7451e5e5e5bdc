"""Time the viewer's instance list at paper scale (target: a page in under 300 ms).

Usage: ``python benchmarks/bench_view.py [--run DIR] [--repeats 20] [--json FILE]``.

Setup (unless ``--run`` names an existing run): ``rescue-bench data synth --samples 191`` (fictional data
at the paper's scale) and ``rescue-bench run --model baseline/random --no-bertscore`` on it, all six tasks:
10,568 instances. The app is driven in process with FastAPI's TestClient (real ASGI requests, no network).

Reported: the time of the first request (reading and indexing the run), then the median and maximum of
``--repeats`` requests for each page: the first page of the RPP list, a filtered and sorted page (wrong
answers of one label, sorted by gold, page 2), a text search over the replies and transcripts, and one
instance page (its transcript rebuilt from the data). A static file's request is timed too: it is what the
TestClient round trip itself costs, included in every other figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

TARGET_MS = 300.0


def make_run(tmp: Path) -> Path:
    from typer.testing import CliRunner

    from rescue_bench.cli.main import app

    runner = CliRunner()
    data, out = tmp / "synthetic.jsonl", tmp / "run"
    for args in (
        ["data", "synth", "--out", str(data), "--samples", "191"],
        ["run", "--model", "baseline/random", "--data", str(data), "--out", str(out), "--no-bertscore"],
    ):
        result = runner.invoke(app, args, catch_exceptions=False)
        if result.exit_code != 0:
            raise SystemExit(result.output)
    return out


def _time(client: Any, url: str, repeats: int) -> dict[str, float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        response = client.get(url)
        times.append(1000 * (time.perf_counter() - start))
        if response.status_code != 200:
            raise SystemExit(f"{url}: HTTP {response.status_code}")
    return {"median_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1)}


def measure(run: Path, repeats: int) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from rescue_bench.view.app import create_app

    client = TestClient(create_app([run]))
    start = time.perf_counter()
    client.get("/instances?task=rpp")
    first = 1000 * (time.perf_counter() - start)
    view = client.app.state.viewer.views()[0]  # type: ignore[attr-defined]
    rpp = [r for r in view.rows if r.task == "rpp"]
    label = rpp[0].gold
    client.get(f"/instances/{quote(rpp[0].instance_id, safe='')}")  # loads the data once
    pages = {
        "static file (client cost)": "/static/view.css",
        "list page 1": "/instances?task=rpp",
        "filtered, sorted, page 2": f"/instances?task=rpp&gold={label}&correct=no&sort=gold&page=2",
        "text search": "/instances?task=rpp&q=you",
        "instance": f"/instances/{quote(rpp[len(rpp) // 2].instance_id, safe='')}?task=rpp",
    }
    return {
        "instances": len(view.rows),
        "first_request_ms": round(first, 1),
        "pages": {name: _time(client, url, repeats) for name, url in pages.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, help="An existing run directory (default: make one).")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", type=Path, help="Also write the figures to this file.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run or make_run(Path(tmp))
        result = measure(run, args.repeats)
    print(f"{result['instances']} instances; first request (read + index) {result['first_request_ms']} ms")
    for name, figures in result["pages"].items():
        print(f"  {name:26s} median {figures['median_ms']:7.1f} ms   max {figures['max_ms']:7.1f} ms")
    page = result["pages"]["list page 1"]["median_ms"]
    print(f"list page: {page} ms ({'meets' if page < TARGET_MS else 'misses'} the {TARGET_MS:.0f} ms target)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
