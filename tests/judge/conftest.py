"""A small ER/VP run directory made by the test itself, and a scriptable fake judge."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rescue_bench.records import Reply, Request, Usage

CANDIDATE = {"provider": "openai", "model": "cand-model-x", "base_url": "https://api.example.test/v1"}


def er_record(
    sample: str,
    row: int,
    gold: str,
    pred: str | None,
    *,
    scenario: str = "couple",
    gold_int: int = 6,
    pred_int: int | None = 5,
) -> dict[str, Any]:
    valid = pred is not None
    s_int = max(1, 5 - abs(pred_int - gold_int)) if valid and pred_int is not None else 1
    return {
        "instance_id": f"{sample}::er::{row}",
        "task": "er",
        "sample_id": sample,
        "scenario": scenario,
        "row_index": row,
        "gold": {"emotion": gold, "intensity": gold_int},
        "valid": valid,
        "prediction": {"emotion": pred, "intensity": pred_int} if valid else None,
        "problems": [] if valid else ["parse_failure: reply is not JSON"],
        "meta": {"speaker": "Alan", "position": 0.5},
        "scores": {"s_int": float(s_int)},
    }


def vp_record(
    sample: str,
    row: int,
    gold: list[tuple[str, str]],
    pred: list[tuple[str, str]] | None,
    *,
    scenario: str = "couple",
) -> dict[str, Any]:
    valid = pred is not None
    return {
        "instance_id": f"{sample}::vp::{row}",
        "task": "vp",
        "sample_id": sample,
        "scenario": scenario,
        "row_index": row,
        "gold": [{"source": "Alan", "target": t, "viewpoint": v, "attitude": "negative"} for t, v in gold],
        "valid": valid,
        "prediction": [{"source": "Alan", "target": t, "viewpoint": v} for t, v in pred] if valid else None,
        "problems": [] if valid else ["missing: no answer for c2"],
        "meta": {"speaker": "Alan", "position": 0.7},
        "scores": {},
    }


def write_run(root: Path, records: list[dict[str, Any]], model: dict[str, Any] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    run = {"format": 1, "status": "finished", "config": {"tasks": ["er", "vp"]}, "model": model or CANDIDATE}
    (root / "run.json").write_text(json.dumps(run))
    (root / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (root / "requests.jsonl").write_text(json.dumps({"request_key": "k", "task": "er"}) + "\n")
    return root


@pytest.fixture
def judge_run_dir(tmp_path: Path) -> Path:
    records = [
        er_record("cpl/s1", 4, "feels hurt", "feels hurt"),
        er_record("cpl/s1", 6, "feels ashamed and cornered", "feels angry"),
        er_record("cpl/s1", 9, "feels dismissed", None),
        er_record("fam/s2", 3, "feels scared", "feels afraid", scenario="family", pred_int=9),
        vp_record("cpl/s1", 5, [("Beth", "she never listens")], [("Beth", "she never listens")]),
        vp_record(
            "cpl/s1", 8, [("Beth", "she is cold"), ("Therapist", "he takes her side")], [("Beth", "x")]
        ),
        vp_record("fam/s2", 4, [("Mom", "she is controlling")], None, scenario="family"),
    ]
    return write_run(tmp_path / "run", records)


@dataclass
class FakeJudge:
    """Grades by exact text match (5 / 2 for ER; 2+4 / 1+1 for VP), with per-gold-text scripted faults.

    ``faults`` maps a gold text (ER emotion or first VP viewpoint) to what to do on attempt 1, 2, ...:
    ``"ok"``, ``"out_of_range"``, ``"missing"``, ``"garbage"`` (whole reply), ``"fail"`` (request error).
    """

    faults: dict[str, list[str]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)
    usage: Usage = field(default_factory=lambda: Usage(100, 20))

    async def __call__(self, request: Request) -> Reply:
        self.requests.append(request)
        user = request.messages[1]["content"]
        found = re.match(r"Checkpoints:\n(.*?)(\n\nA previous answer|\Z)", user, re.S)
        assert found is not None
        checkpoints = json.loads(found.group(1))
        graded = []
        for cid, view in checkpoints.items():
            key = view.get("gold_emotion") or (view.get("gold_viewpoints") or [{}])[0].get("viewpoint", "")
            attempt = self.seen.get(key, 0) + 1
            self.seen[key] = attempt
            plan = self.faults.get(key, [])
            action = plan[attempt - 1] if attempt <= len(plan) else "ok"
            if action == "garbage":
                return Reply(text="I would rate these highly overall.", usage=self.usage)
            if action == "fail":
                return Reply.failure("HTTP 500 after 5 attempts")
            if action == "missing":
                continue
            graded.append(self._grade(request.task, cid, view, action == "out_of_range"))
        return Reply(text=json.dumps({"graded": graded}), usage=self.usage)

    @staticmethod
    def _grade(task: str, cid: str, view: dict[str, Any], bad: bool) -> dict[str, Any]:
        if task == "er_judge":
            match = view["gold_emotion"] == view["predicted_emotion"]
            return {
                "id": cid,
                "emotion_score": 9 if bad else (5 if match else 2),
                "verdict": "pass",
                "notes": "",
            }
        gold = {(g["target"], g["viewpoint"]) for g in view["gold_viewpoints"]}
        pred = {(p["target"], p["viewpoint"]) for p in view["predicted_viewpoints"]}
        pairing, viewpoint = (2, 4) if gold == pred else (1, 1)
        return {
            "id": cid,
            "source_target_score": 5 if bad else pairing,
            "viewpoint_score": viewpoint,
            "viewpoint_total_score": 6,
            "verdict": "pass",
            "notes": "",
        }


@pytest.fixture
def fake_judge() -> Callable[..., FakeJudge]:
    return FakeJudge
