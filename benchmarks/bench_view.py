"""Time the viewer's instance list at paper scale (target: a page in under 300 ms), and measure the static
bundle of one and of ten paper-size runs (targets: under 50 MB and 200 files for ten runs, the first page
interactive in under 2 s from a local static server; figures, not gates).

Usage: ``python benchmarks/bench_view.py [--run DIR] [--repeats 20] [--bundles] [--json FILE]``.

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
import functools
import http.server
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent
TARGET_MS = 300.0
BUNDLE_TARGETS = {"size_mb": 50.0, "files": 200, "interactive_s": 2.0}
"""For ten paper-size runs."""


def _cli(*args: str) -> None:
    from typer.testing import CliRunner

    from rescue_bench.cli.main import app

    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    if result.exit_code != 0:
        raise SystemExit(result.output)


def make_data(tmp: Path) -> Path:
    data = tmp / "synthetic.jsonl"
    if not data.exists():
        _cli("data", "synth", "--out", str(data), "--samples", "191")
    return data


def make_run(
    tmp: Path, model: str = "baseline/random", seed: int = 0, name: str = "run", *extra: str
) -> Path:
    """A paper-size run on the synthetic data (kept and reused when ``tmp`` already has it finished)."""
    out = tmp / name
    if (out / "run.json").exists() and json.loads((out / "run.json").read_text()).get("status") == "finished":
        return out
    _cli("run", "--model", model, "--data", str(make_data(tmp)), "--out", str(out), "--no-bertscore",
         "--seed", str(seed), *extra)  # fmt: skip
    return out


def replied_run(tmp: Path) -> Path:
    """A paper-size run of the repository's fake OpenAI-compatible endpoint: its replies are in the bundle."""
    sys.path.insert(0, str(REPO))
    from tests.fakes.openai_server import FakeOpenAIServer, schema_answer

    with FakeOpenAIServer(schema_answer) as server:
        return make_run(tmp, "vllm/fake", 0, "fake-endpoint", "--base-url", server.base_url)


def ten_runs(tmp: Path) -> list[Path]:
    """Ten paper-size runs: the majority baseline and nine seeds of the random one."""
    runs = [make_run(tmp, "baseline/majority", 0, "majority")]
    return runs + [make_run(tmp, "baseline/random", seed, f"random-{seed}") for seed in range(1, 10)]


def _interactive(site: Path) -> dict[str, float] | None:
    """Seconds from navigation to drawn content, from a local static server (chromium via Playwright):
    the overview, and the RPP list of the single-page app (its data decoded and the rows drawn)."""
    chromium = Path("/usr/bin/chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not chromium.exists():
        return None
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    out = {}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(chromium), args=["--no-sandbox"])
            page = browser.new_page()
            for name, url, ready in (
                ("overview", f"{base}/index.html", "#runs"),
                ("instances (rpp)", f"{base}/instances.html#run=0&task=rpp", "#instances tbody tr"),
            ):
                start = time.perf_counter()
                page.goto(url)
                page.wait_for_selector(ready)
                out[name] = round(time.perf_counter() - start, 2)
            browser.close()
    finally:
        server.shutdown()
    return out


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def measure_bundle(runs: list[Path], site: Path, redact: bool = False) -> dict[str, Any]:
    from rescue_bench.view.bundle import write_bundle

    start = time.perf_counter()
    written = write_bundle(runs, site, redact=redact)
    elapsed = time.perf_counter() - start
    files = [p for p in site.rglob("*") if p.is_file()]
    return {
        "runs": len(runs),
        "redact": redact,
        "files": len(files),
        "size_mb": round(sum(p.stat().st_size for p in files) / 1e6, 2),
        "largest_file_mb": round(max(p.stat().st_size for p in files) / 1e6, 2),
        "write_s": round(elapsed, 1),
        "interactive_s": _interactive(site),
        "written": written.files,
    }


def bundles(tmp: Path) -> list[dict[str, Any]]:
    """One run, ten runs, ten runs redacted, and one run of an endpoint whose replies the bundle carries;
    each printed as soon as it is measured."""
    runs = ten_runs(tmp)
    found = []
    for label, chosen, redact in (
        ("one run", runs[1:2], False),
        ("ten runs", runs, False),
        ("ten runs, --redact", runs, True),
        ("one run with replies", [replied_run(tmp)], False),
    ):
        site = tmp / f"site-{len(found)}"
        shutil.rmtree(site, ignore_errors=True)
        figures = {"label": label, **measure_bundle(chosen, site, redact)}
        print(json.dumps(figures), flush=True)
        found.append(figures)
    return found


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

    client = TestClient(create_app([run]), base_url="http://127.0.0.1")
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
    parser.add_argument("--bundles", action="store_true", help="Measure the static bundles instead.")
    parser.add_argument("--workdir", type=Path, help="Keep the generated runs here (reused when finished).")
    parser.add_argument("--json", type=Path, help="Also write the figures to this file.")
    args = parser.parse_args()
    if args.bundles:
        with tempfile.TemporaryDirectory() as tmp:
            found = bundles(args.workdir or Path(tmp))
        ten = found[1]
        meets = ten["size_mb"] < BUNDLE_TARGETS["size_mb"] and ten["files"] < BUNDLE_TARGETS["files"]
        print(f"ten runs: {ten['size_mb']} MB in {ten['files']} files ({'meets' if meets else 'misses'} the "
              f"{BUNDLE_TARGETS['size_mb']:.0f} MB / {BUNDLE_TARGETS['files']} files target)")  # fmt: skip
        if args.json:
            args.json.write_text(json.dumps(found, indent=2) + "\n")
        return
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
