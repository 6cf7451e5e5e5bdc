"""Human ratings against judge scores (paper Table 12 layout)."""

from __future__ import annotations

import csv
import random
from pathlib import Path
from typing import Any

import pytest

from rescue_bench.errors import ConfigError, DataError
from rescue_bench.judge.calibrate import calibrate, read_ratings, table12_rows
from rescue_bench.rundir import JudgmentLine

# Paper Table 12: annotator, task, exact, diff=1, diff=2 (50 items each)
TABLE12 = (
    ("Annotator1", "VP", 39, 10, 1),
    ("Annotator2", "VP", 42, 8, 0),
    ("Annotator3", "ER", 38, 9, 3),
    ("Annotator4", "ER", 40, 8, 2),
)


def table12_data(rng: random.Random) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """Judgments and human ratings whose differences have exactly the paper's counts."""
    judgments: list[dict[str, Any]] = []
    ratings = [["item_id", "instance_id", "task", "annotator", "human_score"]]
    for annotator, task, *counts in TABLE12:
        diffs = [d for d, n in enumerate(counts) for _ in range(n)]
        rng.shuffle(diffs)
        for k, diff in enumerate(diffs):
            iid = f"s{k % 7}::{task.lower()}::{annotator}-{k}"
            if task == "ER":
                judge = rng.randint(1, 5)
                scores = {"s_emo": float(judge)}
            else:  # VP totals 0, 3 and 6 map to 1, 3 and 5 on the 1-5 scale
                total = rng.choice((0, 3, 6))
                judge = 1 + 4 * total // 6
                scores = {"pairing": 0.0, "viewpoint": float(total), "total": float(total)}
            human = judge + diff if judge + diff <= 5 else judge - diff
            judgments.append(
                {
                    "instance_id": iid,
                    "task": task.lower(),
                    "judge": "openai/j",
                    "valid": True,
                    "scores": scores,
                }
            )
            ratings.append([f"item{len(ratings)}", iid, task, annotator, str(human)])
    return judgments, ratings


def typed(judgments: list[dict[str, Any]]) -> list[JudgmentLine]:
    return [JudgmentLine.from_json(j) for j in judgments]


def _write(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return path


def test_reproduces_table12_from_its_counts(tmp_path: Path) -> None:
    judgments, rows = table12_data(random.Random(7))
    # an unscored verdict and a BERTScore line must not count as judge scores
    judgments.append(
        {"instance_id": "x::er::1", "task": "er", "judge": "openai/j", "valid": False, "scores": {}}
    )
    judgments.append(
        {
            "instance_id": "x::er::1",
            "task": "er",
            "judge": "bertscore",
            "valid": True,
            "scores": {"bertscore_f1": 0.9},
        }
    )
    rows.append(["extra", "x::er::1", "ER", "Annotator4", "3"])
    result = calibrate(read_ratings(_write(tmp_path / "ratings.csv", rows)), typed(judgments))
    table = {(r[0], r[1]): r for r in table12_rows(result)}
    assert table[("Annotator1", "VP")] == ("Annotator1", "VP", 50, 39, 10, 1, 0, 0, 0.24)
    assert table[("Annotator2", "VP")] == ("Annotator2", "VP", 50, 42, 8, 0, 0, 0, 0.16)
    assert table[("Annotator3", "ER")] == ("Annotator3", "ER", 50, 38, 9, 3, 0, 0, 0.3)
    assert table[("Annotator4", "ER")] == ("Annotator4", "ER", 50, 40, 8, 2, 0, 0, 0.24)
    assert table[("Total", "VP")][2:4] == (100, 81) and table[("Total", "VP")][-1] == 0.2
    assert table[("Total", "ER")][2:4] == (100, 78) and table[("Total", "ER")][-1] == 0.27
    assert table[("Total", "VP,ER")] == ("Total", "VP,ER", 200, 159, 35, 6, 0, 0, 0.235)
    assert result.matched == 200 and result.unmatched == ("x::er::1",)
    assert result.judge == "openai/j"


def test_several_judges_mean_or_one_named(tmp_path: Path) -> None:
    lines = [
        {"instance_id": "a", "task": "er", "judge": j, "valid": True, "scores": {"s_emo": s}}
        for j, s in (("x/one", 4.0), ("y/two", 2.0))
    ]
    ratings = read_ratings(
        _write(
            tmp_path / "r.csv",
            [["item_id", "instance_id", "task", "annotator", "human_score"], ["1", "a", "er", "A", "3"]],
        )
    )
    assert calibrate(ratings, typed(lines)).rows[0].exact == 1  # mean 3.0
    assert calibrate(ratings, typed(lines), judge="y/two").rows[0].mae == 1.0
    with pytest.raises(ConfigError, match="did not judge"):
        calibrate(ratings, typed(lines), judge="z/three")
    with pytest.raises(ConfigError, match="no judge verdicts"):
        calibrate(ratings, [])


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (["1", "a", "ER", "A", "6"], "r.csv:2: field 'human_score' is '6', expected an integer 1-5"),
        (["1", "a", "ER", "A", "4.5"], "r.csv:2: field 'human_score' is '4.5'"),
        (["1", "a", "RPP", "A", "4"], "r.csv:2: field 'task' is 'RPP', expected ER or VP"),
        (["1", "", "ER", "A", "4"], "r.csv:2: field 'instance_id' is empty"),
    ],
)
def test_bad_rating_rows_name_file_and_line(tmp_path: Path, row: list[str], message: str) -> None:
    path = _write(tmp_path / "r.csv", [["item_id", "instance_id", "task", "annotator", "human_score"], row])
    with pytest.raises(DataError) as info:
        read_ratings(path)
    assert message in str(info.value)


def test_missing_column_and_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="missing column"):
        read_ratings(_write(tmp_path / "r.csv", [["item_id", "instance_id", "task", "annotator"]]))
    with pytest.raises(DataError, match="does not exist"):
        read_ratings(tmp_path / "nope.csv")


def test_nothing_matching_is_an_error(tmp_path: Path) -> None:
    lines = [{"instance_id": "a", "task": "er", "judge": "x/one", "valid": True, "scores": {"s_emo": 4.0}}]
    ratings = read_ratings(
        _write(
            tmp_path / "r.csv",
            [["item_id", "instance_id", "task", "annotator", "human_score"], ["1", "zzz", "er", "A", "3"]],
        )
    )
    with pytest.raises(ConfigError, match="none of the 1 ratings"):
        calibrate(ratings, typed(lines))


def test_a_rating_counted_twice_is_refused(tmp_path: Path) -> None:
    header = ["item_id", "instance_id", "task", "annotator", "human_score"]
    rows = [header, ["1", "a", "ER", "A", "3"], ["2", "a", "ER", "B", "4"], ["3", "a", "ER", "A", "5"]]
    with pytest.raises(DataError) as info:
        read_ratings(_write(tmp_path / "r.csv", rows))
    assert str(info.value) == (
        f"{tmp_path / 'r.csv'}:4: annotator 'A' rated instance 'a' already (line 2); keep one rating per "
        "annotator and instance"
    )


def test_a_rating_whose_task_is_not_its_instances_is_refused(tmp_path: Path) -> None:
    lines = [
        {"instance_id": "a", "task": "er", "judge": "x/one", "valid": True, "scores": {"s_emo": 4.0}},
        {"instance_id": "b", "task": "vp", "judge": "x/one", "valid": True, "scores": {"total": 6.0}},
    ]
    header = ["item_id", "instance_id", "task", "annotator", "human_score"]
    path = _write(tmp_path / "r.csv", [header, ["1", "a", "ER", "A", "4"], ["2", "b", "ER", "A", "5"]])
    with pytest.raises(DataError) as info:
        calibrate(read_ratings(path), typed(lines), where=str(path))
    assert str(info.value) == f"{path}:3: field 'task' is 'ER', but instance 'b' is 'VP' in the run"


def test_a_run_on_the_integer_scale_is_calibrated_on_its_own_reading(tmp_path: Path) -> None:
    # A VP total of 4 is 3.67 linearly and 4 on the integer scale, a total of 1 is 1.67 and 2: the table
    # must compare the humans with the scores the run reported.
    lines = [
        {"instance_id": "a", "task": "vp", "judge": "x/j", "valid": True, "scores": {"total": 4.0}},
        {"instance_id": "b", "task": "vp", "judge": "x/j", "valid": True, "scores": {"total": 1.0}},
    ]
    header = ["item_id", "instance_id", "task", "annotator", "human_score"]
    ratings = read_ratings(
        _write(tmp_path / "r.csv", [header, ["1", "a", "VP", "A", "4"], ["2", "b", "VP", "A", "2"]])
    )
    linear = calibrate(ratings, typed(lines)).rows[0]
    integer = calibrate(
        ratings, typed(lines), config={"task_options": {"vp": {"judge_scale": "integer"}}}
    ).rows[0]
    assert (linear.exact, linear.mae) == (0, pytest.approx(1 / 3))  # 4 vs 3.67, 2 vs 1.67
    assert (integer.exact, integer.mae) == (2, 0.0)  # 4 vs 4, 2 vs 2
