"""Task test fixtures: small fictional samples made here, the demo data and the shared real samples."""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from rescue_bench.data.load import build_sample, load_samples
from rescue_bench.data.schema import Sample

RowSpec = str | tuple[str, dict[str, Any]]
"""A speaker name, or ``(speaker, extra fields)``."""


def _row(index: int, spec: RowSpec) -> dict[str, Any]:
    speaker, extra = (spec, {}) if isinstance(spec, str) else spec
    return {
        "row_index": index,
        "start_time": 5.0 * (index - 1),
        "end_time": 5.0 * (index - 1) + 4.0,
        "primary_speaker": speaker,
        "target": ["Therapist"] if speaker != "Therapist" else [],
        "dialogue_cleaned": f"words of row {index} spoken here",
        **extra,
    }


def _sample(
    specs: list[RowSpec],
    *,
    scenario: str = "couple",
    participants: list[str] | None = None,
    sample_id: str = "test/sample1",
) -> Sample:
    raw = {"sample_id": sample_id, "scenario": scenario, "rows": [_row(i, s) for i, s in enumerate(specs, 1)]}
    if participants is not None:
        raw["participants"] = participants
    sample, problems = build_sample(raw, fallback_id=sample_id, file=None, line=None)
    assert sample is not None, problems
    return sample


@pytest.fixture
def make_sample() -> Callable[..., Sample]:
    """Build a fictional sample from row specs: ``make_sample(["Ana", ("Therapist", {...}), ...])``."""
    return _sample


@pytest.fixture
def demo_samples() -> list[Sample]:
    """The project's demo data (skipped, with the reason, while the file does not exist)."""
    demo = resources.files("rescue_bench.data.demo").joinpath("demo.jsonl")
    if not demo.is_file():
        pytest.skip("demo data (src/rescue_bench/data/demo/demo.jsonl) does not exist yet")
    return load_samples("demo")


@pytest.fixture
def real_samples(real_subset: Path) -> list[Sample]:
    return load_samples(real_subset)


@pytest.fixture
def expected(expected_instances: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(expected_instances.read_text(encoding="utf-8"))
    return data
