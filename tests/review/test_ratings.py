"""Judge-calibration ratings: sampling a run's ER/VP predictions, rating them blind, and the CSV."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from fastapi import FastAPI
from review_helpers import Client
from sqlalchemy import func, select

from rescue_bench.errors import DataError
from rescue_bench.judge.calibrate import read_ratings
from rescue_bench.review.db import RatingItem
from rescue_bench.review.ratings import CSV_COLUMNS, load_ratings, write_ratings_csv

MODEL = "secret-model-9000"


def _prediction(task: str, i: int, valid: bool = True) -> dict[str, object]:
    if task == "er":
        gold: object = {"emotion": f"gold emotion {i}", "intensity": 6}
        value: object = {"emotion": f"predicted emotion {i}", "intensity": 5}
    else:
        gold = [{"source": "Mara", "target": "Tom", "viewpoint": f"gold view {i}", "attitude": "negative"}]
        value = [{"source": "Mara", "target": "Tom", "viewpoint": f"predicted view {i}"}]
    return {
        "instance_id": f"demo/s{i}::{task}::{i}",
        "task": task,
        "sample_id": f"demo/s{i}",
        "scenario": "couple",
        "row_index": i,
        "gold": gold,
        "valid": valid,
        "prediction": value if valid else None,
        "problems": [] if valid else ["parse_failure: no JSON"],
        "meta": {"model": MODEL},
        "scores": {"s_emo": 4.0, "llm": 3.0},
    }


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / MODEL
    run.mkdir(parents=True)
    lines = [_prediction(t, i) for t in ("er", "vp") for i in range(1, 8)]
    lines += [_prediction("er", 50, valid=False), _prediction("vp", 51, valid=False)]
    lines += [
        {"instance_id": "demo/s1::itp::1", "task": "itp", "valid": True, "prediction": "yes", "gold": "no"}
    ]
    (run / "predictions.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    verdicts = [
        _verdict(str(x["instance_id"]), str(x["task"])) for x in lines if x["valid"] and x["task"] != "itp"
    ]
    (run / "judgments.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    return run


def _verdict(instance_id: str, task: str, valid: bool = True) -> dict[str, object]:
    scores = {"s_emo": 4.0} if task == "er" else {"total": 4.0}
    return {"instance_id": instance_id, "task": task, "judge": "x/judge", "valid": valid, "scores": scores}


def test_a_run_never_judged_is_refused_and_unscored_verdicts_are_not_sampled(
    app: FastAPI, run_dir: Path
) -> None:
    judgments = run_dir / "judgments.jsonl"
    kept = judgments.read_text()
    with app.state.review.sessions() as session:
        for text in (None, "", json.dumps(_verdict("demo/s1::er::1", "er", valid=False)) + "\n"):
            judgments.unlink(missing_ok=True)
            if text is not None:
                judgments.write_text(text)
            with pytest.raises(DataError) as caught:
                load_ratings(session, run_dir, n=3)
            assert str(caught.value) == (
                f"{run_dir}: no judge verdicts in judgments.jsonl: the ratings would have no judge score "
                f"to be compared with; judge the run first (`rescue-bench score {run_dir} --judge MODEL`)"
            )
        assert session.scalar(select(func.count()).select_from(RatingItem)) == 0
        judgments.write_text("".join(line + "\n" for line in kept.splitlines() if "::er::" not in line))
        load = load_ratings(session, run_dir, n=100)
        assert load.added == {"er": 0, "vp": 7} and load.invalid_skipped == 2 + 7


def test_load_samples_valid_predictions_per_task(app: FastAPI, run_dir: Path) -> None:
    with app.state.review.sessions() as session:
        first = load_ratings(session, run_dir, n=3, seed=1)
        assert first.added == {"er": 3, "vp": 3} and first.invalid_skipped == 2
        assert first.available == {"er": 7, "vp": 7}
        second = load_ratings(session, run_dir, n=100, seed=1)
        assert second.added == {"er": 4, "vp": 4} and second.already_loaded == 6  # never the same item twice
        items = list(session.scalars(select(RatingItem)))
        assert len(items) == 14 and len({i.instance_id for i in items}) == 14
        assert all(i.prediction is not None for i in items)


def test_raters_see_output_and_gold_but_no_score_or_model(app: FastAPI, ann: Client, run_dir: Path) -> None:
    with app.state.review.sessions() as session:
        load_ratings(session, run_dir, n=2, seed=0)
    first = ann.get("/ratings")
    assert first.status_code == 303
    page = ann.get(first.headers["location"]).text
    assert "Gold annotation" in page and "Model output" in page
    assert "gold " in page and "predicted " in page
    for hidden in (MODEL, "runs/", "s_emo", "4.0", "llm", "scores"):
        assert hidden not in page, hidden


def test_rating_flow_and_csv(app: FastAPI, ann: Client, ben: Client, run_dir: Path, tmp_path: Path) -> None:
    with app.state.review.sessions() as session:
        load_ratings(session, run_dir, n=1, seed=0)
    for client, score in ((ann, "4"), (ben, "2")):
        for _ in range(2):
            location = client.get("/ratings").headers["location"]
            bad = client.post(location, data={"csrf_token": client.csrf, "score": "9"})
            assert bad.headers["location"] == location  # an out-of-scale score is not stored
            client.post(location, data={"csrf_token": client.csrf, "score": score})
        assert "You have rated all 2 items" in client.get("/ratings", follow_redirects=True).text
    out = tmp_path / "ratings.csv"
    with app.state.review.sessions() as session:
        assert write_ratings_csv(session, out) == 4
        assert write_ratings_csv(session, tmp_path / "none.csv", tmp_path / "other-run") == 0
        ids = set(session.scalars(select(RatingItem.id)))
        assert session.scalar(select(func.count()).select_from(RatingItem)) == 2
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert {(r["annotator"], r["human_score"]) for r in rows} == {("ann", "4"), ("ben", "2")}
    assert {int(r["item_id"]) for r in rows} == ids
    assert {r["task"] for r in rows} == {"er", "vp"}
    assert all(r["instance_id"].startswith("demo/s") for r in rows)
    read = read_ratings(out)  # the reader of `rescue-bench judge calibrate` accepts the file
    assert sorted((r.annotator, r.score) for r in read) == [("ann", 4), ("ann", 4), ("ben", 2), ("ben", 2)]


def test_bad_predictions_file(app: FastAPI, tmp_path: Path) -> None:
    with app.state.review.sessions() as session:
        with pytest.raises(DataError, match=r"predictions\.jsonl: not found"):
            load_ratings(session, tmp_path, n=5)
        (tmp_path / "predictions.jsonl").write_text(
            '{"task": "er", "valid": true, "prediction": {}}\n{oops\n'
        )
        with pytest.raises(DataError, match=r"predictions\.jsonl:1: field 'instance_id'"):
            load_ratings(session, tmp_path, n=5)
        (tmp_path / "predictions.jsonl").write_text('{"task": "itp"}\n{oops\n')
        with pytest.raises(DataError, match=r"predictions\.jsonl:2: not valid JSON"):
            load_ratings(session, tmp_path, n=5)
