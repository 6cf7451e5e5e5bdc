"""A small fictional annotation work directory (invented people and words), as `annotate` writes it.

Used by the review tests and by the docs screenshots.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

COUPLE = ("Mara", "Tom")
FAMILY = ("Ines", "Rafa", "Lucia")


def _row(
    index: int, start: float, end: float, speaker: str, target: list[str], text: str, **fields: Any
) -> dict[str, Any]:
    return {
        "row_index": index,
        "start_time": start,
        "end_time": end,
        "primary_speaker": speaker,
        "target": target,
        "dialogue_cleaned": text,
        **fields,
    }


def couple_rows() -> list[dict[str, Any]]:
    return [
        _row(
            1,
            0.0,
            3.5,
            "Therapist",
            ["Couple"],
            "What brings the two of you here this week?",
            tone_of_voice="warm, even",
            body_posture=[{"person": "Therapist", "description": "open posture"}],
            support_strategy=[
                {
                    "provider": "Therapist",
                    "target": ["Couple"],
                    "strategy_type": "goal_align",
                    "strategy_content": "invites both partners to name a shared goal",
                }
            ],
            relation_cycle_state="pursue_withdraw",
            relation_cycle_reason="Mara presses, Tom retreats",
            relation_cycle_evidence_rows=[2, 3],
        ),
        _row(
            2,
            3.5,
            8.0,
            "Mara",
            ["Therapist"],
            "He never listens when I bring up the garden plans.",
            utterance_type="accusation",
            tone_of_voice="sharp, fast",
            body_posture=[{"person": "Mara", "description": "leans forward"}],
            facial_expressions=[{"person": "Mara", "description": "frowning"}],
            self_directed_behavior=["twists her ring"],
            interaction_behavior=[{"initiator": "Mara", "target": ["Tom"], "description": "points at Tom"}],
            internal_emotion=[
                {"person": "Mara", "emotion_description": "frustrated and unheard", "intensity": 7}
            ],
            viewpoints_attitudes=[
                {
                    "source": "Mara",
                    "target": "Tom",
                    "viewpoint": "Tom does not care about her plans",
                    "attitude": "negative",
                }
            ],
            relation_cycle_state="pursue_withdraw",
            relation_cycle_reason="criticism met by silence",
            relation_cycle_evidence_rows=[2],
            annotator_note="kept through every save",
        ),
        _row(
            3,
            8.0,
            11.5,
            "Tom",
            ["Mara"],
            "I do listen. I just need a minute to think.",
            utterance_type="defense",
            tone_of_voice="quiet",
            internal_emotion=[{"person": "Tom", "emotion_description": "defensive", "intensity": "5"}],
            relation_cycle_state="pursue_withdraw",
        ),
        _row(
            4,
            11.5,
            15.0,
            "Therapist",
            ["Tom"],
            "Tom, could you tell Mara directly what that minute is for?",
            support_strategy=[
                {
                    "provider": "Therapist",
                    "target": ["Tom"],
                    "strategy_type": "enact",
                    "strategy_content": "asks Tom to speak to Mara",
                }
            ],
            relation_cycle_state="repair_softening",
        ),
    ]


def family_rows() -> list[dict[str, Any]]:
    return [
        _row(
            1,
            0.0,
            4.0,
            "Ines",
            ["Therapist"],
            "Rafa stopped talking to us after the move.",
            utterance_type="disclosure",
            internal_emotion=[{"person": "Ines", "emotion_description": "worried", "intensity": 6}],
            relation_cycle_state="pursue_withdraw",
        ),
        _row(
            2,
            4.0,
            7.0,
            "Rafa",
            ["Ines"],
            "Because every talk turns into a lecture.",
            utterance_type="accusation",
            relation_cycle_state="escalation_conflict",
        ),
        _row(
            3,
            7.0,
            10.0,
            "Therapist",
            ["Family"],
            "Let's hear how each of you sees the move.",
            support_strategy=[
                {
                    "provider": "Therapist",
                    "target": ["Family"],
                    "strategy_type": "track",
                    "strategy_content": "follows the sequence",
                }
            ],
            relation_cycle_state="escalation_conflict",
        ),
    ]


SEGMENTS = {
    "couple_s01": ("couple", COUPLE, "demo_couple/ep01/couple_s01", couple_rows),
    "family_s01": ("family", FAMILY, "demo_family/ep01/family_s01", family_rows),
}


def write_workdir(root: Path, clip: bytes | None = b"\x00" * 4096) -> Path:
    """Write the work directory; each row gets ``clip`` as its clip file (``None``: no clip files)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "workdir.json").write_text(
        json.dumps(
            {
                "format": 1,
                "scenario": "couple",
                "participants": list(COUPLE),
                "video": "demo.mp4",
                "subtitles": "demo.srt",
                "created": "2025-01-01T00:00:00Z",
            }
        ),
        encoding="utf-8",
    )
    for segment_id, (scenario, people, sample_id, rows_of) in SEGMENTS.items():
        rows = rows_of()
        seg_dir = root / "segments" / segment_id
        seg_dir.mkdir(parents=True, exist_ok=True)
        manifest_rows = []
        for row in rows:
            clip_path = f"clips/{segment_id}/row_{row['row_index']:04d}.mp4"
            if clip is not None:
                (root / clip_path).parent.mkdir(parents=True, exist_ok=True)
                (root / clip_path).write_bytes(clip)
            manifest_rows.append(
                {
                    "index": row["row_index"],
                    "start_time": row["start_time"],
                    "end_time": row["end_time"],
                    "speaker": row["primary_speaker"],
                    "text": row["dialogue_cleaned"],
                    "clip_path": clip_path,
                    "duration_sec": row["end_time"] - row["start_time"],
                }
            )
        manifest = {
            "segment_id": segment_id,
            "sample_id": sample_id,
            "scenario": scenario,
            "participants": list(people),
            "start_time": rows[0]["start_time"],
            "end_time": rows[-1]["end_time"],
            "rows": manifest_rows,
        }
        (seg_dir / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        draft = {
            "model": "fake/drafter",
            "status": "violations",
            "rows": rows,
            "violations": {"3": ["tone_of_voice is vague"]},
            "segment_violations": ["no relation pattern changes in the segment"],
        }
        (seg_dir / "draft.json").write_text(json.dumps(draft, indent=1), encoding="utf-8")
    return root
