"""The pre-annotation prompt (our own wording of the paper's rules) and the JSON schema of a drafted row.

The system message is fixed per scenario (and whether frames come with the request), so providers can cache
it; the user message carries the segment: who takes part and every row as the subtitles give it, with the rows
to annotate in this request marked. Label definitions come from :mod:`rescue_bench.taxonomy`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence

from rescue_bench.records import Json
from rescue_bench.tasks.prompts import label_block, template_hash
from rescue_bench.taxonomy import (
    RELATION_PATTERNS,
    STRATEGIES,
    THERAPIST,
    UTTERANCE_TYPES,
    Scenario,
    group_label,
    relation_labels,
    strategy_labels,
)
from rescue_bench.workdir import ManifestRow, SegmentManifest

SYSTEM = """\
You pre-annotate rows of a {scenario} therapy session for a research dataset. Human reviewers check \
every value you give, so be precise and never invent.

Input: the rows of one segment, cut from its subtitles: row_index, start and end time in seconds, the \
speaker where the subtitles name one, and the words. Annotate only the rows marked "annotate": true; the \
others are context.{frames}

Answer with one JSON object {{"rows": [...]}}: one object per row to annotate, in row order, with \
exactly the keys below. Write [] for an empty list and "" for an empty text. Never write null, "N/A", \
"unknown" or any other placeholder.

People (a closed set): the participants named in the request, "Therapist", and "{group}" for the \
{scenario} as a whole. Never use the therapist's own name, other group names, or people who are not on \
screen (those may appear only inside free text). Nobody targets themselves.

Keys of a row:
- row_index, start_time, end_time: copied from the input row. The subtitles are the ground truth for \
times; a row never leaves its subtitle span.
- primary_speaker: who speaks. Keep the speaker the subtitles name.
- target: whom the row is addressed to. In order of priority: the person whose words it directly \
answers; the person it names or speaks to; the other side of the ongoing exchange; whom the speaker \
looks or turns to; "{group}" only when the row is truly addressed to everyone, and then as the only \
target.
- dialogue_cleaned: the row's subtitle words, unchanged. You may drop a speaker label; never paraphrase, \
shorten or correct.
- utterance_type: for participants, one of {types}; for the therapist, "".
- background_dialogue: overlapping speech by others: [{{"speaker", "target": [...], "content"}}].
- tone_of_voice: how the words are said, in a few words.
- body_posture, facial_expressions, self_directed_behavior: [{{"person", "description"}}] for what is \
visible.
- interaction_behavior: gaze, touch or gestures aimed at others: [{{"initiator", "target": [...], \
"description"}}].
- internal_emotion: what people feel inside: [{{"person", "emotion_description", "intensity"}}], \
intensity an integer from 0 (none) to 10 (overwhelming).
- viewpoints_attitudes: views one person expresses about another: [{{"source", "target", "viewpoint", \
"attitude"}}].
- support_strategy: therapist rows only: [{{"provider": "Therapist", "target": [...], "strategy_type", \
"strategy_content"}}]; see the strategy rules.
- relation_cycle_state: the dominant relation pattern at this point, from the set below, or "" while \
none is clear; relation_cycle_reason: one short sentence; relation_cycle_evidence_rows: the row indices \
that show it.
- split_note: rows follow the subtitles one to one. If a row should really be two (the speaker turns to \
another person, or the row changes function half-way), annotate its main part and say where to split \
here; otherwise "".

Six fields are easy to forget: look for evidence for facial_expressions, self_directed_behavior, \
interaction_behavior, internal_emotion, viewpoints_attitudes and support_strategy on every row.

Strategy rules:
- At most one entry per row: the main function of the move, with the most specific label that fits, from \
the set below only.
- Backchannels ("Mm-hmm.", "Okay."), thin clarifications, hand-offs such as "And you?" and questions \
that only collect facts get [].
- Generic labels such as validation, perspective-taking or soothing are not strategies here.{family_ban}
- When two labels fit, prefer: {precedence}.
- Label the function, not the wording: {contrasts}
- For example, "Tell her, not me." asks for direct contact (enact); "Uh-huh." gets [].

Strategies ({scenario}):
{strategies}

Relation patterns ({scenario}):
{patterns}
mixed_transition is not a fallback for doubt: use it only when two strong patterns are both present, or \
at a visible turning point."""

FRAMES_NOTE = (
    " Still frames of the rows to annotate follow the text, labelled by row: use them for posture, faces, "
    "gestures and gaze."
)
NO_FRAMES_NOTE = (
    " You have no video: fill the visual fields only where the words themselves show the behaviour."
)
FAMILY_BAN = " goal_align and detach belong to couple work: never use them here."
PRECEDENCE: dict[Scenario, str] = {
    "couple": "safeguard over counterbalance; counterbalance, goal_align, detach and reframe over track; "
    "repair over join; enact over evoke",
    "family": "safeguard over counterbalance; boundary, reframe, join, counterbalance and enact over track; "
    "repair over join",
}
CONTRASTS: dict[Scenario, str] = {
    "couple": "mapping the sequence is track, giving it a shared relational meaning is reframe; deepening "
    "one partner's primary emotion is evoke, making it receivable by the other is join; restoring a "
    "partner's voice is counterbalance, protecting them right now is safeguard.",
    "family": "describing a pattern is track, changing roles, hierarchy or subsystems is boundary; "
    "restoring a member's voice is counterbalance, protecting them right now is safeguard; building the "
    "working alliance is join, mending a rupture is repair.",
}
REPAIR = """\
Your answer breaks these rules:
{listing}

Send the complete JSON again for rows {rows}: fix every problem listed and keep everything else as it was."""

PROMPT_HASH = template_hash(
    SYSTEM, FRAMES_NOTE, NO_FRAMES_NOTE, FAMILY_BAN, REPAIR, *PRECEDENCE.values(), *CONTRASTS.values()
)


@functools.lru_cache(maxsize=8)
def system_prompt(scenario: Scenario, with_frames: bool) -> str:
    return SYSTEM.format(
        scenario=scenario,
        group=group_label(scenario),
        frames=FRAMES_NOTE if with_frames else NO_FRAMES_NOTE,
        types=", ".join(UTTERANCE_TYPES),
        family_ban=FAMILY_BAN if scenario == "family" else "",
        precedence=PRECEDENCE[scenario],
        contrasts=CONTRASTS[scenario],
        strategies=label_block(STRATEGIES[scenario], details=False),
        patterns=label_block(RELATION_PATTERNS[scenario]),
    )


def user_text(segment: SegmentManifest, indices: Sequence[int], video_duration: float | None) -> str:
    """The segment as JSON lines, the rows of this request marked ``"annotate": true``."""
    group = group_label(segment.scenario)
    wanted = set(indices)
    head = [
        f"Segment {segment.segment_id}: a {segment.scenario} therapy session with "
        f'{", ".join(segment.participants)} and the Therapist; "{group}" means the {segment.scenario} '
        "as a whole.",
        f"Annotate rows {min(indices)}-{max(indices)} of {len(segment.rows)}."
        + (f" The video lasts {video_duration:g} s." if video_duration is not None else ""),
        "Rows (a null speaker means the subtitles do not name one):",
    ]
    lines = [json.dumps(_row_record(row, row.index in wanted), ensure_ascii=False) for row in segment.rows]
    return "\n".join([*head, *lines])


def _row_record(row: ManifestRow, annotate: bool) -> dict[str, Json]:
    return {
        "row_index": row.index, "start_time": row.start_time, "end_time": row.end_time,
        "speaker": row.speaker, "text": row.text, "annotate": annotate,
    }  # fmt: skip


def repair_text(listing: Sequence[str], indices: Sequence[int]) -> str:
    return REPAIR.format(
        listing="\n".join(f"- {line}" for line in listing), rows=f"{min(indices)}-{max(indices)}"
    )


# -- schema --------------------------------------------------------------------------------------------------


def _text() -> dict[str, Json]:
    return {"type": "string"}


def _names(names: Sequence[str]) -> dict[str, Json]:
    return {"type": "array", "items": {"type": "string", "enum": list(names)}}


def _objects(properties: Mapping[str, Json]) -> dict[str, Json]:
    item = {"type": "object", "properties": dict(properties), "required": list(properties),
            "additionalProperties": False}  # fmt: skip
    return {"type": "array", "items": item}


def row_schema(scenario: Scenario, participants: Sequence[str], indices: Sequence[int]) -> dict[str, Json]:
    """One drafted row: every release key, closed sets as enums (only keywords llama.cpp grammars support)."""
    entities = [*participants, THERAPIST, group_label(scenario)]
    people = {"type": "string", "enum": [*participants, THERAPIST]}
    entity = {"type": "string", "enum": entities}
    cue = _objects({"person": people, "description": _text()})
    strategy = _objects(
        {"provider": {"type": "string", "enum": [THERAPIST]}, "target": _names(entities),
         "strategy_type": {"type": "string", "enum": list(strategy_labels(scenario))},
         "strategy_content": _text()}
    )  # fmt: skip
    strategy["maxItems"] = 1
    properties: dict[str, Json] = {
        "row_index": {"type": "integer", "enum": list(indices)},
        "start_time": {"type": "number"}, "end_time": {"type": "number"},
        "primary_speaker": entity, "target": _names(entities), "dialogue_cleaned": _text(),
        "utterance_type": {"type": "string", "enum": ["", *UTTERANCE_TYPES]},
        "background_dialogue": _objects({"speaker": entity, "target": _names(entities), "content": _text()}),
        "tone_of_voice": _text(),
        "body_posture": cue, "facial_expressions": cue, "self_directed_behavior": cue,
        "interaction_behavior": _objects(
            {"initiator": people, "target": _names(entities), "description": _text()}
        ),
        "internal_emotion": _objects(
            {"person": people, "emotion_description": _text(),
             "intensity": {"type": "integer", "minimum": 0, "maximum": 10}}
        ),
        "viewpoints_attitudes": _objects(
            {"source": people, "target": entity, "viewpoint": _text(), "attitude": _text()}
        ),
        "support_strategy": strategy,
        "relation_cycle_state": {"type": "string", "enum": ["", *relation_labels(scenario)]},
        "relation_cycle_reason": _text(),
        "relation_cycle_evidence_rows": {"type": "array", "items": {"type": "integer"}},
        "split_note": _text(),
    }  # fmt: skip
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def answer_schema(scenario: Scenario, participants: Sequence[str], indices: Sequence[int]) -> dict[str, Json]:
    """``{"rows": [row, ...]}`` with exactly one row per index of the request."""
    rows = {
        "type": "array",
        "items": row_schema(scenario, participants, indices),
        "minItems": len(indices),
        "maxItems": len(indices),
    }
    return {
        "type": "object",
        "properties": {"rows": rows},
        "required": ["rows"],
        "additionalProperties": False,
    }
