"""`rescue-bench run --perturb X` for every perturbation, then `compare BASE X` and `report BASE X...`, all
through the real CLI with the random baseline on the demo data. The robustness table in every report format
is checked against flip counts and accuracies worked out here from the predictions.jsonl files."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.report.conftest import make_demo_run
from typer.testing import CliRunner

from rescue_bench.cli.main import app

pytestmark = pytest.mark.slow

PERTURBATIONS = ("label-order", "name-swap", "anonymize", "shuffle-window", "context:1", "no-cues")
TOP1 = ("itp", "rpp", "stp", "ssp")


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def perturbed_run(out: Path, perturbation: str, model: str = "baseline/random", *extra: str) -> Path:
    result = invoke(
        "run",
        "--model",
        model,
        "--data",
        "demo",
        "--seed",
        "5",
        "--perturb",
        perturbation,
        "--out",
        str(out),
        "--no-cache",
        "--quiet",
        "--no-bertscore",
        *extra,
    )
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("robust")
    made = {"base": make_demo_run(root / "base")}
    for name in PERTURBATIONS:
        made[name] = perturbed_run(root / name.replace(":", "_"), name)
    return made


def lines(run: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for line in (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        out[record["instance_id"]] = record
    return out


def answer(record: dict[str, Any]) -> str:
    """Top-1 answer, renamed names mapped back word by word (written out here, not the package's mapper)."""
    value = record["prediction"]
    if not record["valid"] or value in (None, []):
        return "<invalid>"
    top = str(value[0] if isinstance(value, list) else value)
    names = ((record.get("meta") or {}).get("perturbation") or {}).get("names") or {}
    return names.get(top, top)


def flipped(base: Path, variant: Path, task: str) -> tuple[int, int]:
    a, b = lines(base), lines(variant)
    shared = [i for i in a if i in b and a[i]["task"] == task]
    return sum(answer(a[i]) != answer(b[i]) for i in shared), len(shared)


def test_compare_pairs_every_perturbation(runs: dict[str, Path]) -> None:
    for name in PERTURBATIONS:
        result = invoke("compare", str(runs["base"]), str(runs[name]), "--resamples", "50")
        assert result.exit_code == 0, (name, result.output)
        assert "RPP" in result.output and "McNemar" in result.output


def test_report_formats_hold_the_robustness_table(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "report"
    args = [str(runs["base"]), *(str(runs[n]) for n in PERTURBATIONS)]
    result = invoke("report", *args, "--out", str(out))
    assert result.exit_code == 0, result.output
    md = (out / "report.md").read_text(encoding="utf-8")
    section = md.split("## Robustness to perturbations", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    table = {(r[0].strip("| "), r[1]): r for r in rows[1:]}
    for name in PERTURBATIONS:
        for task in TOP1:
            moved, shared = flipped(runs["base"], runs[name], task)
            row = table[(task.upper(), name)]
            assert int(row[2]) == shared
            assert float(row[7]) == pytest.approx(100 * moved / shared, abs=0.05), (name, task)
    # the random baseline picks by candidate position: only a reordered label list moves its answers
    assert all(flipped(runs["base"], runs[n], "stp")[0] == 0 for n in ("name-swap", "anonymize", "no-cues"))
    assert flipped(runs["base"], runs["label-order"], "rpp")[0] > 0
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="robustness"' in html and "label-order" in html
    tex = (out / "table.tex").read_text(encoding="utf-8")
    assert r"\caption{Robustness to perturbations}" in tex and "name-swap" in tex
    with (out / "results.csv").open(encoding="utf-8") as handle:
        long = [r for r in csv.DictReader(handle) if r["source"].startswith("perturbation: ")]
    share = {(r["source"], r["task"]): float(r["value"]) for r in long if r["metric"] == "flipped share"}
    moved, shared = flipped(runs["base"], runs["label-order"], "ssp")
    assert share[("perturbation: label-order", "ssp")] == pytest.approx(moved / shared)
    from openpyxl import load_workbook

    book = load_workbook(out / "results.xlsx", read_only=True)
    assert book.sheetnames[1] == "robustness"
    sheet = list(book["robustness"].iter_rows(values_only=True))
    assert sheet[0][:2] == ("Task", "Perturbation") and len(sheet) >= 1 + 5 * len(PERTURBATIONS)
    book.close()


def test_accuracy_change_is_computed_on_shared_instances(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "r"
    assert invoke("report", str(runs["base"]), str(runs["label-order"]), "--out", str(out)).exit_code == 0
    md = (out / "report.md").read_text(encoding="utf-8")
    row = next(line for line in md.splitlines() if line.startswith("| RPP | label-order |"))
    cells = row.split(" | ")
    a, b = lines(runs["base"]), lines(runs["label-order"])
    rpp = [i for i in a if a[i]["task"] == "rpp"]
    base_acc = sum(answer(a[i]) == a[i]["gold"] for i in rpp) / len(rpp)
    pert_acc = sum(answer(b[i]) == b[i]["gold"] for i in rpp) / len(rpp)
    assert float(cells[4]) == pytest.approx(100 * base_acc, abs=0.005)
    assert float(cells[5]) == pytest.approx(100 * pert_acc, abs=0.005)
    change, lo, hi = map(float, re.findall(r"-?\d+\.\d+", cells[6]))
    assert change == pytest.approx(100 * (pert_acc - base_acc), abs=0.01) and lo <= change <= hi


def test_runs_that_do_not_share_the_base_are_refused(runs: dict[str, Path], tmp_path: Path) -> None:
    other_model = perturbed_run(tmp_path / "majority", "name-swap", "baseline/majority")
    fewer = perturbed_run(tmp_path / "fewer", "name-swap", "baseline/random", "--limit-samples", "2")
    for variant, what in ((other_model, "model 'baseline/random' vs 'baseline/majority'"), (fewer, "sample")):
        out = tmp_path / f"out-{variant.name}"
        result = invoke("report", str(runs["base"]), str(variant), "--out", str(out))
        assert result.exit_code != 0
        message = result.output.strip()
        assert len(message.splitlines()) == 1 and what in message and str(variant) in message
        assert "Traceback" not in message and not out.exists()


def test_scores_json_holds_the_task_declared_analyses(runs: dict[str, Path]) -> None:
    from rescue_bench.tasks import task_infos

    scores = json.loads((runs["base"] / "scores.json").read_text(encoding="utf-8"))
    declared = {f"{i.name}_{spec.key}" for i in task_infos() for spec in i.analyses}
    assert set(scores["_relational"]) - {"_meta"} == declared
    # the base run was judged after the run: the ER bands were computed again with the judge's scores
    er = scores["_relational"]["er_intensity"]
    assert "s_emo" in er["metrics"] and all("s_emo" in g["values"] for g in er["groups"])
    er_lines = [r for r in lines(runs["base"]).values() if r["task"] == "er"]
    assert sum(g["n"] for g in er["groups"]) == len(er_lines)
