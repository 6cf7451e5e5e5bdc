"""Semantic checks of a loaded sample (warnings). Filled in by the data-validation work."""

from __future__ import annotations

from rescue_bench.data.problems import Problem
from rescue_bench.data.schema import Sample


def check_sample(sample: Sample, *, file: str | None, line: int | None) -> list[Problem]:
    """Problems in a structurally valid sample: labels, times, evidence rows, targets, intensities, mojibake."""
    return []
