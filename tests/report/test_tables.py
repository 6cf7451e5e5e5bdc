"""Tables in the paper's layouts, from hand-made run data."""

from __future__ import annotations

from pathlib import Path
from statistics import fmean

import pytest

from rescue_bench.report import tables
from rescue_bench.report.paper import TABLE5, published_rows
from rescue_bench.rundir import RunData

SCORES = {
    "itp": {
        "all": {
            "n": 10,
            "precision": 0.5,
            "recall": 0.25,
            "f1": 1 / 3,
            "valid": 9,
            "parse_failures": 1,
            "invalid_labels": 0,
            "ci": {"precision": [0.4, 0.6]},
        }
    },
    "er": {
        "all": {
            "n": 4,
            "llm": None,
            "bertscore_f1": 0.81,
            "valid": 3,
            "parse_failures": 1,
            "invalid_labels": 0,
            "n_unscored": 2,
            "ci": {"bertscore_f1": [0.8, 0.82]},
        }
    },
}


def sample_run(name: str = "openai/x", path: str = "r1") -> RunData:
    run = {
        "model": {"provider": name.split("/")[0], "model": name.split("/")[1]},
        "counts": {"itp": {"requests": 3, "tokens": {"prompt_tokens": 100, "completion_tokens": 7}}},
        "judge_counts": {"openai/j": {"requests": 2, "usage": {"prompt_tokens": 50, "completion_tokens": 5}}},
    }
    return RunData.of(Path(path), run, [], scores=SCORES)


def test_published_rows_match_the_paper_averages() -> None:
    """A transcription check: column means equal the averages quoted in the paper's text."""
    columns = list(zip(*(values for _, values in TABLE5), strict=True))
    means = [round(fmean(c), 2) for c in columns]
    assert means[2] == 82.62 and means[3] == 40.45 and means[4:8] == [64.34, 78.35, 31.88, 44.96]
    assert round(fmean(columns[8]), 2) == 4.05 and round(fmean(columns[10]), 2) == 3.58
    assert fmean(columns[11]) == pytest.approx(0.8611, abs=6e-5)  # 0.86105, quoted as 0.8611
    assert published_rows()[0][1][("rpp", "accuracy")] == pytest.approx(0.3827)


def test_leaderboard_cells_and_published_marking() -> None:
    board = tables.leaderboard([sample_run()], with_paper=True)
    assert board.columns[:7] == ("Model", "Source", "Status", "Valid (%)", "ITP Prec.", "ITP Rec.", "ITP F1")
    first = board.rows[0]
    assert first[0] == "openai/x" and first[4].text() == "50.00 [40.00, 60.00]"
    assert first[6].text() == "33.33" and first[4 + 8].text() == "–"  # ER LLM not judged
    assert first[4 + 9].text() == "0.8100 [0.8000, 0.8200]"
    assert board.rows[-1][0] == "GPT-4o (published)" and board.rows[-1][4].text() == "86.67"
    assert board.rows[-1][2:4] == ("published", None)
    assert "published" in board.note
    assert all(not str(r[0]).endswith("(published)") for r in tables.leaderboard([sample_run()]).rows)


def test_duplicate_models_get_directory_names() -> None:
    names = tables.display_names([sample_run(path="a"), sample_run(path="b"), sample_run("vllm/y", "c")])
    assert names == ["openai/x (a)", "openai/x (b)", "vllm/y"]


def test_published_bert_is_marked_not_comparable_beside_another_backbone() -> None:
    """report --with-paper: the paper's BERT values stand as numbers beside runs scored as the reference
    scripts score (distilbert-base-uncased L5, no idf), and are marked beside the bundled MiniLM."""
    from tests.report.test_averages import DISTIL, MINILM, run

    from rescue_bench.report.tables import LEADER_KEYS, PAPER_COLUMNS, leaderboard

    bert = [i for i, (_, metric, *_) in enumerate(PAPER_COLUMNS) if metric == "bertscore_f1"]
    for backbone, marked in ((DISTIL, False), (MINILM, True)):
        table = leaderboard([run("openai/a", 0.5, 4.0, bert=backbone)], with_paper=True)
        published = [row for row in table.rows if str(row[0]).endswith("(published)")]
        shown = [row[len(LEADER_KEYS) + i] for row in published for i in bert]
        assert len(published) == 10 and shown
        assert all(isinstance(v, str) and v.endswith("(not comparable)") for v in shown) is marked
        assert ("not comparable" in table.note) is marked
        assert f"BERTScore F1 with {backbone['model']} L{backbone['layer']}" in table.note
