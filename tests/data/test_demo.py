"""The bundled demo data: clean, complete, covering every label and every task, and reproducible.

The task checks below restate the protocol's eligibility rules (protocol.md sections 2-7) on purpose,
independently of ``rescue_bench.tasks``: they check the *data*, so a task bug cannot hide a gap in the demo.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import replace
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rescue_bench.data.load import LoadReport, read_source
from rescue_bench.data.schema import Row, Sample, parse_intensity
from rescue_bench.taxonomy import (
    SCENARIOS,
    THERAPIST,
    UTTERANCE_TYPES,
    Scenario,
    group_label,
    relation_labels,
    strategy_labels,
)

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "make_demo.py"
RELEASE_KEYS = frozenset({
    "start_time", "end_time", "primary_speaker", "target", "dialogue_cleaned", "utterance_type",
    "background_dialogue", "tone_of_voice", "body_posture", "facial_expressions", "self_directed_behavior",
    "interaction_behavior", "internal_emotion", "viewpoints_attitudes", "support_strategy", "row_index",
    "relation_pattern", "relation_pattern_reason", "relation_pattern_evidence_rows",
})  # fmt: skip
CYCLE_KEYS = frozenset({"relation_cycle_state", "relation_cycle_reason", "relation_cycle_evidence_rows"})
_WORD = re.compile(r"[A-Za-z0-9']+")


@pytest.fixture(scope="module")
def report() -> LoadReport:
    return read_source("demo")


@pytest.fixture(scope="module")
def samples(report: LoadReport) -> tuple[Sample, ...]:
    return report.samples


@pytest.fixture(scope="module")
def demo_text() -> str:
    return resources.files("rescue_bench.data.demo").joinpath("demo.jsonl").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def raw(demo_text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in demo_text.splitlines()]


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_demo_under_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is created
    spec.loader.exec_module(module)
    return module


# -- protocol rules, restated -------------------------------------------------------------------------------


def words(text: str | None) -> int:
    return len(_WORD.findall(text or ""))


def rpp_gold(sample: Sample) -> dict[int, str]:
    """Row -> gold relation label: relation_cycle_state, or relation_pattern when no row has the former."""
    use_cycle = any((row.relation_cycle_state or "").strip() for row in sample.rows)
    labels = relation_labels(sample.scenario)
    gold = {}
    for row in sample.rows:
        value = ((row.relation_cycle_state if use_cycle else row.relation_pattern) or "").strip()
        if value in labels:
            gold[row.row_index] = value
    return gold


def itp_candidates(sample: Sample) -> tuple[list[int], list[int]]:
    """Decision rows before a therapist entry (yes) and before another client row (no)."""
    pairs = list(zip(sample.rows, sample.rows[1:], strict=False))
    yes = [row.row_index for row, nxt in pairs if nxt.is_therapist and not row.is_therapist]
    no = [row.row_index for row, nxt in pairs if not nxt.is_therapist and not row.is_therapist]
    return yes, no


def er_checkpoints(sample: Sample) -> list[int]:
    """Client rows of >= 5 words with a valid emotion of the speaker, in the last 70% of the rows."""
    total = len(sample.rows)
    drop = min(total - 1, math.ceil(total * 0.3))
    out = []
    for row in sample.rows[drop:]:
        own = [e for e in row.internal_emotion if e.person == row.speaker and e.emotion_description]
        if row.is_client and words(row.dialogue_cleaned) >= 5 and own and own[0].intensity_value is not None:
            out.append(row.row_index)
    return out


def vp_checkpoints(sample: Sample) -> list[int]:
    """Client rows with a viewpoint whose source is the speaker."""
    own = (
        (row, [v for v in row.viewpoints_attitudes if v.source == row.speaker and v.target and v.viewpoint])
        for row in sample.rows
    )
    return [row.row_index for row, views in own if row.is_client and views]


def ssp_rows(sample: Sample) -> list[tuple[Row, str]]:
    """Therapist rows whose first strategy is in the scenario's taxonomy and has a target."""
    out = []
    for row in sample.rows:
        if row.is_therapist and row.support_strategy:
            first = row.support_strategy[0]
            if first.strategy_type in strategy_labels(sample.scenario) and (first.target or row.targets):
                out.append((row, first.strategy_type))
    return out


def by_scenario(samples: tuple[Sample, ...], scenario: str) -> list[Sample]:
    return [s for s in samples if s.scenario == scenario]


def all_text(raw: list[dict[str, Any]]) -> Iterator[str]:
    """Every string value anywhere in the raw samples."""
    stack: list[Any] = list(raw)
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


# -- loading and shape --------------------------------------------------------------------------------------


def test_demo_loads_without_errors_or_warnings(report: LoadReport) -> None:
    assert [p.render() for p in report.problems] == []
    assert [s.scenario for s in report.samples].count("couple") == 4
    assert [s.scenario for s in report.samples].count("family") == 2


def test_sample_ids_are_unique_and_match_their_source_files(raw: list[dict[str, Any]]) -> None:
    ids = [obj["sample_id"] for obj in raw]
    assert len(ids) == len(set(ids))
    for obj in raw:
        assert obj["source_file"] == f"demo/{obj['sample_id']}.json"
        assert obj["sample_id"].startswith(f"demo_{obj['scenario']}/")


def test_sizes_keep_the_demo_small(samples: tuple[Sample, ...]) -> None:
    sizes = [len(s.rows) for s in samples]
    assert all(20 <= n <= 60 for n in sizes), sizes
    assert 220 <= sum(sizes) <= 260


def test_therapist_speaks_a_realistic_share_of_rows(samples: tuple[Sample, ...]) -> None:
    for sample in samples:
        share = sum(r.is_therapist for r in sample.rows) / len(sample.rows)
        assert 0.35 <= share <= 0.5, (sample.sample_id, share)


def test_every_row_has_every_release_key(raw: list[dict[str, Any]]) -> None:
    for obj in raw:
        uses_cycle = any("relation_cycle_state" in row for row in obj["rows"])
        for position, row in enumerate(obj["rows"], start=1):
            expected = RELEASE_KEYS | CYCLE_KEYS if uses_cycle else RELEASE_KEYS
            assert set(row) == expected, (obj["sample_id"], position)
            assert row["row_index"] == position


def test_times_increase_without_overlap(samples: tuple[Sample, ...]) -> None:
    for sample in samples:
        previous_end = 0.0
        for row in sample.rows:
            assert row.start_time is not None and row.end_time is not None
            assert previous_end <= row.start_time < row.end_time, (sample.sample_id, row.row_index)
            previous_end = row.end_time


def test_text_is_plain_ascii(raw: list[dict[str, Any]]) -> None:
    # ASCII cannot be mistaken for mojibake, and keeps the file readable anywhere.
    assert all(text.isascii() for text in all_text(raw))


# -- annotation content -------------------------------------------------------------------------------------


def test_utterance_types_cover_the_set_and_only_on_client_rows(samples: tuple[Sample, ...]) -> None:
    used = set()
    for row in (r for s in samples for r in s.rows):
        if row.is_therapist:
            assert row.utterance_type == ""
        else:
            assert row.utterance_type in UTTERANCE_TYPES
            used.add(row.utterance_type)
    assert used == set(UTTERANCE_TYPES)


def test_client_rows_are_mostly_full_sentences(samples: tuple[Sample, ...]) -> None:
    client = [r for s in samples for r in s.rows if r.is_client]
    assert sum(words(r.dialogue_cleaned) >= 5 for r in client) / len(client) >= 0.9


def test_emotions_are_phrased_and_scaled_like_the_release(samples: tuple[Sample, ...]) -> None:
    listeners = 0
    for sample in samples:
        for row in sample.rows:
            for emotion in row.internal_emotion:
                assert (emotion.emotion_description or "").startswith("feels ")
                assert parse_intensity(emotion.intensity) == emotion.intensity  # a whole number in 0..10
                assert emotion.person in sample.participants
                listeners += emotion.person != row.speaker
    assert listeners >= 3


def test_viewpoints_come_from_the_speaker_and_name_someone_present(samples: tuple[Sample, ...]) -> None:
    for sample in samples:
        for row in sample.rows:
            for view in row.viewpoints_attitudes:
                assert view.source == row.speaker and row.is_client
                assert view.target in sample.participants and view.target != view.source
                assert view.viewpoint and view.attitude


def test_visual_cues_and_background_speech_are_present(samples: tuple[Sample, ...]) -> None:
    rows = [r for s in samples for r in s.rows]
    assert all(r.tone_of_voice for r in rows)
    assert all(
        r.body_posture or r.facial_expressions or r.self_directed_behavior or r.interaction_behavior
        for r in rows
    )
    assert sum(bool(r.background_dialogue) for r in rows) >= 3
    assert all(cue.person for r in rows for cue in (*r.body_posture, *r.facial_expressions))


def test_strategies_cover_both_taxonomies(samples: tuple[Sample, ...]) -> None:
    for scenario in ("couple", "family"):
        rows = [r for s in by_scenario(samples, scenario) for r in s.rows]
        used = {st.strategy_type for r in rows for st in r.support_strategy}
        assert used == set(strategy_labels(scenario)), scenario  # family has no goal_align or detach
        assert all(r.is_therapist for r in rows if r.support_strategy)
        assert all(st.provider == THERAPIST for r in rows for st in r.support_strategy)
        therapist = [r for r in rows if r.is_therapist]
        backchannels = sum(not r.support_strategy for r in therapist)
        assert 0 < backchannels < len(therapist) / 3


def test_therapist_rows_address_groups_and_subgroups(samples: tuple[Sample, ...]) -> None:
    scenario: Scenario
    for scenario in SCENARIOS:
        group = group_label(scenario)
        addressed = [
            (targets, sample)
            for sample in by_scenario(samples, scenario)
            for row in sample.rows
            if row.is_therapist
            for targets in (row.targets, *(st.target for st in row.support_strategy))
        ]
        assert any(targets == (group,) for targets, _ in addressed), scenario
        assert any(group not in t and len(t) >= 2 for t, _ in addressed), scenario
        if scenario == "family":
            assert any(2 <= len(t) < len(s.participants) for t, s in addressed)


# -- relation patterns --------------------------------------------------------------------------------------


def test_rpp_gold_covers_every_relation_pattern(samples: tuple[Sample, ...]) -> None:
    for scenario in ("couple", "family"):
        used = {label for s in by_scenario(samples, scenario) for label in rpp_gold(s).values()}
        assert used == set(relation_labels(scenario)), scenario


def test_both_gold_fields_are_exercised(raw: list[dict[str, Any]]) -> None:
    cycle = {obj["scenario"]: 0 for obj in raw}
    pattern = dict(cycle)
    for obj in raw:
        rows = obj["rows"]
        if any("relation_cycle_state" in row for row in rows):
            cycle[obj["scenario"]] += 1
            assert any(row["relation_cycle_state"] == "" for row in rows)  # unlabelled rows exist
            assert all(row["relation_pattern"] is None for row in rows)
        else:
            pattern[obj["scenario"]] += 1
            assert any(row["relation_pattern"] is None for row in rows)  # the release's null quirk
    assert cycle == {"couple": 3, "family": 1}
    assert pattern == {"couple": 1, "family": 1}


def test_evidence_rows_point_back_and_one_list_holds_row_zero(samples: tuple[Sample, ...]) -> None:
    zero = 0
    for sample in samples:
        for row in sample.rows:
            evidence = row.relation_cycle_evidence_rows or row.relation_pattern_evidence_rows
            assert all(0 <= e <= row.row_index for e in evidence)
            assert bool(evidence) == (row.row_index in rpp_gold(sample))
            zero += 0 in evidence
    assert zero >= 1


# -- every sample feeds every task --------------------------------------------------------------------------


def test_every_sample_yields_instances_for_all_six_tasks(samples: tuple[Sample, ...]) -> None:
    for sample in samples:
        yes, no = itp_candidates(sample)
        counts = {"itp_yes": len(yes), "itp_no": len(no), "rpp": len(rpp_gold(sample))}
        counts |= {
            "er": len(er_checkpoints(sample)),
            "vp": len(vp_checkpoints(sample)),
            "ssp": len(ssp_rows(sample)),
        }
        where = (sample.sample_id, counts)
        assert min(counts["itp_yes"], counts["itp_no"]) >= 5, where
        assert counts["er"] >= 5 and counts["vp"] >= 5, where  # a full set of 5 checkpoints each
        assert counts["rpp"] >= 15 and counts["ssp"] >= 5, where


def test_relation_labels_cover_part_of_each_session_as_in_the_release(samples: tuple[Sample, ...]) -> None:
    """The release labels 30-45% of rows, in stretches; a demo labelling every row would make RPP, whose items
    carry the whole earlier transcript, cost twice what it should."""
    for sample in samples:
        share = len(rpp_gold(sample)) / len(sample.rows)
        assert 0.3 <= share <= 0.6, (sample.sample_id, round(share, 2))


# -- reproducible and independent ---------------------------------------------------------------------------


def test_script_regenerates_the_committed_file_byte_for_byte(script: ModuleType, demo_text: str) -> None:
    assert script.build() == demo_text
    assert script.build() == script.build()


def test_script_rejects_authoring_slips(script: ModuleType) -> None:
    first = script.CONVERSATIONS[0]
    stranger = script.C("Zed", "Therapist", "other", "Who am I even talking to?", "odd")
    bad_name = replace(first, script=(stranger,))
    with pytest.raises(ValueError, match="unknown name 'Zed'"):
        script.build_sample(bad_name)
    bad_label = replace(first, script=(script.P("escalation_conflict"), script.T("Couple", "Hello.", "calm")))
    with pytest.raises(ValueError, match="relation label"):
        script.build_sample(bad_label)


def test_no_text_or_names_from_the_real_subset(real_subset: Path, raw: list[dict[str, Any]]) -> None:
    """No run of six words and no participant name is shared with the real release samples."""
    real = [json.loads(line) for line in real_subset.read_text(encoding="utf-8").splitlines() if line.strip()]

    def six_grams(objects: list[dict[str, Any]]) -> set[tuple[str, ...]]:
        grams: set[tuple[str, ...]] = set()
        for text in all_text(objects):
            tokens = _WORD.findall(text.lower())
            grams.update(tuple(tokens[i : i + 6]) for i in range(len(tokens) - 5))
        return grams

    assert not six_grams(raw) & six_grams(real)
    real_names = {name for obj in real for name in obj.get("participants", [])}
    assert not {name for obj in raw for name in obj["participants"]} & real_names
