"""The synthetic generator: deterministic, schema-valid, and at the paper's scale."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from rescue_bench.data.load import load_samples
from rescue_bench.data.schema import Sample
from rescue_bench.data.stats import DatasetStats, compute_stats
from rescue_bench.data.synth import scenario_split, synthetic_samples, write_synthetic
from rescue_bench.data.validate import validate_source
from rescue_bench.taxonomy import UTTERANCE_TYPES, relation_labels, strategy_labels


@pytest.fixture(scope="module")
def paper_scale(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Sample], DatasetStats]:
    path = tmp_path_factory.mktemp("synth") / "synth.jsonl"
    write_synthetic(path, samples=191, seed=0)
    samples = load_samples(path)
    return path, samples, compute_stats(samples)


def test_same_seed_same_bytes_other_seed_other_data(tmp_path: Path) -> None:
    first = write_synthetic(tmp_path / "a.jsonl", samples=12, seed=3)
    write_synthetic(tmp_path / "b.jsonl", samples=12, seed=3)
    write_synthetic(tmp_path / "c.jsonl", samples=12, seed=4)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert (tmp_path / "a.jsonl").read_bytes() != (tmp_path / "c.jsonl").read_bytes()
    assert (first.couple, first.family) == scenario_split(12) == (11, 1)


def test_passes_the_validator_without_errors_or_warnings(
    paper_scale: tuple[Path, list[Sample], DatasetStats],
) -> None:
    report = validate_source(paper_scale[0])
    assert (report.errors, report.warnings) == ((), ())
    assert report.samples == 191


def test_table3_at_paper_scale(paper_scale: tuple[Path, list[Sample], DatasetStats]) -> None:
    scopes = paper_scale[2].scopes
    couple, family, everything = (scopes[s].table for s in ("couple", "family", "all"))
    assert (couple.samples, family.samples) == (174, 17)
    assert (couple.turns, family.turns) == (5875, 1204)  # paper Table 3, exactly
    assert everything.therapist_share == pytest.approx(0.374, abs=0.01)
    assert couple.therapist_share == pytest.approx(0.354, abs=0.01)
    assert family.therapist_share == pytest.approx(0.471, abs=0.01)
    assert couple.avg_speakers == 3.0
    assert family.avg_speakers == pytest.approx(4.06, abs=0.15)
    assert couple.avg_duration_min == pytest.approx(4.74, rel=0.1)
    assert family.avg_duration_min == pytest.approx(14.11, rel=0.1)


def _shares(counts: dict[str, int]) -> dict[str, float]:
    total = sum(counts.values())
    return {label: n / total for label, n in counts.items()}


def test_label_frequencies_close_to_paper_appendix_e2(
    paper_scale: tuple[Path, list[Sample], DatasetStats],
) -> None:
    scopes = paper_scale[2].scopes
    couple = _shares(scopes["couple"].distributions["relation_patterns"])
    assert couple["pursue_withdraw"] == pytest.approx(0.387, abs=0.04)
    assert couple["repair_softening"] == pytest.approx(0.270, abs=0.04)
    assert couple["mixed_transition"] + couple["withdraw_withdraw"] < 0.10
    family = _shares(scopes["family"].distributions["relation_patterns"])
    assert family["cooperative_family_alliance"] == pytest.approx(0.419, abs=0.05)
    assert sum(share < 0.10 for share in family.values()) == 5
    strategies = _shares(scopes["couple"].distributions["strategies"])
    top4 = sum(strategies[s] for s in ("reframe", "evoke", "track", "goal_align"))
    assert top4 == pytest.approx(0.774, abs=0.04)
    strategies = _shares(scopes["family"].distributions["strategies"])
    top5 = sum(strategies[s] for s in ("reframe", "join", "counterbalance", "track", "boundary"))
    assert top5 == pytest.approx(0.902, abs=0.04)


def test_every_dimension_is_filled(paper_scale: tuple[Path, list[Sample], DatasetStats]) -> None:
    samples = paper_scale[1]
    rows = [row for sample in samples for row in sample.rows]
    clients = [row for row in rows if row.is_client]
    therapist = [row for row in rows if row.is_therapist]
    assert all(row.text and row.tone_of_voice and row.body_posture and row.facial_expressions for row in rows)
    assert all(row.targets for row in rows)
    assert all(row.utterance_type in UTTERANCE_TYPES for row in clients)
    assert all(e.intensity_value is not None for row in clients for e in row.internal_emotion)
    assert all(row.internal_emotion and row.interaction_behavior for row in clients)
    for attribute in ("viewpoints_attitudes", "self_directed_behavior", "background_dialogue"):
        assert any(getattr(row, attribute) for row in rows), attribute
    with_strategy = [row for row in therapist if row.support_strategy]
    assert 0.5 < len(with_strategy) / len(therapist) < 0.75
    assert all(s.target and s.provider == "Therapist" for row in with_strategy for s in row.support_strategy)
    assert not any(row.support_strategy for row in clients)
    for sample in samples:
        starts = [row.start_time or 0.0 for row in sample.rows]
        assert starts == sorted(starts)
        assert all((row.end_time or 0.0) > (row.start_time or 0.0) for row in sample.rows)
        labels = {row.relation_cycle_state for row in sample.rows} - {None, ""}
        assert labels <= set(relation_labels(sample.scenario))
        used = {s.strategy_type for row in sample.rows for s in row.support_strategy}
        assert used <= set(strategy_labels(sample.scenario))


def test_every_label_of_both_taxonomies_occurs(paper_scale: tuple[Path, list[Sample], DatasetStats]) -> None:
    scopes = paper_scale[2].scopes
    for scenario in ("couple", "family"):
        dists = scopes[scenario].distributions
        assert all(dists["relation_patterns"][label] > 0 for label in relation_labels(scenario))
        assert all(dists["strategies"][label] > 0 for label in strategy_labels(scenario))
    assert scopes["family"].distributions["support_targets"]["multi_person"] > 0


def test_small_and_ten_times_sizes() -> None:
    assert scenario_split(1) == (1, 0)
    assert scenario_split(1910) == (1740, 170)
    only = list(synthetic_samples(1, seed=0))
    assert [s["scenario"] for s in only] == ["couple"]
    ids = Counter(s["sample_id"] for s in synthetic_samples(40, seed=1))
    assert max(ids.values()) == 1
