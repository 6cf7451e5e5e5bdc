"""VP, Viewpoint Prediction: the views the current client speaker expresses about other people in the room.

Checkpoints (protocol section 7, paper App. C): client rows with at least one ``viewpoints_attitudes`` entry
whose source is the speaker and whose target and viewpoint are non-empty; at most ``checkpoints_per_sample``
evenly spaced ones per sample (no early cut-off). Gold is the list of all such entries.

The model sees the current row and up to ``N`` rows before it (``-1``: all of them), and answers a list of
``{source, target, viewpoint}``. Scores come from the judge (pairing 0-2 + viewpoint 0-4) and BERTScore
(:mod:`rescue_bench.tasks.vp_scoring`, with VP's options).
"""

from __future__ import annotations

import functools
import json
import random
from collections import Counter
from collections.abc import Sequence
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from rescue_bench.data.schema import Row, Sample
from rescue_bench.metrics import relational_gold as relational
from rescue_bench.metrics.spec import VIEWPOINT_SCORES
from rescue_bench.records import Instance, Json, Mode, Prediction, Request, Score, Shown
from rescue_bench.tasks import prompts
from rescue_bench.tasks.base import PaperColumn, TaskConfig, TaskInfo, make_instance
from rescue_bench.tasks.context import clean, pick_evenly, row_records, window
from rescue_bench.tasks.er import current_block, turn_meta
from rescue_bench.tasks.guesses import most_common, other_participants, rank_by_frequency, speaker_of
from rescue_bench.tasks.parsing import field, parse_batch, short
from rescue_bench.tasks.vp_scoring import JUDGE, Options, viewpoints_of
from rescue_bench.taxonomy import THERAPIST, Scenario, group_label

ANSWER_KEYS = ("viewpoints", "predicted_viewpoints")
VIEWPOINT_PHRASES: Final = (
    "does not listen to me",
    "is trying to understand me",
    "blames me for the problems",
    "cares about the family",
    "is not being honest",
    "is too critical",
)
"""Viewpoints of the random baseline; the source and target come from the instance."""

SYSTEM = """\
You identify viewpoints in a {scenario} therapy session.

Task: in each item the current row is spoken by a client. List the viewpoints this speaker expresses in \
that row about other people in the room: who holds the view (source: normally the speaker), whom it is about \
(target: {targets}), and what the view is.

Rules:
- Give every distinct viewpoint towards a different person.
- viewpoint: a short, concrete phrase in English, such as "he never takes my worries seriously".
- Use only the rows shown; nothing after the current row is known. Earlier rows only help resolve references.
- {context} {mode}

{line_format}

{answer}"""
SHAPE = (
    '{"predictions": [{"id": "c1", "viewpoints": [{"source": "<speaker>", "target": "<person>", '
    '"viewpoint": "..."}], "reason": "..."}]}'
)
PEOPLE_TARGETS = "another person present: a participant or the Therapist"
"""The targets offered by default: people, as the reference's "another on-screen person"."""
GROUP_TARGETS = (
    'another person present: a participant, the Therapist, or "{group}" for the {scenario} as a whole'
)
"""The targets with ``--vp-group-target``."""
PROMPT_HASH = prompts.template_hash(SYSTEM, SHAPE, prompts.SHARED_TEXT, PEOPLE_TARGETS, GROUP_TARGETS)


def gold_viewpoints(row: Row) -> list[dict[str, Json]]:
    """The speaker's own viewpoints with a target and a text, as ``{source, target, viewpoint, attitude}``."""
    out: list[dict[str, Json]] = []
    for item in row.viewpoints_attitudes:
        target, text = clean(item.target), clean(item.viewpoint)
        if clean(item.source) == row.speaker and target and text:
            out.append(
                {"source": row.speaker, "target": target, "viewpoint": text, "attitude": clean(item.attitude)}
            )
    return out


def build(sample: Sample, cfg: TaskConfig) -> list[Instance]:
    size = cfg.shown_size(INFO)
    records = row_records(sample, cfg.mode, cfg.rows)
    eligible = [(row, gold) for row in sample.rows if row.is_client and (gold := gold_viewpoints(row))]
    options = cfg.options_for(INFO.name, Options)
    group = (group_label(sample.scenario),) if options.group_target else ()
    people = (*sample.participants, THERAPIST, *group)
    out = []
    most = options.checkpoints_per_sample
    for row, gold in pick_evenly(eligible, most, key=lambda pair: pair[0].row_index):
        r = row.row_index
        context = Shown(
            cfg.mode,
            size,
            rows=window(records, r, size),
            current=records[r - 1],
            speaker=row.speaker,
            participants=sample.participants,
        )
        meta = {
            "speaker": row.speaker,
            "participants": list(sample.participants),
            "position": round(r / len(sample.rows), 4),
            **turn_meta(row),
        }
        out.append(make_instance(sample, INFO.name, r, gold, candidates=people, context=context, meta=meta))
    return out


@functools.lru_cache(maxsize=64)
def system_prompt(scenario: Scenario, mode: Mode, size: int, group: bool = False) -> str:
    """The VP system message; ``group`` offers the group label as a target too (``--vp-group-target``)."""
    targets = (
        GROUP_TARGETS.format(group=group_label(scenario), scenario=scenario) if group else PEOPLE_TARGETS
    )
    return SYSTEM.format(
        scenario=scenario,
        targets=targets,
        **prompts.shared_parts(mode, size, "the current row", SHAPE),
    )


def render(batch: Sequence[Instance], cfg: TaskConfig) -> Request:
    shown, first = prompts.batch_shown(batch, INFO), batch[0]
    system = system_prompt(
        first.scenario, shown.mode, shown.size, group_label(first.scenario) in first.candidates
    )
    header = prompts.people_header(batch, shown)
    blocks = [current_block(f"c{i}", inst) for i, inst in enumerate(batch, start=1)]
    person = {"type": "string", "enum": list(dict.fromkeys(first.candidates))}
    entry = {
        "type": "object",
        "properties": {
            "source": person,
            "target": person,
            "viewpoint": {"type": "string", "maxLength": prompts.REASON_MAX_LENGTH},
        },
        "required": ["source", "target", "viewpoint"],
        "additionalProperties": False,
    }
    fields = {"viewpoints": {"type": "array", "items": entry}}
    return prompts.request(INFO, batch, system, prompts.user_message(header, blocks), fields, PROMPT_HASH)


class ReplyEntry(BaseModel):
    """One viewpoint entry as a model wrote it: any JSON in each field (cleaned into text by the reader),
    other keys ignored (the reply is the model's, not ours)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    source: Json = None
    target: Json = None
    viewpoint: Json = None


def _entry(raw: object) -> ReplyEntry | None:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            return None
    return ReplyEntry.model_validate(raw) if isinstance(raw, dict) else None


def read_viewpoints(raw: object, speaker: str) -> tuple[list[dict[str, Json]], list[str]]:
    """``{source, target, viewpoint}`` entries (source defaults to ``speaker``); unusable entries are noted.

    >>> entries = [{"target": "Ben", "viewpoint": "never listens"}, {"target": "Ben"}]
    >>> values, notes = read_viewpoints(entries, "Ana")
    >>> values
    [{'source': 'Ana', 'target': 'Ben', 'viewpoint': 'never listens'}]
    >>> notes
    ['dropped: entry 2 has no target or viewpoint']
    """
    entries = raw if isinstance(raw, list) else [raw]
    out: list[dict[str, Json]] = []
    notes: list[str] = []
    for position, item in enumerate(entries, start=1):
        entry = _entry(item)
        target = clean(entry.target) if entry else ""
        text = clean(entry.viewpoint) if entry else ""
        if entry is None or not target or not text:
            notes.append(f"dropped: entry {position} has no target or viewpoint")
            continue
        out.append({"source": clean(entry.source) or speaker, "target": target, "viewpoint": text})
    return out, notes


def _read(item: dict[str, Any], inst: Instance) -> Prediction:
    present, raw = field(item, ANSWER_KEYS)
    if not present or raw is None:
        return Prediction.failed(inst.id, "parse_failure: no viewpoints in the answer")
    if not isinstance(raw, list | dict | str):
        return Prediction.failed(inst.id, f"parse_failure: viewpoints {short(raw)} is not a list")
    value, notes = read_viewpoints(raw, str(prompts.shown(inst).speaker))
    return Prediction(inst.id, value, True, tuple(notes))


def parse(text: str, batch: Sequence[Instance]) -> list[Prediction]:
    return parse_batch(text, batch, ANSWER_KEYS, _read)


def score(pred: Prediction, inst: Instance) -> Score:
    """No formula score: judging adds ``pairing``, ``viewpoint``, ``total``, ``llm``, ``bertscore_f1``."""
    return Score(inst.id, {})


def random_answer(inst: Instance, rng: random.Random) -> Prediction:
    """One viewpoint of the speaker, from :data:`VIEWPOINT_PHRASES`, about a random other participant."""
    others = other_participants(inst)
    if not others:
        return Prediction.failed(inst.id, "missing: the instance names no participant other than the speaker")
    viewpoint = {
        "source": speaker_of(inst),
        "target": rng.choice(others),
        "viewpoint": rng.choice(VIEWPOINT_PHRASES),
    }
    return Prediction(inst.id, [viewpoint], True)


def majority_answers(group: Sequence[Instance]) -> list[Prediction]:
    """The group's commonest gold viewpoint, about the instance's participant most often a gold target."""
    items = [item for inst in group for item in viewpoints_of(inst.gold)]
    viewpoint = most_common(item.viewpoint for item in items)
    targets = Counter(item.target for item in items)
    preds = []
    for inst in group:
        target = rank_by_frequency(tuple(other_participants(inst)), targets)
        if not target or not viewpoint:
            preds.append(Prediction.failed(inst.id, "missing: no gold viewpoint or no other participant"))
            continue
        answer = [{"source": speaker_of(inst), "target": target[0], "viewpoint": viewpoint[0]}]
        preds.append(Prediction(inst.id, answer, True))
    return preds


INFO = TaskInfo(
    prompt_hash=PROMPT_HASH,
    name="vp",
    kind="generation",
    metrics=VIEWPOINT_SCORES,
    paper_columns=(PaperColumn("VP LLM", "llm", 1.0, 2), PaperColumn("VP BERT", "bertscore_f1", 1.0, 4)),
    default_batch_size=5,
    default_context_size=3,
    max_tokens=2200,
    random_answer=random_answer,
    majority_answers=majority_answers,
    judge=JUDGE,
    instance_score=("total", 6.0),
    video=True,
    options=Options,
    relation_intensive=True,
    paper_position=6,
    analyses=(relational.TARGET_COUNT,),
)
