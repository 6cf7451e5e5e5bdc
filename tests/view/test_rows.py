"""The instance list's rows: bounded whatever a run directory holds (issue 42, W15)."""

from __future__ import annotations

from rescue_bench.rundir import PredictionLine
from rescue_bench.view.rows import LIST_TEXT_CAP, make_row


def test_a_huge_reply_makes_a_small_list_row() -> None:
    huge = "x" * 5_000_000  # a reply of megabytes, written before the reply cap, or by hand
    record = PredictionLine(
        instance_id="s1::er::1", task="er", sample_id="s1", scenario="couple", gold={"emotion": huge},
        valid=False, prediction={"emotion": huge}, problems=(f"parse_failure: {huge}",),
    )  # fmt: skip
    row = make_row(0, record, [], huge, "")
    for text in (row.gold, row.predicted, *row.problems):
        assert len(text) < LIST_TEXT_CAP + 40 and text.endswith("more characters)")
