"""Dataset statistics: Table 3, distributions and the Figure-3 transition matrix."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from rescue_bench.data import stats_output
from rescue_bench.data.load import load_samples
from rescue_bench.data.stats import SCOPES, DatasetStats, compute_stats, relation_gold, relation_gold_field

MakeSample = Callable[..., dict[str, Any]]
Jsonl = Callable[..., Path]


@pytest.fixture
def subset_stats(real_subset: Path) -> DatasetStats:
    return compute_stats(load_samples(real_subset))


def test_real_subset_table3(subset_stats: DatasetStats) -> None:
    couple, family = subset_stats.scopes["couple"].table, subset_stats.scopes["family"].table
    assert (couple.samples, couple.turns) == (3, 69)
    assert couple.duration_min == pytest.approx(7.775, abs=5e-4)
    assert couple.therapist_share == pytest.approx(0.4058, abs=5e-5)
    assert couple.avg_speakers == 3.0
    assert (family.samples, family.turns) == (1, 112)
    assert family.duration_sec == pytest.approx(1327.0)
    assert family.duration_min == pytest.approx(22.12, abs=5e-3)
    assert family.therapist_share == pytest.approx(0.5357, abs=5e-5)
    assert family.avg_speakers == 4.0
    everything = subset_stats.scopes["all"].table
    assert (everything.samples, everything.turns) == (4, 181)
    assert everything.therapist_turns == couple.therapist_turns + family.therapist_turns


def test_real_subset_transitions(subset_stats: DatasetStats) -> None:
    couple = subset_stats.scopes["couple"].transitions.pairs()
    assert couple == {
        "pursue_withdraw->mixed_transition": 1,
        "attack_attack->withdraw_withdraw": 1,
        "repair_softening->constructive_alignment": 1,
        "mixed_transition->repair_softening": 1,
    }
    family = subset_stats.scopes["family"].transitions
    assert family.total == 20
    assert family.pairs()["cooperative_family_alliance->boundary_hierarchy_strain"] == 2
    assert family.pairs()["cross_generational_coalition->cooperative_family_alliance"] == 2
    assert subset_stats.scopes["all"].transitions.total == 24


def test_real_subset_uses_relation_cycle_state_as_gold(real_subset: Path) -> None:
    assert {relation_gold_field(s) for s in load_samples(real_subset)} == {"relation_cycle_state"}


def test_gold_falls_back_to_relation_pattern_only_without_any_cycle_state(
    make_sample: MakeSample, jsonl: Jsonl
) -> None:
    sample = make_sample()
    for row in sample["rows"]:
        row.pop("relation_cycle_state", None)
    sample["rows"][0]["relation_pattern"] = "attack_attack"
    sample["rows"][1]["relation_pattern"] = "withdraw_withdraw"
    [loaded] = load_samples(jsonl(sample))
    assert relation_gold_field(loaded) == "relation_pattern"
    assert relation_gold(loaded)[:3] == ("attack_attack", "withdraw_withdraw", "")
    transitions = compute_stats([loaded]).scopes["couple"].transitions
    assert transitions.pairs() == {"attack_attack->withdraw_withdraw": 1}


def test_transitions_skip_empty_self_and_out_of_taxonomy_labels(
    make_sample: MakeSample, jsonl: Jsonl
) -> None:
    sample = make_sample()
    labels = ["pursue_withdraw", "", "pursue_withdraw", "escalation_conflict", "repair_softening"]
    for row, label in zip(sample["rows"], labels, strict=True):
        row["relation_cycle_state"] = label
    other = make_sample(sample_id="second")  # transitions never cross samples
    stats = compute_stats(load_samples(jsonl(sample, other)))
    matrix = stats.scopes["couple"].transitions
    assert matrix.pairs() == {"pursue_withdraw->repair_softening": 2}
    shares = dict(zip(matrix.labels, matrix.shares, strict=True))
    assert shares["pursue_withdraw"][matrix.labels.index("repair_softening")] == 1.0
    assert sum(shares["attack_attack"]) == 0.0


def test_table3_definitions_and_averages(make_sample: MakeSample, jsonl: Jsonl) -> None:
    short = make_sample(sample_id="short")
    short["rows"] = short["rows"][:2]  # two client rows, 18 s
    stats = compute_stats(load_samples(jsonl(make_sample(), short)))
    table = stats.scopes["couple"].table
    assert (table.samples, table.turns, table.therapist_turns) == (2, 7, 2)
    assert table.duration_sec == pytest.approx(48.0 + 18.0)
    assert table.avg_turns == 3.5
    assert table.avg_speakers == pytest.approx((3 + 2) / 2)
    assert stats.scopes["family"].table.to_json()["therapist_share"] is None


def test_distributions_list_taxonomy_labels_then_others(make_sample: MakeSample, jsonl: Jsonl) -> None:
    sample = make_sample()
    sample["rows"][1]["utterance_type"] = "mumble"
    sample["rows"][4]["support_strategy"].append({"strategy_type": "track", "target": ["Ann", "Bo"]})
    dists = compute_stats(load_samples(jsonl(sample))).scopes["couple"].distributions
    assert list(dists["utterance_types"])[-1] == "mumble"
    assert dists["utterance_types"]["accusation"] == 1
    assert dists["strategies"] == {
        **dict.fromkeys(dists["strategies"], 0),
        "evoke": 1,
        "reframe": 1,
        "track": 1,
    }
    assert dists["support_targets"] == {"individual": 1, "group": 1, "multi_person": 1, "none": 0}
    assert dists["relation_patterns"]["pursue_withdraw"] == 1


def test_json_shape(subset_stats: DatasetStats) -> None:
    payload = json.loads(json.dumps(subset_stats.to_json()))
    assert list(payload) == list(SCOPES)
    required = {
        "samples",
        "turns",
        "duration_min",
        "avg_duration_min",
        "avg_turns",
        "avg_speakers",
        "therapist_share",
        "distributions",
        "transitions",
    }
    assert all(required <= set(payload[scope]) for scope in SCOPES)
    assert 0 <= payload["all"]["therapist_share"] <= 1


def test_renderers_show_the_figures_and_definitions(subset_stats: DatasetStats) -> None:
    markdown = stats_output.render_markdown(subset_stats)
    assert "| Therapist turn share | 40.58% | 53.57% | 48.62% |" in markdown
    assert "| Avg. speakers / sample | 3.00 | 4.00 | 3.25 |" in markdown
    assert "last row's end_time minus the first row's start_time" in markdown
    rows = list(csv.DictReader(io.StringIO(stats_output.render_csv(subset_stats))))
    assert [r["scope"] for r in rows] == list(SCOPES)
    assert float(rows[1]["duration_sec"]) == 1327.0
    buffer = io.StringIO()
    Console(file=buffer, width=200).print(stats_output.render_rich(subset_stats))
    text = buffer.getvalue()
    assert "22.12" in text and "53.57%" in text and "20 in total" in text


def test_write_outputs(subset_stats: DatasetStats, tmp_path: Path) -> None:
    written = stats_output.write_outputs(subset_stats, tmp_path / "out")
    names = sorted(p.name for p in written)
    assert names == sorted(
        [
            "stats.json",
            "table3.csv",
            "distributions.csv",
            "transitions_couple.csv",
            "transitions_couple.png",
            "transitions_family.csv",
            "transitions_family.png",
        ]
    )
    for png in (tmp_path / "out").glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with (tmp_path / "out" / "transitions_family.csv").open() as handle:
        cells = list(csv.DictReader(handle))
    assert len(cells) == 8 * 7  # every off-diagonal cell
    assert sum(int(c["count"]) for c in cells) == 20
    by_pair = {(c["from"], c["to"]): c for c in cells}
    alliance = [c for c in cells if c["from"] == "cooperative_family_alliance"]
    assert sum(float(c["row_share"]) for c in alliance) == pytest.approx(1.0)
    assert int(by_pair[("cooperative_family_alliance", "boundary_hierarchy_strain")]["count"]) == 2
    assert json.loads((tmp_path / "out" / "stats.json").read_text()) == subset_stats.to_json()


def test_write_outputs_skips_a_scenario_without_samples(
    make_sample: MakeSample, jsonl: Jsonl, tmp_path: Path
) -> None:
    stats = compute_stats(load_samples(jsonl(make_sample())))
    names = {p.name for p in stats_output.write_outputs(stats, tmp_path)}
    assert "transitions_couple.png" in names and "transitions_family.png" not in names
