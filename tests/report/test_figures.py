"""Figures render to PNG from hand-made data, including empty corners."""

from __future__ import annotations

import io

import pytest
from matplotlib.image import imread

from rescue_bench.data.stats import Transitions
from rescue_bench.report import figures
from rescue_bench.report.analysis import Confusion


def _shape(png: bytes) -> tuple[int, ...]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return tuple(imread(io.BytesIO(png), format="png").shape)


def test_confusion_with_an_empty_row() -> None:
    c = Confusion("RPP confusion (couple)", ("a", "b"), ("a", "b", "<invalid>"), ((3, 1, 0), (0, 0, 0)))
    height, width, _ = _shape(figures.confusion_png(c))
    assert width > 300 and height > 200


def test_position_curve_skips_empty_bins_and_handles_no_series() -> None:
    bins = [
        {"lo": i / 10, "hi": (i + 1) / 10, "n": i % 2, "accuracy": 0.5, "se": 0.1, "gold": {}}
        for i in range(10)
    ]
    assert _shape(figures.position_accuracy_png({"run": bins}))[1] > 300
    assert _shape(figures.position_accuracy_png({}))[1] > 300


def test_gold_by_bin_and_transitions() -> None:
    bins = [{"lo": i / 10, "hi": (i + 1) / 10, "n": 2, "gold": {"x": 1, "y": 1}} for i in range(10)]
    assert _shape(figures.gold_by_bin_png(bins, "t"))[1] > 300
    t = Transitions(("x", "y", "z"), ((0, 2, 1), (1, 0, 0), (0, 0, 0)))
    assert _shape(figures.transitions_png(t, "Gold transitions"))[1] > 300


def test_names_from_outside_are_drawn_as_written(recwarn: pytest.WarningsRecorder) -> None:
    # A run's name is the user's and a model's name the server's: a control character has no glyph
    # (matplotlib warns and draws a box) and ``$...$`` would be parsed as mathtext, which fails on bad TeX.
    hostile = "gpt$\\frac{$\x1b]0;pwned\x07"
    bins = [{"lo": i / 10, "hi": (i + 1) / 10, "n": 1, "accuracy": 0.5, "se": 0.1} for i in range(10)]
    assert _shape(figures.position_accuracy_png({hostile: bins}))[1] > 300
    c = Confusion(f"RPP confusion ({hostile})", ("a",), ("a",), ((1,),))
    assert _shape(figures.confusion_png(c))[1] > 200
    assert _shape(figures.profile_png({hostile: {"er": 50.0}}, {"er": "local cues"}))[1] > 300
    assert not [w for w in recwarn if "Glyph" in str(w.message)]
