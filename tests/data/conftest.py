"""Small project-made samples for the data tests (no text from the real dataset)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest


def row(index: int, speaker: str, **fields: Any) -> dict[str, Any]:
    """A release-format row with times 10 s apart and a plain line of text."""
    return {
        "row_index": index,
        "start_time": 10.0 * (index - 1),
        "end_time": 10.0 * (index - 1) + 8.0,
        "primary_speaker": speaker,
        "target": ["Therapist"] if speaker != "Therapist" else ["Ann"],
        "dialogue_cleaned": f"line {index}",
        **fields,
    }


def couple_sample(sample_id: str = "ann_and_bo/001", **extra: Any) -> dict[str, Any]:
    """A small, valid couple sample: Ann, Bo and the therapist, with relation labels on therapist rows."""
    rows = [
        row(1, "Ann", utterance_type="accusation", internal_emotion=[{"person": "Ann", "intensity": 7}]),
        row(2, "Bo", utterance_type="withdrawal"),
        row(
            3,
            "Therapist",
            relation_cycle_state="pursue_withdraw",
            relation_cycle_evidence_rows=[0, 1, 2],
            support_strategy=[{"provider": "Therapist", "target": ["Ann"], "strategy_type": "evoke"}],
        ),
        row(4, "Ann", utterance_type="disclosure"),
        row(
            5,
            "Therapist",
            relation_cycle_state="repair_softening",
            support_strategy=[{"provider": "Therapist", "target": ["Couple"], "strategy_type": "reframe"}],
        ),
    ]
    return {
        "sample_id": sample_id,
        "scenario": "couple",
        "participants": ["Ann", "Bo"],
        "rows": rows,
        **extra,
    }


def write_jsonl(path: Path, objects: Iterable[Any]) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objects), encoding="utf-8")
    return path


@pytest.fixture
def jsonl(tmp_path: Path) -> Callable[..., Path]:
    """Write objects as a JSONL file in a temporary directory and return its path."""

    def make(*objects: Any, name: str = "data.jsonl") -> Path:
        return write_jsonl(tmp_path / name, objects)

    return make


@pytest.fixture
def make_sample() -> Callable[..., dict[str, Any]]:
    """:func:`couple_sample` as a fixture (test modules cannot import conftest under importlib mode)."""
    return couple_sample


@pytest.fixture
def make_row() -> Callable[..., dict[str, Any]]:
    return row
