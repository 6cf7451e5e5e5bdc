"""rescue-bench against its peers (inspect_ai, lm-eval) on the same requests, fake server and machine.

Usage: ``python benchmarks/bench_peers.py [--requests N] [--rounds 2]
[--harnesses rescue-bench,inspect,lm-eval,inspect-nolog] [--concurrency 64]
[--latency 0.5] [--cache-dir ~/.cache/rescue-bench-peers] [--run-timeout 600] [--deadline 90] [--keep]
[--json FILE]``.

Run it with the project's interpreter (``.venv/bin/python``); ``rescue-bench`` is driven through its CLI only
(``data synth``, ``batch export``, ``run``), with ``PYTHONPATH`` set to this checkout's ``src``, so the script
does not depend on the engine's internals and measures whatever code the checkout holds. That ``src`` is
compiled to bytecode first (``compileall``), as ``pip install`` compiles the peers' packages.

Setup:

* the workload: ``rescue-bench data synth`` (191 fictional samples by default, scaled down for
  ``--requests N``), all six tasks; ``rescue-bench batch export`` writes the exact chat messages ``run``
  sends (3,229 requests at full size), and the peers get those same messages (a system and a user message);
* one fake OpenAI-compatible server (``tests/fakes/openai_server.py``) in its own process on 127.0.0.1,
  answering every request after ``--latency`` seconds with JSON shaped by the request's schema. The peers do
  not send ``response_format``, so the server looks the schema up by the prompt: all three harnesses get the
  same answers. It also checks that every prompt it receives is one of the exported ones (``matched``);
* each harness in its own virtual environment (created under ``--cache-dir`` with ``python -m venv`` and
  ``pip install`` when missing) and its own process:

  - **rescue-bench**: ``rescue-bench run --model vllm/bench --base-url ... --concurrency C --no-bertscore
    --quiet`` (``--no-cache`` when caches are off);
  - **inspect_ai**: a task whose samples are the exported messages, the ``generate()`` solver and a scorer
    that checks the answer parses as JSON; ``inspect eval --model openai-api/fake/bench --model-base-url ...
    --max-connections C --display none`` with sample logging on (the default); ``inspect-nolog`` is the same
    with ``--no-log-samples``; its cache is ``--cache``;
  - **lm-eval**: a ``generate_until`` task YAML in a temporary include path (``description`` is the
    system message, ``doc_to_text`` the user message, ``--apply_chat_template``), the
    ``local-chat-completions`` model with ``num_concurrent=C,tokenized_requests=False``, ``--log_samples``;
    its cache is ``--use_cache``.

Schedule: one cache-filling run per harness (its own cache on, empty), then ``--rounds`` rounds; in each round
every harness runs once with caches off and once fully cached (from the filled cache), the harness order
rotating from round to round. Every run is bounded by ``--run-timeout`` and the whole script by ``--deadline``
(runs that would start after it are skipped and said so).

Reported per run: wall time (spawn to exit, imports included), % of the ideal ``requests / concurrency x
latency``, harness CPU ms per request (user + system CPU of the child and the children it waited for, from
``wait4``, over the requests), peak RSS of the child (``ru_maxrss``), the requests the server saw, and the
1-minute load average at the start (2 cores, shared: other work shows in the wall times first), and the
share of the machine's CPU time the hypervisor took during the run (``steal``, :mod:`host`). Then a
summary per harness (ranges over the rounds) and the ratios of the means against rescue-bench.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from host import CpuTimes, steal_share

REPO = Path(__file__).resolve().parents[1]
FULL_SAMPLES = 191
FULL_REQUESTS = 3229  # what 191 synthetic samples give today; only used to scale --requests
MODEL = "bench"
VENVS = {
    "inspect": ("inspect_ai", ["inspect_ai", "openai"]),
    "lm-eval": ("lm_eval", ["lm-eval[api]"]),
}


# -- the fake server (run as `bench_peers.py serve` in its own process)
# -------------------------------------------------------------------------------------------------
def prompt_key(messages: Sequence[dict[str, Any]]) -> str:
    """The messages as (role, text) pairs, hashed: equal for the three harnesses' encodings of one prompt."""
    pairs = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        pairs.append([str(message.get("role")), str(content)])
    return hashlib.sha256(json.dumps(pairs, ensure_ascii=False).encode()).hexdigest()


def schema_of(response_format: dict[str, Any] | None) -> dict[str, Any]:
    fmt = response_format or {}
    if fmt.get("type") == "json_schema":
        return dict(fmt.get("json_schema", {}).get("schema") or {"type": "object"})
    return dict(fmt.get("schema") or {"type": "object"})


def serve(prompts: Path, latency: float) -> None:
    """Serve schema-shaped answers; on stdin ``reset`` clears the log, ``stats`` prints what was served."""
    sys.path.insert(0, str(REPO / "tests" / "fakes"))
    import openai_server as fake

    schemas = {}
    for line in prompts.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        schemas[prompt_key(row["messages"])] = schema_of(row["response_format"])
    opaque_id = re.compile(r"\bc(\d+)\b")

    def answer(request: Any) -> str:
        schema = request.schema or schemas.get(prompt_key(request.messages), {"type": "object"})
        ids = sorted({int(n) for n in opaque_id.findall(request.text)}) or [1]
        return json.dumps(fake.synthesize(schema, [f"c{i}" for i in ids]))

    server = fake.FakeOpenAIServer(answer, latency=latency).start()
    print(server.base_url, flush=True)
    for command in sys.stdin:
        if command.strip() == "reset":
            server.reset_log()
            print("{}", flush=True)
        elif command.strip() == "stats":
            keys = [prompt_key(r.messages) for r in list(server.requests)]
            stats = {
                "sent": len(keys),
                "completed": server.completed,
                "matched": sum(k in schemas for k in keys),
                "distinct": len(set(keys)),
                "max_in_flight": server.max_in_flight,
            }
            print(json.dumps(stats), flush=True)
    server.stop()


class Server:
    """The fake server's process, driven over its stdin."""

    def __init__(self, prompts: Path, latency: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "serve", "--prompts", str(prompts), "--latency", str(latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.base_url = self._line()

    def _line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def ask(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return dict(json.loads(self._line()))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


# -- measuring one child process
# -------------------------------------------------------------------------------------------------
@dataclass
class Measured:
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    exit_code: int | None
    """None when the run was killed at its time limit."""


def measure(argv: Sequence[str], env: dict[str, str], cwd: Path, log: Path, timeout: float) -> Measured:
    """Run ``argv`` in a new session; its CPU and peak RSS come from ``wait4`` on that one child."""
    with log.open("w") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(
            list(argv), env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = started + timeout
        killed = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline and not killed:
                os.killpg(proc.pid, signal.SIGKILL)
                killed = True
            time.sleep(0.02)
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here; tell Popen so it does not wait again
    return Measured(
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_rss_mb=usage.ru_maxrss / 1024,
        exit_code=None if killed else proc.returncode,
    )


# -- the harnesses
# -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Context:
    work: Path
    cache_dir: Path
    base_url: str
    concurrency: int
    latency: float
    synth: Path
    prompts: Path
    max_tokens: int


Build = Callable[[Context, Path, bool], tuple[list[str], dict[str, str]]]
"""(context, run directory, cached) -> (argv, extra environment)."""


def rescue_bench_cli() -> list[str]:
    script = Path(sys.executable).parent / "rescue-bench"
    if script.exists():
        return [str(script)]
    shim = "import sys; from rescue_bench.cli.main import main; sys.argv[0] = 'rescue-bench'; main()"
    return [sys.executable, "-c", shim]


def rescue_bench_env(ctx: Context) -> dict[str, str]:
    return {"PYTHONPATH": str(REPO / "src"), "RESCUE_BENCH_CACHE_DIR": str(ctx.work / "rb-cache")}


def build_rescue_bench(ctx: Context, run: Path, cached: bool) -> tuple[list[str], dict[str, str]]:
    argv = [*rescue_bench_cli(), "run", "--model", f"vllm/{MODEL}", "--data", str(ctx.synth)]
    argv += ["--base-url", ctx.base_url, "--concurrency", str(ctx.concurrency), "--out", str(run / "out")]
    argv += ["--quiet", "--no-bertscore", *([] if cached else ["--no-cache"])]
    return argv, rescue_bench_env(ctx)


INSPECT_TASK = '''\
"""The exported RESCUE-Bench prompts as an inspect_ai task (written by benchmarks/bench_peers.py)."""
import json

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import TaskState, generate

ROLES = {"system": ChatMessageSystem, "user": ChatMessageUser}


@scorer(metrics=[accuracy()])
def answers_json():
    async def score(state: TaskState, target: Target) -> Score:
        try:
            json.loads(state.output.completion)
        except ValueError:
            return Score(value=INCORRECT)
        return Score(value=CORRECT)

    return score


@task
def rescue_peers(prompts: str) -> Task:
    samples = []
    with open(prompts, encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            messages = [ROLES[m["role"]](content=m["content"]) for m in row["messages"]]
            samples.append(Sample(id=row["id"], input=messages))
    return Task(dataset=samples, solver=generate(), scorer=answers_json())
'''


def inspect_builder(log_samples: bool) -> Build:
    def build(ctx: Context, run: Path, cached: bool) -> tuple[list[str], dict[str, str]]:
        venv = ctx.cache_dir / "inspect"
        task_file = ctx.work / "inspect_task.py"
        argv = [
            str(venv / "bin" / "inspect"),
            "eval",
            f"{task_file}@rescue_peers",
            "-T",
            f"prompts={ctx.prompts}",
        ]
        argv += ["--model", f"openai-api/fake/{MODEL}", "--model-base-url", ctx.base_url]
        argv += ["--max-connections", str(ctx.concurrency), "--temperature", "0"]
        argv += ["--max-tokens", str(ctx.max_tokens), "--log-dir", str(run / "logs"), "--display", "none"]
        argv += [*([] if log_samples else ["--no-log-samples"]), *(["--cache", "1W"] if cached else [])]
        env = {"FAKE_API_KEY": "sk-bench", "FAKE_BASE_URL": ctx.base_url}
        return argv, {**env, "INSPECT_CACHE_DIR": str(ctx.work / "inspect-cache")}

    return build


LM_EVAL_TASK = """\
task: rescue_peers
dataset_path: json
dataset_kwargs:
  data_files:
    test: {flat}
test_split: test
output_type: generate_until
description: system
doc_to_text: user
doc_to_target: ""
target_delimiter: ""
generation_kwargs:
  until: []
  max_gen_toks: {max_tokens}
  temperature: 0
  do_sample: false
process_results: !function peers_utils.process_results
metric_list:
  - metric: answers_json
    aggregation: mean
    higher_is_better: true
"""

LM_EVAL_UTILS = '''\
"""The trivial metric of the rescue_peers task (written by benchmarks/bench_peers.py)."""
import json


def process_results(doc, results):
    try:
        json.loads(results[0])
    except ValueError:
        return {"answers_json": 0.0}
    return {"answers_json": 1.0}
'''


def build_lm_eval(ctx: Context, run: Path, cached: bool) -> tuple[list[str], dict[str, str]]:
    venv = ctx.cache_dir / "lm-eval"
    model_args = f"model={MODEL},base_url={ctx.base_url}/chat/completions,num_concurrent={ctx.concurrency}"
    model_args += ",tokenized_requests=False,max_retries=3,timeout=120"
    argv = [str(venv / "bin" / "lm_eval"), "--model", "local-chat-completions", "--model_args", model_args]
    argv += ["--tasks", "rescue_peers", "--include_path", str(ctx.work / "lm_tasks"), "--apply_chat_template"]
    argv += ["--output_path", str(run / "out"), "--log_samples"]
    argv += ["--use_cache", str(ctx.work / "lm-cache" / "responses")] if cached else []
    env = {"OPENAI_API_KEY": "sk-bench", "HF_DATASETS_CACHE": str(ctx.work / "hf-datasets")}
    return argv, {**env, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


HARNESSES: dict[str, tuple[str, Build]] = {
    "rescue-bench": ("rescue-bench", build_rescue_bench),
    "inspect": ("inspect_ai", inspect_builder(log_samples=True)),
    "inspect-nolog": ("inspect_ai --no-log-samples", inspect_builder(log_samples=False)),
    "lm-eval": ("lm-eval local-chat-completions", build_lm_eval),
}
VARIANTS = ("inspect-nolog",)
"""Harnesses that are another one with one setting changed: they read its cache and fill none."""


# -- setup
# -------------------------------------------------------------------------------------------------
def ensure_venv(directory: Path, module: str, packages: list[str]) -> str:
    """The venv's version of ``module``, creating the venv (``python -m venv`` + pip) when missing."""
    python = directory / "bin" / "python"
    probe = [str(python), "-c", f"import importlib.metadata as m; print(m.version({module!r}))"]
    if python.exists():
        found = subprocess.run(probe, capture_output=True, text=True, check=False)
        if found.returncode == 0:
            return found.stdout.strip()
    print(f"creating {directory} ({' '.join(packages)}); this takes a few minutes", flush=True)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(directory)], check=True, timeout=300)
    pip = [str(python), "-m", "pip", "install", "-q", *packages]
    subprocess.run(pip, check=True, timeout=1800)
    return subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip()


def prepare(work: Path, samples: int) -> tuple[Path, Path, int, int]:
    """Synthetic data and the exported requests: (data, prompts JSONL, request count, largest max_tokens)."""
    env = {
        **os.environ,
        **{"PYTHONPATH": str(REPO / "src"), "RESCUE_BENCH_CACHE_DIR": str(work / "rb-cache")},
    }
    synth = work / "synthetic.jsonl"
    cli = rescue_bench_cli()
    subprocess.run(
        [*cli, "data", "synth", "--out", str(synth), "--samples", str(samples)], env=env, check=True
    )
    export = work / "batch.jsonl"
    argv = [*cli, "batch", "export", "--model", f"vllm/{MODEL}", "--data", str(synth), "--out", str(export)]
    argv += ["--base-url", "http://127.0.0.1:9/v1", "--run", str(work / "export-run")]
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    prompts, flat = work / "prompts.jsonl", work / "prompts_flat.jsonl"
    max_tokens, count = 0, 0
    with prompts.open("w") as rows, flat.open("w") as flat_rows:
        for line in export.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            body = item["body"]
            roles = [m["role"] for m in body["messages"]]
            if roles != ["system", "user"]:
                raise SystemExit(
                    f"{export}: {item['custom_id']}: messages {roles}, the peers' tasks expect system, user"
                )
            max_tokens = max(max_tokens, int(body.get("max_tokens") or 0))
            row = {
                "id": item["custom_id"],
                "messages": body["messages"],
                "response_format": body.get("response_format"),
            }
            rows.write(json.dumps(row, ensure_ascii=False) + "\n")
            system, user = (m["content"] for m in body["messages"])
            flat_rows.write(
                json.dumps({"id": item["custom_id"], "system": system, "user": user}, ensure_ascii=False)
                + "\n"
            )
            count += 1
    (work / "inspect_task.py").write_text(INSPECT_TASK)
    (work / "lm_tasks").mkdir()
    (work / "lm_tasks" / "rescue_peers.yaml").write_text(
        LM_EVAL_TASK.format(flat=flat, max_tokens=max_tokens)
    )
    (work / "lm_tasks" / "peers_utils.py").write_text(LM_EVAL_UTILS)
    return synth, prompts, count, max_tokens


# -- the schedule
# -------------------------------------------------------------------------------------------------
@dataclass
class Row:
    harness: str
    kind: str
    """fill (cache on, empty), uncached (caches off) or cached (re-run from the filled cache)."""
    round: int
    load_1min: float
    requests: int
    wall_s: float = 0.0
    cpu_ms_per_request: float = 0.0
    peak_rss_mb: float = 0.0
    exit_code: int | None = None
    server: dict[str, Any] = field(default_factory=dict)
    pct_of_ideal: float = 0.0
    steal: float | None = None
    """The share of the machine's CPU time the hypervisor took during the run (:mod:`host`)."""
    note: str = ""


def run_one(
    ctx: Context, server: Server, name: str, kind: str, rnd: int, requests: int, timeout: float
) -> Row:
    run = ctx.work / "runs" / f"{name}-{kind}-r{rnd}"
    run.mkdir(parents=True)
    argv, extra = HARNESSES[name][1](ctx, run, kind != "uncached")
    env = {**os.environ, "TQDM_DISABLE": "1", **extra}
    server.ask("reset")
    row = Row(name, kind, rnd, round(os.getloadavg()[0], 2), requests)
    before = CpuTimes.now()
    got = measure(argv, env, run, run / "output.log", timeout)
    row.steal = steal_share(before, CpuTimes.now())
    row.server = server.ask("stats")
    row.wall_s, row.exit_code = round(got.wall_s, 2), got.exit_code
    row.cpu_ms_per_request = round(1000 * got.cpu_s / requests, 2)
    row.peak_rss_mb = round(got.peak_rss_mb)
    row.pct_of_ideal = round(100 * ideal_s(ctx, requests) / got.wall_s, 1)
    if got.exit_code != 0:
        row.note = f"FAILED (exit {got.exit_code}; see {run / 'output.log'})"
    elif kind != "cached" and row.server["matched"] != requests:
        row.note = f"server matched {row.server['matched']} of {requests} prompts"
    elif kind == "cached" and row.server["sent"]:
        row.note = f"{row.server['sent']} requests reached the server"
    print(format_row(row), flush=True)
    return row


def ideal_s(ctx: Context, requests: int) -> float:
    return requests / ctx.concurrency * ctx.latency


def schedule(names: list[str], rounds: int) -> list[tuple[str, str, int]]:
    """Fill each cache once, then per round every harness uncached, then every harness cached, rotating."""
    plan = [(name, "fill", 0) for name in names if name not in VARIANTS]
    for rnd in range(1, rounds + 1):
        shift = (rnd - 1) % len(names)
        order = names[shift:] + names[:shift]
        plan += [(name, "uncached", rnd) for name in order]
        plan += [(name, "cached", rnd) for name in order if name != "inspect-nolog"]
    return plan


# -- output
# -------------------------------------------------------------------------------------------------
HEADER = (
    f"{'harness':<32} {'run':<11} {'load':>5} {'wall s':>8} {'% ideal':>8} {'CPU ms/req':>10}"
    f" {'RSS MB':>7} {'sent':>6} {'in flight':>9} {'steal':>6}"
)


def format_row(row: Row) -> str:
    label = HARNESSES[row.harness][0]
    run = f"{row.kind} r{row.round}" if row.round else row.kind
    flight = row.server.get("max_in_flight", 0)
    # against the ideal only when the requests went out; a cached run sends none
    ideal = "-" if row.kind == "cached" else f"{row.pct_of_ideal:.1f}%"
    line = f"{label:<32} {run:<11} {row.load_1min:>5.2f} {row.wall_s:>8.2f} {ideal:>8}"
    line += f" {row.cpu_ms_per_request:>10.2f} {row.peak_rss_mb:>7.0f} {row.server.get('sent', 0):>6}"
    steal = "-" if row.steal is None else f"{100 * row.steal:.1f}%"
    return line + f" {flight:>9} {steal:>6}" + (f"  {row.note}" if row.note else "")


def span(values: list[float], unit: str, digits: int) -> str:
    if not values:
        return "-"
    low, high = min(values), max(values)
    return f"{low:.{digits}f}{unit}" if low == high else f"{low:.{digits}f}-{high:.{digits}f}{unit}"


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def figures(rows: list[Row], name: str) -> dict[str, list[float]]:
    """Each column's values over the successful runs of one harness."""
    runs = [r for r in rows if r.harness == name and r.exit_code == 0 and r.kind == "uncached"]
    cached = [r for r in rows if r.harness == name and r.exit_code == 0 and r.kind == "cached"]
    return {
        "wall": [r.wall_s for r in runs],
        "ideal": [r.pct_of_ideal for r in runs],
        "cpu": [r.cpu_ms_per_request for r in runs],
        "rss": [r.peak_rss_mb for r in runs],
        "cached": [r.wall_s for r in cached],
    }


def summary(rows: list[Row], names: list[str]) -> str:
    """Ranges over the rounds per harness (caches off), and the ratios of the means to rescue-bench's."""
    lines = [
        "| harness | wall | % of ideal | CPU per request | peak RSS | fully cached re-run |",
        "|---|---|---|---|---|---|",
    ]
    base = figures(rows, "rescue-bench")
    ratios = []
    for name in names:
        own = figures(rows, name)
        cells = [span(own["wall"], " s", 1), span(own["ideal"], "%", 1), span(own["cpu"], " ms", 2)]
        cells += [span(own["rss"], " MB", 0), span(own["cached"], " s", 1)]
        lines.append(f"| {HARNESSES[name][0]} | " + " | ".join(cells) + " |")
        if name != "rescue-bench" and base["wall"]:
            parts = [
                f"{key} {mean(own[key]) / mean(base[key]):.2f}x"
                for key in ("wall", "cpu", "rss", "cached")
                if own[key] and base[key]
            ]
            ratios.append(f"{HARNESSES[name][0]} / rescue-bench (means): " + ", ".join(parts))
    return "\n".join([*lines, "", *ratios])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, help=f"about this many (default: all {FULL_REQUESTS})")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--harnesses",
        default="rescue-bench,inspect,lm-eval,inspect-nolog",
        help=f"comma list of {','.join(HARNESSES)}",
    )
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "rescue-bench-peers")
    parser.add_argument("--run-timeout", type=float, default=600.0, help="seconds per harness run at most")
    parser.add_argument("--deadline", type=float, default=90.0, help="minutes: start no run after this")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, run outputs)")
    parser.add_argument("--json", type=Path, help="also write every run's figures to this JSON file")
    args = parser.parse_args(argv)
    args.names = [n.strip() for n in args.harnesses.split(",") if n.strip()]
    unknown = sorted(set(args.names) - set(HARNESSES))
    if unknown:
        parser.error(f"unknown harness {', '.join(unknown)}; choose from {', '.join(HARNESSES)}")
    return args


def head() -> str:
    found = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True)
    return found.stdout.decode().strip() or "?"


def run_all(args: argparse.Namespace, work: Path, started: float) -> tuple[list[Row], list[str], int]:
    samples = FULL_SAMPLES
    if args.requests is not None:
        samples = max(1, round(FULL_SAMPLES * args.requests / FULL_REQUESTS))
    synth, prompts, requests, max_tokens = prepare(work, samples)
    ideal = requests / args.concurrency * args.latency
    print(
        f"{samples} samples, {requests} requests, concurrency {args.concurrency}, latency {args.latency:g} s:"
    )
    print(f"ideal {ideal:.1f} s; work directory {work}")
    server = Server(prompts, args.latency)
    ctx = Context(
        work, args.cache_dir, server.base_url, args.concurrency, args.latency, synth, prompts, max_tokens
    )
    rows: list[Row] = []
    skipped = []
    print(HEADER, flush=True)
    try:
        for name, kind, rnd in schedule(args.names, args.rounds):
            if time.monotonic() - started > 60 * args.deadline:
                skipped.append(f"{name} {kind} r{rnd}")
                continue
            rows.append(run_one(ctx, server, name, kind, rnd, requests, args.run_timeout))
    finally:
        server.close()
    return rows, skipped, requests


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:2] == ["serve"]:
        serve(
            Path(sys.argv[sys.argv.index("--prompts") + 1]), float(sys.argv[sys.argv.index("--latency") + 1])
        )
        return 0
    args = parse_args(argv)
    started = time.monotonic()
    load_start = [round(x, 2) for x in os.getloadavg()]
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(f"== bench_peers {when} HEAD {head()} loadavg {load_start} cores {os.cpu_count()}", flush=True)
    versions = {"python": sys.version.split()[0]}
    for venv, (module, packages) in VENVS.items():
        if any(n.startswith(venv) for n in args.names):
            versions[module] = ensure_venv(args.cache_dir / venv, module, packages)
    print(f"versions {versions}")
    # The peers' venvs hold bytecode compiled by pip; rescue-bench runs from this checkout's src, which
    # PYTHONDONTWRITEBYTECODE (set on some machines) would leave uncompiled: compile it as an install would.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "src")], check=True, timeout=300)
    work = Path(tempfile.mkdtemp(prefix="bench_peers_"))
    try:
        rows, skipped, requests = run_all(args, work, started)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    load_end = [round(x, 2) for x in os.getloadavg()]
    total = time.monotonic() - started
    print(f"\n{summary(rows, args.names)}\n")
    print(f"{requests} requests; load average at start {load_start}, at end {load_end}; total {total:.0f} s")
    if skipped:
        print(f"skipped at the {args.deadline:g}-minute deadline: {', '.join(skipped)}")
    if args.json:
        doc = {"when": when, "versions": versions, "requests": requests, "load_start": load_start}
        doc |= {"load_end": load_end, "total_s": round(total), "runs": [asdict(r) for r in rows]}
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    return 0 if rows and all(r.exit_code == 0 and not r.note for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
