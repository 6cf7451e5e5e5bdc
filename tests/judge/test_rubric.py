"""Judge prompts and strict verdict parsing."""

from __future__ import annotations

import json

import pytest

from rescue_bench.errors import ConfigError
from rescue_bench.judge import rubric
from rescue_bench.judge.rubric import JudgeItem, parse_verdicts, render, render_reask


def _er(n: int) -> list[JudgeItem]:
    return [
        JudgeItem(
            f"couple_a/s1::er::{i}",
            "er",
            {"emotion": f"gold {i}", "intensity": 7},
            {"emotion": f"pred {i}", "intensity": 2},
            speaker="Alan",
            timestamp=f"{i}-{i + 1}s",
            utterance=f"words of row {i}",
            reason=f"reason {i}",
        )
        for i in range(1, n + 1)
    ]


def test_render_is_blind_and_uses_opaque_ids() -> None:
    req = render(_er(3))
    text = req.messages[0]["content"] + req.messages[1]["content"]
    assert req.opaque_ids == ("c1", "c2", "c3")
    assert "couple_a/s1" not in text and "::er::" not in text
    assert '"c3"' in text and "gold 3" in text and "pred 3" in text
    assert req.response_schema["required"] == ["graded"]
    assert req.prompt_hash == rubric.prompt_hash("er")


def test_er_judge_sees_what_the_reference_judge_sees() -> None:
    """evaluate_user_understanding.py's judge_prompt: speaker, timestamp, dialogue, gold emotion and
    intensity, and the prediction with its intensity and reason."""
    shown = json.loads(render(_er(1)).messages[1]["content"].removeprefix("Checkpoints:\n"))["c1"]
    assert shown == {
        "speaker": "Alan",
        "timestamp": "1-2s",
        "utterance": "words of row 1",
        "gold_emotion": "gold 1",
        "gold_intensity": 7,
        "predicted_emotion": "pred 1",
        "predicted_intensity": 2,
        "reason": "reason 1",
    }
    assert "Do not grade intensity" in rubric.judge_rubric("er").rubric


def test_vp_judge_sees_the_turn_gold_attitude_and_reason() -> None:
    """evaluate_user_viewpoints.py's judge_prompt: speaker, timestamp, dialogue, gold viewpoints with their
    attitude, the predicted viewpoints and the reason."""
    item = JudgeItem(
        "s::vp::2",
        "vp",
        [{"source": "A", "target": "B", "viewpoint": "v", "attitude": "hostile"}],
        [{"source": "A", "target": "B", "viewpoint": "p"}],
        "A",
        timestamp="3-4s",
        utterance="You always side with her.",
        reason="blames B",
    )
    shown = json.loads(render([item]).messages[1]["content"].removeprefix("Checkpoints:\n"))["c1"]
    assert list(shown) == [
        "speaker",
        "timestamp",
        "utterance",
        "gold_viewpoints",
        "predicted_viewpoints",
        "reason",
    ]
    assert shown["gold_viewpoints"][0]["attitude"] == "hostile"
    assert shown["utterance"] == "You always side with her." and shown["reason"] == "blames B"


def test_rubric_scales_are_unchanged() -> None:
    assert rubric.schema("er")["properties"]["graded"]["items"]["properties"]["emotion_score"]["enum"] == [
        1,
        2,
        3,
        4,
        5,
    ]
    vp = rubric.schema("vp")["properties"]["graded"]["items"]["properties"]
    assert vp["source_target_score"]["enum"] == [0, 1, 2] and vp["viewpoint_score"]["enum"] == [0, 1, 2, 3, 4]


def test_render_vp_shows_gold_attitude_but_not_prediction_extras() -> None:
    item = JudgeItem(
        "s::vp::2",
        "vp",
        [{"source": "A", "target": "B", "viewpoint": "v", "attitude": "hostile"}],
        [{"source": "A", "target": "B", "viewpoint": "p", "reason": "secret chain of thought"}],
    )
    content = render([item]).messages[1]["content"]
    assert "hostile" in content and "secret chain" not in content


def test_render_rejects_mixed_tasks() -> None:
    vp = JudgeItem("s::vp::2", "vp", [], [])
    with pytest.raises(ValueError, match="one task"):
        render([*_er(1), vp])


def test_valid_verdicts() -> None:
    text = json.dumps(
        {
            "graded": [
                {"id": "c2", "emotion_score": 3, "verdict": "pass", "notes": "ok"},
                {"id": "c1", "emotion_score": "5"},
            ]
        }
    )
    out = parse_verdicts("er", text, ["c1", "c2"])
    assert out["c1"].scores == {"s_emo": 5.0}
    assert out["c2"].scores == {"s_emo": 3.0}
    assert out["c2"].raw["notes"] == "ok"


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"id": "c1", "emotion_score": 0}, "out_of_range: emotion_score=0 (allowed 1-5)"),
        ({"id": "c1", "emotion_score": 6}, "out_of_range: emotion_score=6 (allowed 1-5)"),
        ({"id": "c1"}, "missing: emotion_score"),
        ({"id": "c1", "emotion_score": None}, "missing: emotion_score"),
        ({"id": "c1", "emotion_score": 4.5}, "parse_failure: emotion_score=4.5 is not an integer"),
        ({"id": "c1", "emotion_score": True}, "parse_failure: emotion_score=True is not an integer"),
        ({"id": "c1", "emotion_score": "high"}, "parse_failure: emotion_score='high' is not an integer"),
    ],
)
def test_bad_er_scores_are_invalid_not_clamped(entry: dict[str, object], reason: str) -> None:
    verdict = parse_verdicts("er", json.dumps({"graded": [entry]}), ["c1"])["c1"]
    assert not verdict.valid and verdict.scores is None
    assert verdict.problem == reason


def test_vp_total_is_recomputed_and_ranges_checked() -> None:
    text = json.dumps(
        {
            "graded": [
                {"id": "c1", "source_target_score": 2, "viewpoint_score": 4, "viewpoint_total_score": 5},
                {"id": "c2", "source_target_score": 3, "viewpoint_score": 1},
                {"id": "c3", "source_target_score": 1, "viewpoint_score": -1},
            ]
        }
    )
    out = parse_verdicts("vp", text, ["c1", "c2", "c3"])
    assert out["c1"].scores == {"pairing": 2.0, "viewpoint": 4.0, "total": 6.0}
    assert out["c1"].notes == ("judge_total_ignored: 5 != 6",)
    assert out["c2"].problem == "out_of_range: source_target_score=3 (allowed 0-2)"
    assert out["c3"].problem == "out_of_range: viewpoint_score=-1 (allowed 0-4)"


@pytest.mark.parametrize("text", ["", "no json here", "{broken", '{"graded": "nope"}', "[1, 2]"])
def test_garbage_reply_invalidates_every_item(text: str) -> None:
    out = parse_verdicts("er", text, ["c1", "c2"])
    assert all(not v.valid for v in out.values())
    assert all(v.problem and v.problem.startswith(("parse_failure", "missing")) for v in out.values())


def test_fenced_reply_and_lone_entry_without_id() -> None:
    assert parse_verdicts("er", '```json\n{"emotion_score": 2}\n```', ["c1"])["c1"].scores == {"s_emo": 2.0}
    # with two checkpoints asked, an entry without an id cannot be placed
    assert not parse_verdicts("er", '{"graded": [{"emotion_score": 2}]}', ["c1", "c2"])["c1"].valid


def test_duplicate_and_unknown_ids() -> None:
    text = json.dumps(
        {
            "graded": [
                {"id": "c1", "emotion_score": 2},
                {"id": "c1", "emotion_score": 5},
                {"id": "c9", "emotion_score": 5},
            ]
        }
    )
    out = parse_verdicts("er", text, ["c1"])
    assert out == {"c1": out["c1"]} and out["c1"].scores == {"s_emo": 2.0}


def test_reask_keeps_only_failed_items_and_differs_from_first() -> None:
    items = _er(3)
    first = render(items)
    second = render_reask(items, {items[1].instance_id: "missing: no verdict"})
    assert second.instance_ids == (items[1].instance_id,)
    assert second.content_key() != first.content_key()
    body = second.messages[1]["content"]
    assert "gold 2" in body and "gold 1" not in body and "gold 3" not in body
    # the re-asked item is renumbered c1, both in the checkpoints and in the correction
    assert '"c1"' in body and '"c2"' not in body
    assert "- c1: missing: no verdict" in body
    with pytest.raises(ValueError, match="nothing"):
        render_reask(items, {})


# Pinned when the judges were given the reference judge's inputs (the turn, both intensities, the reason).
# Every judgment line records its prompt hash, so a changed rubric, schema or shown field would show here.
# VP's was pinned again when its rubric got the reference's "and near-synonyms" back (CHANGELOG, protocol 4).
PINNED_HASHES = {"er": "f101e444aa4b", "vp": "9d661fe33059"}


@pytest.mark.parametrize("task", sorted(PINNED_HASHES))
def test_prompt_hashes_did_not_change(task: str) -> None:
    assert rubric.prompt_hash(task) == PINNED_HASHES[task]


def test_an_unjudged_task_has_no_rubric() -> None:
    with pytest.raises(ConfigError, match="'itp' is not judged"):
        rubric.judge_rubric("itp")
