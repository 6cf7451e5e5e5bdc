"""`rescue-bench tasks summary | show | export` end to end through the typer app."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.data.load import load_samples
from rescue_bench.tasks import TASK_NAMES, TASKS
from rescue_bench.tasks.base import TaskConfig

runner = CliRunner()


def run(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, result.output
    return result


def test_summary_json_has_counts_per_task_and_scope() -> None:
    counts = json.loads(run("tasks", "summary", "demo", "--format", "json").stdout)
    assert list(counts) == list(TASK_NAMES)
    samples = load_samples("demo")
    for name in TASK_NAMES:
        per_sample = [(s.scenario, len(TASKS[name].build(s, TaskConfig()))) for s in samples]
        for scope in ("couple", "family"):
            want = [n for sc, n in per_sample if sc == scope and n]
            assert counts[name][scope] == {"instances": sum(want), "samples": len(want)}
        assert (
            counts[name]["all"]["instances"]
            == counts[name]["couple"]["instances"] + counts[name]["family"]["instances"]
        )


def test_summary_on_the_real_samples_counts_the_expected_instances(
    real_subset: Path, expected_instances: Path
) -> None:
    counts = json.loads(run("tasks", "summary", str(real_subset), "--format", "json").stdout)
    expected = json.loads(expected_instances.read_text())
    itp = sum(len(e["itp"]["positive_decision_rows"]) + len(e["itp"]["negative_decision_rows"])
              for e in expected.values())  # fmt: skip
    assert counts["itp"]["all"]["instances"] == itp
    assert counts["rpp"]["all"] == {
        "instances": sum(len(e["rpp_rows"]) for e in expected.values()),
        "samples": 4,
    }
    assert counts["ssp"]["family"]["instances"] == len(expected["family_therapy/003/merged"]["ssp"])


def test_summary_table_uses_the_paper_layout() -> None:
    out = run("tasks", "summary", "demo").stdout
    for text in ("Couple inst.", "Family inst.", "Couple samp.", "Family samp.", "ITP", "VP"):
        assert text in out


def test_rpp_gold_field_flag_changes_the_rpp_instances() -> None:
    auto = json.loads(run("tasks", "summary", "demo", "--format", "json").stdout)["rpp"]
    forced = json.loads(
        run("tasks", "summary", "demo", "--format", "json", "--rpp-gold-field", "relation_pattern").stdout
    )["rpp"]
    assert forced["all"]["samples"] < auto["all"]["samples"] == 6
    run("tasks", "summary", "demo", "--rpp-gold-field", "nope", code=2)


def test_show_prints_the_exact_request() -> None:
    sample = load_samples("demo")[0]
    inst = TASKS["stp"].build(sample, TaskConfig(mode="audio"))[1]
    args = (
        "tasks",
        "show",
        "demo",
        "--task",
        "stp",
        "--row",
        f"{sample.sample_id}:{inst.row_index}",
        "--mode",
    )
    out = run(*args, "audio").stdout
    request = TASKS["stp"].render([inst], TaskConfig(mode="audio"))
    assert out.startswith(f'# {inst.id} | gold "{inst.gold}"')
    assert (
        f"--- system ---\n{request.messages[0]['content']}\n--- user ---\n{request.messages[1]['content']}"
        in out
    )
    shown = json.loads(run(*args, "audio", "--json").stdout)
    assert shown["messages"] == list(request.messages) and shown["gold"] == inst.gold


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--task", "xyz", "--row", "a:1"], "unknown task 'xyz'"),
        (["--task", "er", "--row", "12"], "is not of the form SAMPLE:ROW"),
        (["--task", "er", "--row", "nobody/here:3"], "no sample 'nobody/here'"),
        (
            ["--task", "er", "--row", "demo_couple/nadia_and_tom_s01:1"],
            "has no er instance at row 1 (rows with one:",
        ),
        (
            ["--task", "er", "--row", "demo_couple/nadia_and_tom_s01:15", "--mode", "smell"],
            "unknown mode 'smell'",
        ),
        (
            ["--task", "er", "--row", "demo_couple/nadia_and_tom_s01:15", "--context-size", "-3"],
            "context size -3",
        ),
    ],
)
def test_show_reports_user_mistakes_in_one_line(args: list[str], message: str) -> None:
    result = run("tasks", "show", "demo", *args, code=2)
    assert message in result.stderr and "Traceback" not in result.output


def test_export_writes_one_line_per_instance(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "er.jsonl"
    result = run("tasks", "export", "demo", "--task", "er", "--mode", "visual", "--context-size", "-1",
                 "--out", str(out))  # fmt: skip
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    cfg = TaskConfig(mode="visual", context_size=-1)
    instances = [i for s in load_samples("demo") for i in TASKS["er"].build(s, cfg)]
    assert f"wrote {len(instances)} er instances from 6 samples" in result.stderr
    assert [line["instance_id"] for line in lines] == [i.id for i in instances]
    for line, inst in zip(lines, instances, strict=True):
        assert {"instance_id", "task", "sample_id", "row_index", "scenario", "gold", "messages"} <= set(line)
        assert (line["task"], line["sample_id"], line["row_index"]) == ("er", inst.sample_id, inst.row_index)
        assert line["gold"] == inst.gold and line["mode"] == "visual" and line["context_size"] == -1
        assert line["messages"] == list(TASKS["er"].render([inst], cfg).messages)
    assert not (tmp_path / "sub" / "er.jsonl.partial").exists()


def test_export_reports_an_unwritable_path(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run("tasks", "export", "demo", "--task", "itp", "--out", str(blocker / "x.jsonl"), code=2)
    assert "cannot write" in result.stderr


def test_lm_eval_path_prints_the_task_files_shipped_in_the_package() -> None:
    printed = Path(run("tasks", "lm-eval-path").stdout.strip())
    assert printed.is_dir() and printed.name == "lm_eval_tasks"
    assert printed.parent == Path(__file__).resolve().parents[2] / "src" / "rescue_bench" / "adapters" or (
        "site-packages" in printed.parts  # a non-editable install
    )
    tasks = sorted(p.name for p in (printed / "rescue_bench").iterdir() if p.suffix in (".yaml", ".py"))
    assert tasks == ["itp.yaml", "rpp.yaml", "ssp.yaml", "stp.yaml", "utils.py"]
