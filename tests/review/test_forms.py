"""The editor's mapping between release rows and forms: lossless when unchanged, precise when edited."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from review_workdir import COUPLE, couple_rows

from rescue_bench.data.load import load_samples
from rescue_bench.review.forms import (
    RELATION_FIELDS,
    changed_fields,
    row_from_state,
    state_from_form,
    state_from_row,
    with_blank,
    without,
)


def _as_form(state: Any) -> dict[str, list[str]]:
    """The state as a posted form, as the editor template names its fields."""
    form: dict[str, list[str]] = {}
    for key, value in state.scalars.items():
        form[f"f-{key}"] = list(value) if isinstance(value, tuple) else [value]
    for list_key, entries in state.lists.items():
        for i, entry in enumerate(entries):
            form[f"{list_key}-{i}-src"] = ["" if entry.src is None else str(entry.src)]
            for key, value in entry.values.items():
                form[f"{list_key}-{i}-{key}"] = list(value) if isinstance(value, tuple) else [value]
    for key in RELATION_FIELDS:
        form[f"rel-{key}"] = [getattr(state.relation, key)]
    return form


def _roundtrip(
    row: dict[str, Any], scenario: str = "couple", people: tuple[str, ...] = COUPLE
) -> dict[str, Any]:
    state = state_from_form(_as_form(state_from_row(row)))
    new, errors = row_from_state(state, row, scenario, people)  # type: ignore[arg-type]
    assert errors == []
    return new


@pytest.mark.parametrize("row", couple_rows(), ids=lambda r: f"row{r['row_index']}")
def test_unchanged_form_gives_the_identical_row(row: dict[str, Any]) -> None:
    assert _roundtrip(row) == row


def test_unchanged_form_is_lossless_on_the_real_release(real_subset: Path) -> None:
    rows = 0
    for sample in load_samples(real_subset):
        for row in sample.rows:
            stored = row.to_release()
            assert _roundtrip(stored, sample.scenario, sample.participants) == stored, (
                sample.sample_id,
                row.row_index,
            )
            rows += 1
    assert rows > 50


def _edit(row: dict[str, Any], change: dict[str, list[str]]) -> tuple[dict[str, Any], list[str]]:
    form = _as_form(state_from_row(row))
    form.update(change)
    return row_from_state(state_from_form(form), row, "couple", COUPLE)


def test_an_edit_changes_only_its_field() -> None:
    row = couple_rows()[1]
    new, errors = _edit(row, {"internal_emotion-0-intensity": ["8"]})
    assert errors == [] and changed_fields(row, new) == ["internal_emotion"]
    assert new["internal_emotion"] == [
        {"person": "Mara", "emotion_description": "frustrated and unheard", "intensity": 8}
    ]


def test_unchanged_values_keep_their_stored_form() -> None:
    row = couple_rows()[2]  # Tom's intensity is stored as the string "5"
    new, _ = _edit(row, {"f-tone_of_voice": ["very quiet"]})
    assert new["internal_emotion"] == row["internal_emotion"] and new["tone_of_voice"] == "very quiet"
    assert "facial_expressions" not in new  # absent stays absent
    cleared, _ = _edit(row, {"f-tone_of_voice": [""]})
    assert cleared["tone_of_voice"] is None


def test_entries_keep_unknown_keys_when_edited() -> None:
    row = couple_rows()[1]
    row["viewpoints_attitudes"][0]["confidence"] = "high"
    new, _ = _edit(row, {"viewpoints_attitudes-0-attitude": ["hurt"]})
    assert new["viewpoints_attitudes"][0] == {**row["viewpoints_attitudes"][0], "attitude": "hurt"}


def test_targets_and_unknown_names() -> None:
    row = couple_rows()[0]
    row["target"] = ["Couple", "Grandma"]  # a name outside the participant list stays until unticked
    assert _roundtrip(row)["target"] == ["Couple", "Grandma"]
    new, errors = _edit(row, {"f-target": ["Mara"]})
    assert errors == [] and new["target"] == ["Mara"]
    _, forged = _edit(row, {"f-target": ["Mallory"]})
    assert forged and "Mallory" in forged[0]


def test_labels_must_come_from_the_scenario_taxonomy() -> None:
    row = couple_rows()[0]
    _, errors = _edit(row, {"support_strategy-0-strategy_type": ["boundary"]})  # a family strategy
    assert errors and "boundary" in errors[0]
    _, errors = _edit(row, {"rel-label": ["cross_generational_coalition"]})
    assert errors and "not a label of this scenario" in errors[0]
    new, errors = _edit(row, {"support_strategy-0-strategy_type": ["detach"], "rel-label": ["attack_attack"]})
    assert errors == [] and new["support_strategy"][0]["strategy_type"] == "detach"
    assert new["relation_cycle_state"] == "attack_attack"


def test_legacy_label_outside_the_taxonomy_is_kept_until_changed() -> None:
    row = couple_rows()[1]
    row["utterance_type"] = "complaint"
    assert _roundtrip(row)["utterance_type"] == "complaint"


def test_evidence_rows_and_intensity_checks() -> None:
    row = couple_rows()[0]
    new, errors = _edit(row, {"rel-evidence": ["3 4,5"]})
    assert errors == [] and new["relation_cycle_evidence_rows"] == [3, 4, 5]
    assert _edit(row, {"rel-evidence": ["3, four"]})[1]
    for bad in ("11", "-1", "7.5", "high"):
        assert _edit(couple_rows()[1], {"internal_emotion-0-intensity": [bad]})[1], bad


def test_relation_pattern_only_rows_edit_that_field() -> None:
    row = {
        "row_index": 1,
        "primary_speaker": "Mara",
        "relation_pattern": "attack_attack",
        "relation_pattern_reason": "both blame",
    }
    new, errors = _edit(row, {"rel-label": ["withdraw_withdraw"]})
    assert (
        errors == [] and new["relation_pattern"] == "withdraw_withdraw" and "relation_cycle_state" not in new
    )


def test_add_and_remove_entries() -> None:
    row = couple_rows()[1]
    state = with_blank(state_from_row(row), "internal_emotion")
    assert len(state.lists["internal_emotion"]) == 2 and state.lists["internal_emotion"][1].src is None
    new, _ = row_from_state(state, row, "couple", COUPLE)
    assert new == row  # an empty slot adds nothing
    state = without(state_from_row(row), "internal_emotion", 0)
    new, _ = row_from_state(state, row, "couple", COUPLE)
    assert new["internal_emotion"] == []
