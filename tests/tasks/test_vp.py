"""VP: speaker-sourced gold viewpoints, even selection without cut-off, answer lists read leniently."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rescue_bench.data.schema import Sample
from rescue_bench.records import Instance, Prediction, Shown
from rescue_bench.tasks import vp, vp_scoring
from rescue_bench.tasks.base import TaskConfig
from rescue_bench.tasks.context import shown_rows

CFG = TaskConfig()


def views(speaker: str, *items: tuple[str, str, str]) -> Any:
    entries = [{"source": s, "target": t, "viewpoint": v, "attitude": "negative"} for s, t, v in items]
    return speaker, {"viewpoints_attitudes": entries}


def test_instances_match_the_reference_on_the_real_samples(
    real_samples: list[Sample], expected: dict[str, Any]
) -> None:
    for sample in real_samples:
        assert [i.row_index for i in vp.build(sample, CFG)] == expected[sample.sample_id]["vp_rows"]


def test_demo_gold_is_the_speakers_own_viewpoints(demo_samples: list[Sample]) -> None:
    for sample in demo_samples:
        instances = vp.build(sample, CFG)
        assert 0 < len(instances) <= 5, sample.sample_id
        for inst in instances:
            assert inst.gold and all(v["source"] == sample.row(inst.row_index).speaker for v in inst.gold)


def test_gold_keeps_only_complete_viewpoints_of_the_speaker(make_sample: Callable[..., Sample]) -> None:
    sample = make_sample(
        [
            views("Ana", ("Ana", "Ben", "he never listens"), ("Ben", "Ana", "she nags"), ("Ana", "", "x")),
            views("Ben", ("Ana", "Ben", "not his own view")),
            views("Therapist", ("Therapist", "Ana", "she is guarded")),
            views("Ben", ("Ben", "Ana", "")),
        ]
    )
    instances = vp.build(sample, CFG)
    assert [i.row_index for i in instances] == [1]
    assert instances[0].gold == [
        {"source": "Ana", "target": "Ben", "viewpoint": "he never listens", "attitude": "negative"}
    ]


def test_no_early_cutoff_and_at_most_five(make_sample: Callable[..., Sample]) -> None:
    sample = make_sample([views("Ana", ("Ana", "Ben", "he hides"))] * 8)
    # positions k * 7 / 4 = 0, 1.75, 3.5, 5.25, 7 round (half to even) to 0, 2, 4, 5, 7
    assert [i.row_index for i in vp.build(sample, CFG)] == [1, 3, 5, 6, 8]


def test_the_current_row_is_shown_once_and_minus_one_means_all(make_sample: Callable[..., Sample]) -> None:
    sample = make_sample(["Ana", "Ben", "Therapist", views("Ana", ("Ana", "Ben", "he hides"))])
    inst = vp.build(sample, TaskConfig(context_size=-1))[0]
    assert shown_rows(inst.context) == (1, 2, 3, 4)
    request = vp.render([inst], CFG)
    assert request.messages[1]["content"].count("[4] Ana") == 1
    assert "he hides" not in request.messages[1]["content"]
    props = request.response_schema["properties"]["predictions"]["items"]["properties"]
    assert props["viewpoints"]["items"]["properties"]["target"]["enum"] == ["Ana", "Ben", "Therapist"]


def instance() -> Instance:
    gold = [{"source": "Ana", "target": "Ben", "viewpoint": "he hides", "attitude": "negative"}]
    return Instance(
        "s::vp::4", "vp", "s", "couple", 4, gold, ("Ana", "Ben"), Shown("dialogue", 0, speaker="Ana"), {}
    )


def parse_one(entry: dict[str, Any]) -> Prediction:
    return vp.parse(json.dumps({"predictions": [{"id": "c1", **entry}]}), [instance()])[0]


def test_parse_reads_viewpoints_and_defaults_the_source() -> None:
    pred = parse_one(
        {
            "viewpoints": [
                {"target": "Ben", "viewpoint": "he hides things"},
                json.dumps({"source": "Ana", "target": "Therapist", "viewpoint": "she takes sides"}),
                {"target": "Ben"},
                "not an object",
            ],
            "reason": "r",
        }
    )
    assert pred.valid
    assert pred.value == [
        {"source": "Ana", "target": "Ben", "viewpoint": "he hides things"},
        {"source": "Ana", "target": "Therapist", "viewpoint": "she takes sides"},
    ]
    assert pred.problems == (
        "dropped: entry 3 has no target or viewpoint",
        "dropped: entry 4 has no target or viewpoint",
    )


def test_an_empty_list_is_a_valid_answer_and_a_missing_one_is_not() -> None:
    assert parse_one({"viewpoints": []}).value == []
    assert parse_one({"viewpoints": []}).valid
    assert parse_one({"predicted_viewpoints": {"target": "Ben", "viewpoint": "x"}}).value == [
        {"source": "Ana", "target": "Ben", "viewpoint": "x"}
    ]
    for entry in ({"reason": "r"}, {"viewpoints": None}, {"viewpoints": 3}):
        pred = parse_one(entry)
        assert not pred.valid and pred.parse_failure


def test_score_is_left_to_the_judge() -> None:
    assert vp.score(parse_one({"viewpoints": []}), instance()).metrics == {}


def _user_and_system(sample: Sample, cfg: TaskConfig) -> tuple[str, str, dict[str, Any]]:
    batch = vp.build(sample, cfg)[:2]
    request = vp.render(batch, cfg)
    system, user = (m["content"] for m in request.messages)
    assert isinstance(system, str) and isinstance(user, str)
    return system, user, request.response_schema or {}


def test_the_targets_offered_are_the_people_unless_the_group_is_asked_for(demo_samples: list[Sample]) -> None:
    for sample in demo_samples:
        group = "Family" if sample.scenario == "family" else "Couple"
        system, _, schema = _user_and_system(sample, CFG)
        text = json.dumps(schema)
        # The reference asks about "another on-screen person": no group label as a target by default.
        assert f'"{group}"' not in system and f'"{group}"' not in text, sample.sample_id
        assert all(group not in inst.candidates for inst in vp.build(sample, CFG))
        with_group = TaskConfig(options={"vp": vp_scoring.Options(group_target=True)})
        system, _, schema = _user_and_system(sample, with_group)
        assert f'"{group}"' in system and f'"{group}"' in json.dumps(schema)


def test_no_gold_view_of_the_real_samples_targets_the_group(real_samples: list[Sample]) -> None:
    # docs/protocol-differences.md ("VP targets"): why the group label is not offered by default.
    views = [
        v for sample in real_samples for row in sample.rows if row.is_client for v in vp.gold_viewpoints(row)
    ]
    assert len(views) == 32 and not [v for v in views if v["target"] in ("Couple", "Family")]
