"""Label sets and the label normaliser."""

from __future__ import annotations

import pytest

from rescue_bench.taxonomy import (
    ALIASES,
    RELATION_PATTERNS,
    SCENARIOS,
    STRATEGIES,
    UTTERANCE_TYPES,
    canonical_form,
    group_label,
    normalize_label,
    relation_labels,
    strategy_labels,
)


def test_label_counts_match_the_paper() -> None:
    sizes = (
        len(relation_labels("couple")),
        len(relation_labels("family")),
        len(strategy_labels("couple")),
        len(strategy_labels("family")),
        len(UTTERANCE_TYPES),
    )
    assert sizes == (6, 8, 10, 8, 10)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_labels_are_distinct_snake_case_keys_with_definitions(scenario: str) -> None:
    for labels in (RELATION_PATTERNS[scenario], STRATEGIES[scenario]):  # type: ignore[index]
        keys = [label.key for label in labels]
        assert len(set(keys)) == len(keys)
        assert all(key == canonical_form(key) for key in keys)
        assert all(label.name and len(label.definition) > 20 for label in labels)


def test_shared_and_scenario_specific_labels() -> None:
    assert set(relation_labels("couple")) & set(relation_labels("family")) == {
        "pursue_withdraw",
        "repair_softening",
        "mixed_transition",
    }
    assert "evoke" in strategy_labels("couple") and "evoke" not in strategy_labels("family")
    assert "boundary" in strategy_labels("family") and "boundary" not in strategy_labels("couple")
    assert (group_label("couple"), group_label("family")) == ("Couple", "Family")


def test_every_alias_points_at_a_real_label() -> None:
    known = {
        *UTTERANCE_TYPES,
        *(label.key for s in SCENARIOS for label in (*RELATION_PATTERNS[s], *STRATEGIES[s])),
    }
    assert {target for target in ALIASES.values() if target not in known} == set()
    assert all(alias == canonical_form(alias) for alias in ALIASES)


@pytest.mark.parametrize(
    ("raw", "allowed", "label", "how"),
    [
        ("track", strategy_labels("couple"), "track", "exact"),
        ("Track", strategy_labels("couple"), "track", "normalized"),
        (" goal-align. ", strategy_labels("couple"), "goal_align", "normalized"),
        ("Repair / Softening", relation_labels("couple"), "repair_softening", "normalized"),
        (
            "Cross Generational  Coalition",
            relation_labels("family"),
            "cross_generational_coalition",
            "normalized",
        ),
        ("Tracking", strategy_labels("family"), "track", "alias"),
        ("demand-withdraw", relation_labels("couple"), "pursue_withdraw", "alias"),
        ("Unified detachment", strategy_labels("couple"), "detach", "alias"),
        ("Unified detachment", strategy_labels("family"), None, "invalid"),  # alias outside the allowed set
        ("evoke", strategy_labels("family"), None, "invalid"),
        ("", relation_labels("couple"), None, "invalid"),
        (None, relation_labels("couple"), None, "invalid"),
        (3, relation_labels("couple"), None, "invalid"),
    ],
)
def test_normaliser_records_how_each_label_was_obtained(
    raw: object, allowed: tuple[str, ...], label: str | None, how: str
) -> None:
    result = normalize_label(raw, allowed)
    assert (result.label, result.how) == (label, how)
    assert result.remapped == (how in ("normalized", "alias"))
    assert result.raw == ("" if raw is None else str(raw))


def test_normalising_is_idempotent_on_every_label() -> None:
    for scenario in SCENARIOS:
        for allowed in (relation_labels(scenario), strategy_labels(scenario), UTTERANCE_TYPES):
            for key in allowed:
                assert normalize_label(key, allowed).how == "exact"
                assert normalize_label(key.upper().replace("_", " "), allowed).label == key
