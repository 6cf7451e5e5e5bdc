"""Tables in the paper's layouts, from hand-made run data."""

from __future__ import annotations

from pathlib import Path
from statistics import fmean

import pytest

from rescue_bench.report import configuration, tables
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


def _run(name: str = "openai/x", path: str = "r1") -> RunData:
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
    board = tables.leaderboard([_run()], with_paper=True)
    assert board.columns[:7] == ("Model", "Source", "Status", "Valid (%)", "ITP Prec.", "ITP Rec.", "ITP F1")
    first = board.rows[0]
    assert first[0] == "openai/x" and first[4].text() == "50.00 [40.00, 60.00]"
    assert first[6].text() == "33.33" and first[4 + 8].text() == "–"  # ER LLM not judged
    assert first[4 + 9].text() == "0.8100 [0.8000, 0.8200]"
    assert board.rows[-1][0] == "GPT-4o (published)" and board.rows[-1][4].text() == "86.67"
    assert board.rows[-1][2:4] == ("published", None)
    assert "published" in board.note
    assert all(not str(r[0]).endswith("(published)") for r in tables.leaderboard([_run()]).rows)


def test_failures_usage_and_config() -> None:
    fail = {r[1]: r for r in tables.failures([_run()]).rows}
    assert fail["ITP"][2:5] == (10, 9, 1) and fail["ITP"][5].text() == "10.0"
    assert fail["ER"][-1] == 2 and fail["ITP"][-1] is None
    use = tables.usage([_run()]).rows
    assert use[0][1:5] == ("ITP", 3, 100, 7) and use[1][1] == "judge openai/j" and use[1][3] == 50
    differ, shared = configuration.config([_run()])
    settings = dict(shared.rows)
    assert (
        not differ.rows and settings["model.provider"] == "openai" and "counts.itp.requests" not in settings
    )


def test_duplicate_models_get_directory_names() -> None:
    names = tables.display_names([_run(path="a"), _run(path="b"), _run("vllm/y", "c")])
    assert names == ["openai/x (a)", "openai/x (b)", "vllm/y"]


def test_cost_from_prices_when_not_recorded(tmp_path: Path) -> None:
    from functools import partial

    from rescue_bench.errors import ConfigError
    from rescue_bench.pricing import load_prices

    prices = tmp_path / "prices.json"
    prices.write_text('{"openai/x": {"input": 2.5, "output": 10}, "openai/j": {"input": 1, "output": 2}}')
    rows = tables.usage([_run()], partial(load_prices, prices)).rows
    assert rows[0][-1].value == pytest.approx((100 * 2.5 + 7 * 10) / 1e6)
    assert rows[1][-1].value == pytest.approx((50 * 1 + 5 * 2) / 1e6)
    assert tables.usage([_run()]).rows[0][-1] is None
    prices.write_text('{"openai/j": {"input": 1, "output": 2}}')
    with pytest.raises(ConfigError, match="no entry for 'openai/x'"):
        tables.usage([_run()], partial(load_prices, prices))


def test_judges_table_with_and_without_agreement() -> None:
    agreement = {"er": {"n_items": 12, "alpha_ordinal": 0.61234, "exact_agreement": 0.5, "mae": 0.75}}
    scores = {**SCORES, "_meta": {"judges": ["a/x", "b/y"], "judge_agreement": agreement}}
    run = RunData.of(Path("r"), {"model": {"name": "m/1"}}, [], scores=scores)
    (row,) = tables.judges([run]).rows
    assert row[:4] == ("m/1", "ER", "a/x, b/y", 12)
    assert (row[4].text(), row[5].text(), row[6].text()) == ("0.612", "50.0", "0.750")
    assert tables.judges([_run()]).rows == (("openai/x", "ER, VP", "none", None, None, None, None),)


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
