"""A small invented work directory (no clips) and drafted rows that follow every rule."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from rescue_bench.annotate.rules import RuleContext
from rescue_bench.workdir import (
    ManifestRow,
    SegmentManifest,
    WorkdirInfo,
    write_info,
    write_manifest,
)

PEOPLE = ("Nora", "Eli")
LINES = (
    (0.5, 2.0, "Therapist", "What brings you both in today?"),
    (2.0, 4.25, "Nora", "He never plans anything with me."),
    (2.0, 4.25, "Eli", "That is not fair."),
    (4.5, 6.0, "Therapist", "Tell him, not me."),
    (6.0, 7.5, "Nora", "I just want one weekend."),
)


def manifest(segment_id: str = "ep_seg01", rows: int = len(LINES)) -> SegmentManifest:
    made = tuple(
        ManifestRow(i, start, end, speaker, text, cue=i)
        for i, (start, end, speaker, text) in enumerate(LINES[:rows], start=1)
    )
    return SegmentManifest(
        segment_id, f"ep/{segment_id}", "couple", PEOPLE, made[0].start_time, made[-1].end_time, made
    )


def make_workdir(root: Path, segment_ids: tuple[str, ...] = ("ep_seg01",)) -> Path:
    write_info(
        root, WorkdirInfo("couple", PEOPLE, "/videos/ep.mp4", "/videos/ep.srt", "2025-01-01T00:00:00Z", 9.0)
    )
    for segment_id in segment_ids:
        write_manifest(root, manifest(segment_id))
    return root


def context() -> RuleContext:
    segment = manifest()
    return RuleContext("couple", PEOPLE, {r.index: r for r in segment.rows}, 9.0)


def good_row(index: int) -> dict[str, Any]:
    """A drafted row for ``LINES[index - 1]`` that breaks no rule (with ``split_note``, as models send)."""
    start, end, speaker, text = LINES[index - 1]
    therapist = speaker == "Therapist"
    other = {"Nora": "Eli", "Eli": "Nora"}.get(speaker, "Nora")
    row: dict[str, Any] = {
        "row_index": index, "start_time": start, "end_time": end, "primary_speaker": speaker,
        "target": ["Couple"] if index == 1 else [other], "dialogue_cleaned": text,
        "utterance_type": "" if therapist else "accusation", "background_dialogue": [],
        "tone_of_voice": "even" if therapist else "tense", "body_posture": [],
        "facial_expressions": [{"person": speaker, "description": "looks at the floor"}],
        "self_directed_behavior": [],
        "interaction_behavior": [
            {"initiator": speaker, "target": [other], "description": "turns towards them"}
        ],
        "internal_emotion": [] if therapist else [
            {"person": speaker, "emotion_description": "feels unheard", "intensity": 6}
        ],
        "viewpoints_attitudes": [] if therapist else [
            {"source": speaker, "target": other, "viewpoint": "does not make room for me", "attitude": "hurt"}
        ],
        "support_strategy": [
            {"provider": "Therapist", "target": ["Nora"], "strategy_type": "enact",
             "strategy_content": "asks Nora to speak to Eli directly"}
        ] if index == 4 else [],
        "relation_cycle_state": "pursue_withdraw" if index > 1 else "",
        "relation_cycle_reason": "Nora presses, Eli defends" if index > 1 else "",
        "relation_cycle_evidence_rows": [2, 3] if index > 1 else [],
        "split_note": "",
    }  # fmt: skip
    return row


def good_rows(indices: list[int] | tuple[int, ...]) -> list[dict[str, Any]]:
    return [good_row(i) for i in indices]


def without_note(row: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(row)
    out.pop("split_note", None)
    return out


def broken_rows(indices: list[int]) -> list[dict[str, Any]]:
    """Rows 1-5 with three broken rules: a name outside the set, a generic strategy label, a paraphrase."""
    rows = good_rows(indices)
    rows[1]["target"] = ["Dr. Reed"]
    rows[3]["support_strategy"][0]["strategy_type"] = "validation"
    rows[4]["dialogue_cleaned"] = "I only want a weekend."
    return rows


def answer(rows: list[dict[str, Any]]) -> str:
    return json.dumps({"rows": rows})


def asked_rows(request: Any) -> list[int]:
    """The row indices a draft request (a fake server ``ChatRequest``) asks for: its schema's enum."""
    schema = request.schema or {}
    return list(schema["properties"]["rows"]["items"]["properties"]["row_index"]["enum"])
