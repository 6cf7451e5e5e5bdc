"""What a run measured and how far it got, in every leaderboard and heading: status marks, validity, the data,
the judge, and the caveat beside published rows."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from tests.report.conftest import LONG_NAMES, renamed_copy
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.report import measured, tables
from rescue_bench.report.build import build_report
from rescue_bench.report.leaderboard import Entry, leaderboard_report, write_leaderboard
from rescue_bench.rundir import RunData

RUNNER = CliRunner()
LINE = {"instance_id": "i", "sample_id": "s", "task": "itp", "scenario": "couple"}


def _run(status: str, counts: dict[str, dict[str, int]], done: int = 0, **more: object) -> RunData:
    lines = [{**LINE, "instance_id": f"i{n}"} for n in range(done)]
    return RunData.of(Path("r"), {"status": status, "counts": counts, **more}, lines)


@pytest.mark.parametrize(
    ("status", "done", "shown"),
    [
        ("finished", 4, "finished"),
        ("degraded", 4, "degraded"),
        ("stopped", 1, "PARTIAL 1/4"),
        ("incomplete", 3, "PARTIAL 3/4"),
        ("running", 0, "PARTIAL 0/4"),
        ("finished", 2, "PARTIAL 2/4"),  # finished in name only: instances are missing
    ],
)
def test_each_status_gets_its_mark(status: str, done: int, shown: str) -> None:
    run = _run(status, {"itp": {"instances": 4, "valid": done, "done": done}}, done)
    assert measured.state(run) == shown


def test_validity_is_valid_over_instances_summed_over_tasks() -> None:
    counts = {"itp": {"instances": 10, "valid": 9}, "rpp": {"instances": 30, "valid": 3}}
    run = _run("degraded", counts)
    assert measured.validity(run) == pytest.approx(12 / 40)
    cell = tables.validity_cell(run)
    assert cell is not None and cell.text() == "30.0"
    assert measured.validity(_run("finished", {"itp": {"instances": 10}})) is None  # not recorded


def test_the_heading_names_data_split_instances_judge_and_bertscore() -> None:
    dataset = {
        "source": "/home/ana/data/benchmark_191.jsonl",
        "hash": "ab" * 32,
        "samples": 191,
        "couple": 174,
        "family": 17,
    }
    run = RunData.of(
        Path("r"),
        {
            "status": "finished",
            "dataset": dataset,
            "counts": {"itp": {"instances": 1200, "valid": 1200, "done": 1200}},
        },
        [],
        scores={
            "_meta": {"judges": ["openai/gpt-5.4"], "bertscore": {"model": "roberta-large", "hash": "h"}}
        },
    )
    line = measured.heading([run])
    # The data by its name and content hash: never where the file sat on one machine.
    assert line == (
        "Measured: benchmark_191.jsonl (sha256 abababababab): 191 samples (174 couple, 17 family), 1200 "
        "instances; judge openai/gpt-5.4; BERTScore roberta-large"
    )
    assert "/home/ana" not in line
    assert "Not comparable" not in measured.published_caveat([run])


def test_runs_that_differ_share_their_common_line_once_and_name_only_the_others() -> None:
    demo = {"source": "demo", "samples": 6, "couple": 4, "family": 2}
    counts = {"itp": {"instances": 138, "valid": 138, "done": 138}}
    runs = [
        RunData.of(Path(f"r{n}"), {"model": {"name": f"m/{n}"}, "dataset": demo, "counts": counts}, [])
        for n in range(9)
    ]
    judged = {"_meta": {"judges": ["openai/gpt-5.4"]}}
    odd = RunData.of(
        Path("odd"), {"model": {"name": "m/odd"}, "dataset": demo, "counts": counts}, [], scores=judged
    )
    line = measured.measured_heading([*runs, odd])
    common = "demo data (fictional): 6 samples (4 couple, 2 family), 138 instances"
    assert line == (
        f"Measured (runs differ): 9 of 10 runs {common}; not judged; no BERTScore; "
        f"the others: m/odd: {common}; judge openai/gpt-5.4; no BERTScore"
    )
    one = RunData.of(Path("one"), {"dataset": {"source": "demo", "samples": 1, "couple": 1, "family": 0}}, [])
    assert measured.data_line(one) == "demo data (fictional): 1 sample (1 couple), 0 instances"


def test_published_rows_say_what_they_measured_and_warn_beside_demo_runs() -> None:
    demo = {"source": "demo", "samples": 6, "couple": 4, "family": 2}
    run = RunData.of(Path("r"), {"dataset": demo, "counts": {"itp": {"instances": 24}}}, [])
    board = tables.leaderboard([run], with_paper=True)
    assert "published: 191 conversations" in board.note and "judge GPT-5.4" in board.note
    assert (
        "Not comparable: the runs above were asked on other data (demo data (fictional): 6 samples"
        in board.note
    )
    assert board.subtitle.startswith(
        "Measured: demo data (fictional): 6 samples (4 couple, 2 family), 24 ins"
    )
    assert board.subtitle.splitlines()[1] == (
        "Rows marked (published) are the paper's, published: 191 conversations of the official release "
        "(174 couple, 17 family), judge GPT-5.4, BERTScore backbone not stated; not comparable with the runs "
        "here, asked on other data"
    )


@pytest.fixture(scope="module")
def marked_study(demo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three runs: one finished, one degraded (most answers invalid), one stopped half way."""
    folder = tmp_path_factory.mktemp("marked")
    _, bad, cut = (renamed_copy(demo_run, folder / f"r{n}", name) for n, name in enumerate(LONG_NAMES))
    run = json.loads((bad / "run.json").read_text())
    run["status"] = "degraded"
    for count in run["counts"].values():
        count["valid"] = count["instances"] // 4
    (bad / "run.json").write_text(json.dumps(run))
    lines = (cut / "predictions.jsonl").read_text().splitlines(keepends=True)
    (cut / "predictions.jsonl").write_text("".join(lines[: len(lines) // 2]))
    run = json.loads((cut / "run.json").read_text())
    run["status"] = "stopped"
    (cut / "run.json").write_text(json.dumps(run))
    (cut / "scores.json").unlink()
    return folder


@pytest.mark.slow
def test_report_marks_partial_and_degraded_rows_in_every_format(marked_study: Path, tmp_path: Path) -> None:
    runs = [marked_study / f"r{n}" for n in range(3)]
    result = RUNNER.invoke(app, ["report", *map(str, runs), "--partial", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    board = build_report(runs, allow_partial=True).table("leaderboard")
    states = [row[2] for row in board.rows]
    assert states[0] == "finished" and states[1] == "degraded" and states[2].startswith("PARTIAL ")
    done, planned = map(int, str(states[2]).split()[1].split("/"))
    assert 0 < done < planned
    assert board.rows[1][3].text() == "24.9" or 20 < board.rows[1][3].value * 100 < 26
    md = (tmp_path / "report.md").read_text()
    assert f"| {LONG_NAMES[1]} | this toolkit | degraded |" in md
    assert f"| {LONG_NAMES[2]} | this toolkit | {states[2]} |" in md
    assert "degraded: the share of invalid answers passed" in md
    html = (tmp_path / "report.html").read_text()
    assert f"<td>{states[2]}</td>" in html and "<td>degraded</td>" in html
    with (tmp_path / "results.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    status = {r["model"]: (r["status"], r["valid_share"]) for r in rows}
    assert status[LONG_NAMES[1]][0] == "degraded" and float(status[LONG_NAMES[1]][1]) < 0.3
    assert status[LONG_NAMES[2]][0] == states[2]
    # the terminal shows the marks too, within 100 columns
    assert "degraded" in result.output and states[2] in result.output
    rows = [line for line in result.output.splitlines() if any(name in line for name in LONG_NAMES)]
    assert rows and all(len(line) <= 100 for line in rows)


def test_the_study_leaderboard_marks_rows_and_writes_validity(marked_study: Path, tmp_path: Path) -> None:
    entries = [
        Entry(LONG_NAMES[0], marked_study / "r0", "", "finished"),
        Entry(LONG_NAMES[1], marked_study / "r1", "", "finished"),
        Entry(LONG_NAMES[2], marked_study / "r2", "", "partial"),
        Entry("vllm/never-started", marked_study / "absent", "", "failed", "401 Unauthorized"),
    ]
    report = leaderboard_report(entries, n_resamples=50)
    board = report.table("leaderboard")
    assert board.columns[:3] == ("Model", "Status", "Valid (%)")
    assert [row[1] for row in board.rows][:2] == ["finished", "degraded"]
    assert str(board.rows[2][1]).startswith("PARTIAL ") and board.rows[3][1] == "failed"
    assert "vllm/never-started: failed: 401 Unauthorized" in board.note
    assert board.subtitle.startswith("Measured: demo data (fictional)")
    write_leaderboard(report, tmp_path)
    with (tmp_path / "leaderboard.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    shares = {r["model"]: r["valid_share"] for r in rows}
    assert float(shares[LONG_NAMES[0]]) == 1.0 and float(shares[LONG_NAMES[1]]) < 0.3
    md = (tmp_path / "leaderboard.md").read_text()
    assert "| Model | Status | Valid (%) |" in md and "**Measured: demo data (fictional)" in md
    assert f"| {LONG_NAMES[1]} | degraded | 24." in md or f"| {LONG_NAMES[1]} | degraded | 2" in md


def test_an_instance_whose_request_got_no_answer_is_not_done() -> None:
    failed = {**LINE, "instance_id": "i9", "problems": ["request_failed: connection refused"]}
    lines = [{**LINE, "instance_id": f"i{n}"} for n in range(3)] + [failed]
    counts = {"itp": {"instances": 4, "done": 4, "valid": 3, "request_failures": 1}}
    run = RunData.of(Path("r"), {"status": "finished", "counts": counts}, lines)
    assert measured.state(run) == "PARTIAL 3/4" and not measured.progress(run).finished
    summary_only = RunData.of(Path("r"), {"status": "incomplete", "counts": counts}, [])
    assert measured.state(summary_only) == "PARTIAL 3/4"


def test_the_heading_names_vp_readings_that_are_not_the_defaults() -> None:
    def heading(options: dict[str, object]) -> str:
        config = {"task_options": {"vp": options}}
        run = RunData.of(Path("r"), {"status": "finished", "config": config}, [])
        return measured.heading([run])

    assert "VP BERT" not in heading({"checkpoints_per_sample": 5})
    line = heading({"bert": "precision-aware", "judge_scale": "integer"})
    assert line.endswith("; VP BERT precision-aware, VP LLM integer scale")
