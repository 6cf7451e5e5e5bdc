"""Prompt pieces shared by the task templates: mode and context sentences, label blocks, schemas, hashes.

Every request has two messages: a system message with everything that is fixed for a task, scenario, mode and
context size (providers cache this shared prefix), then a user message with the variable part (who takes part,
the items and their transcripts). Items are named only by opaque per-request ids ``c1``, ``c2``, ...
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence

from rescue_bench.records import Instance, Json, Mode, Request, RowRecord, Shown
from rescue_bench.tasks.base import TaskInfo
from rescue_bench.tasks.context import clean, transcript
from rescue_bench.taxonomy import RELATION_PATTERNS, STRATEGIES, Label, Scenario, group_label

REASON_MAX_LENGTH = 200

LINE_FORMAT = (
    "Transcript lines read `[row] speaker -> addressees (start-end s): words`; cues follow after ` | `: "
    "`background:` for overlapping speech{extra}. Fields with nothing to report are left out."
)
_AUDIO_CUES = ", `tone:` for tone of voice"
_VISUAL_CUES = (
    ", `posture:`, `face:` (facial expression), `self:` (self-directed behaviour) and `interaction:` "
    "(directed gaze, touch or gesture), each as `person: description`"
)
MODE_GUIDANCE: dict[Mode, str] = {
    "dialogue": "Mode: dialogue. You have the words only; judge from what is said, by whom and to whom.",
    "audio": (
        "Mode: audio. Besides the words you have each row's tone of voice; there is no visual information."
    ),
    "visual": (
        "Mode: visual. Besides the words you have visual cues (posture, facial expression, self-directed and "
        "interaction behaviour); there is no information on tone of voice."
    ),
    "audiovisual": (
        "Mode: audiovisual. Besides the words you have both the tone of voice and the visual cues."
    ),
    "video": (
        "Mode: video. Video clips of the shown rows may be attached in row order; use what you see and hear "
        "in them together with the words."
    ),
}
CONTEXT_SENTENCES = {
    "all": "Each item shows every row of the session before {point}.",
    "none": "No rows before {point} are shown.",
    "some": "Each item shows at most the {n} rows before {point}.",
}
ANSWER_RULES = (
    "Answer with one JSON object and nothing else (no markdown), in this shape:\n{shape}\n"
    "Give exactly one entry per item, with the item's id exactly as given (c1, c2, ...). "
    "Keep each reason to one short sentence grounded in the rows shown."
)
SHARED_TEXT = json.dumps(
    [
        LINE_FORMAT,
        _AUDIO_CUES,
        _VISUAL_CUES,
        MODE_GUIDANCE,
        CONTEXT_SENTENCES,
        ANSWER_RULES,
        REASON_MAX_LENGTH,
    ],
    sort_keys=True,
)


def line_format(mode: Mode) -> str:
    """What a transcript line holds in ``mode``."""
    extra = ""
    if mode in ("audio", "audiovisual"):
        extra += _AUDIO_CUES
    if mode in ("visual", "audiovisual"):
        extra += _VISUAL_CUES
    return LINE_FORMAT.format(extra=extra)


def context_sentence(size: int, point: str) -> str:
    """How much earlier conversation the items show, before ``point``.

    >>> context_sentence(3, "the decision point")
    'Each item shows at most the 3 rows before the decision point.'
    """
    key = "all" if size < 0 else "none" if size == 0 else "some"
    return CONTEXT_SENTENCES[key].format(n=size, point=point)


def label_block(labels: Sequence[Label], *, details: bool = True) -> str:
    """One bullet per label (``- key (Name): definition``), with use / do-not-use hints when ``details``.

    >>> print(label_block([Label("a", "A", "first.", ("x",), ("y",))]))
    - a (A): first.
      use when: x
      not when: y
    """
    lines: list[str] = []
    for label in labels:
        lines.append(f"- {label.key} ({label.name}): {label.definition}")
        if details and label.use_when:
            lines.append(f"  use when: {'; '.join(label.use_when)}")
        if details and label.do_not_use_when:
            lines.append(f"  not when: {'; '.join(label.do_not_use_when)}")
    return "\n".join(lines)


def answer_rules(shape: str) -> str:
    return ANSWER_RULES.format(shape=shape)


def shared_parts(mode: Mode, size: int, point: str, shape: str) -> dict[str, str]:
    """The placeholders every task's system template has: ``context`` (how much is shown before ``point``),
    ``mode``, ``line_format`` and ``answer`` (the reply's ``shape``)."""
    return {
        "context": context_sentence(size, point),
        "mode": MODE_GUIDANCE[mode],
        "line_format": line_format(mode),
        "answer": answer_rules(shape),
    }


def taxonomy_text() -> str:
    """All label definitions, so that a taxonomy edit changes every prompt hash."""
    data = {
        "patterns": {s: [list(_label_fields(x)) for x in RELATION_PATTERNS[s]] for s in RELATION_PATTERNS},
        "strategies": {s: [list(_label_fields(x)) for x in STRATEGIES[s]] for s in STRATEGIES},
    }
    return json.dumps(data, sort_keys=True)


def _label_fields(label: Label) -> Iterable[Json]:
    return (label.key, label.name, label.definition, list(label.use_when), list(label.do_not_use_when))


def template_hash(*parts: str) -> str:
    """sha256 (hex) of a task's template texts: recorded by runs as the prompt version.

    >>> len(template_hash("a", "b")), template_hash("a", "b") == template_hash("ab")
    (64, False)
    """
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\x00")
    return digest.hexdigest()


def answer_schema(ids: Sequence[str], fields: dict[str, Json]) -> dict[str, Json]:
    """JSON schema ``{"predictions": [{"id", <fields>, "reason"}]}`` with one entry per id.

    Only object/array/string/integer/enum keywords (and length bounds): llama.cpp turns it into a grammar.
    """
    item: dict[str, Json] = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "enum": list(ids)},
            **fields,
            "reason": {"type": "string", "maxLength": REASON_MAX_LENGTH},
        },
        "required": ["id", *fields, "reason"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "predictions": {"type": "array", "items": item, "minItems": len(ids), "maxItems": len(ids)},
        },
        "required": ["predictions"],
        "additionalProperties": False,
    }


def ranking_field(labels: Sequence[str], *, top: int = 3) -> dict[str, Json]:
    """A ranked list of up to ``top`` labels from a closed set (at most as many as there are labels)."""
    return {
        "type": "array",
        "items": {"type": "string", "enum": list(labels)},
        "minItems": 1,
        "maxItems": min(top, len(labels)),
    }


def messages(system: str, user: str) -> tuple[dict[str, Json], ...]:
    return ({"role": "system", "content": system}, {"role": "user", "content": user})


def group_noun(scenario: Scenario) -> str:
    return "partners" if scenario == "couple" else "family members"


def session_line(batch: Sequence[Instance]) -> str:
    """The first line of every user message: scenario and number of items."""
    return f"{batch[0].scenario.capitalize()} therapy session, {len(batch)} item(s)."


def people_line(participants: Sequence[str], group: str) -> str:
    """``People: Ana, Ben (and the therapist); "Couple" means the couple as a whole.``"""
    names = ", ".join(n for n in (clean(p) for p in participants) if n) or "(not listed)"
    return f'People: {names} (and the Therapist); "{group}" means the {group.lower()} as a whole.'


def shown(inst: Instance) -> Shown:
    """What ``build`` gave ``inst`` to show (``ValueError`` for an instance built without it)."""
    if inst.context is None:
        raise ValueError(f"{inst.task}: instance {inst.id} was built without a context to show")
    return inst.context


def batch_shown(batch: Sequence[Instance], info: TaskInfo) -> Shown:
    """What the first item of a checked batch shows (:func:`check_batch`): its mode, size and people hold
    for every item of the batch."""
    check_batch(batch, info.name)
    return shown(batch[0])


def people_header(batch: Sequence[Instance], shown: Shown) -> list[str]:
    """The header lines of a batch that names its people: the session, then who takes part."""
    return [session_line(batch), people_line(shown.participants, group_label(batch[0].scenario))]


def check_batch(batch: Sequence[Instance], task: str) -> None:
    """A batch is non-empty, of one task and of one sample (prompts show one conversation)."""
    if not batch:
        raise ValueError(f"{task}: cannot render an empty batch")
    if any(inst.task != task for inst in batch):
        raise ValueError(f"{task}: batch holds instances of another task")
    if len({inst.sample_id for inst in batch}) != 1:
        raise ValueError(f"{task}: a batch must stay within one sample")


def rows_text(records: Sequence[RowRecord], empty: str = "(no earlier rows shown)") -> str:
    return transcript(records) or empty


def item_block(opaque: str, title: str, body: Sequence[str]) -> str:
    return f"Item {opaque} ({title}):\n" + "\n".join(body)


def user_message(header: Sequence[str], blocks: Sequence[str]) -> str:
    return "\n".join(header) + "\n\n" + "\n\n".join(blocks)


def request(
    info: TaskInfo,
    batch: Sequence[Instance],
    system: str,
    user: str,
    fields: dict[str, Json],
    prompt_hash: str,
) -> Request:
    """The request of ``batch``: its two messages, the answer schema of its ids and the task's output cap."""
    ids = tuple(f"c{i}" for i in range(1, len(batch) + 1))
    return Request(
        task=info.name,
        messages=messages(system, user),
        response_schema=answer_schema(ids, fields),
        instance_ids=tuple(inst.id for inst in batch),
        max_tokens=info.max_tokens,
        prompt_hash=prompt_hash,
    )
