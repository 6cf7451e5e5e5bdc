"""A tiny task for engine tests: "is the speaker of this row the therapist?" (yes/no), batches of 3.

It follows :class:`rescue_bench.tasks.base.Task` so the engine can be tested without the real tasks; the
prompt names each item as ``cK: <sample_id>#<row>: <speaker>: <text>`` so a fake server can answer it (see
:func:`oracle`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from rescue_bench.data.schema import Sample
from rescue_bench.metrics.spec import BINARY_YES_NO
from rescue_bench.records import Instance, Prediction, Request, Score, Shown
from rescue_bench.tasks.base import TaskConfig, TaskInfo
from rescue_bench.tasks.guesses import majority_label, random_label

PROMPT_HASH = "echo-v1"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answers": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "answer": {"enum": ["yes", "no"]}},
                "required": ["id", "answer"],
            },
        }
    },
    "required": ["answers"],
}
INFO = TaskInfo(
    name="echo",
    kind="binary",
    metrics=BINARY_YES_NO,
    paper_columns=(),
    default_batch_size=3,
    default_context_size=0,
    max_tokens=200,
    random_answer=random_label,
    majority_answers=majority_label,
)
_LINE = re.compile(r"^(c\d+): (\S+)#(\d+): ([^:]+):", re.MULTILINE)


def build(sample: Sample, cfg: TaskConfig) -> list[Instance]:
    return [
        Instance(
            f"{sample.sample_id}::{INFO.name}::{row.row_index}",
            INFO.name,
            sample.sample_id,
            sample.scenario,
            row.row_index,
            "yes" if row.is_therapist else "no",
            ("yes", "no"),
            Shown("dialogue", 0, speaker=row.speaker, extra={"text": row.text}),
            {"speaker": row.speaker},
        )
        for row in sample.rows
    ]


def render(batch: Sequence[Instance], cfg: TaskConfig) -> Request:
    lines = [
        f"c{k}: {inst.sample_id}#{inst.row_index}: {shown.speaker}: {shown.extra['text']}"
        for k, inst in enumerate(batch, start=1)
        if (shown := inst.context) is not None
    ]
    prompt = "Answer yes when the speaker is the therapist, else no. Reply in JSON.\n" + "\n".join(lines)
    return Request(
        task=INFO.name,
        messages=({"role": "user", "content": prompt},),
        response_schema=SCHEMA,
        instance_ids=tuple(i.id for i in batch),
        max_tokens=INFO.max_tokens,
        prompt_hash=PROMPT_HASH,
    )


def parse(text: str, batch: Sequence[Instance]) -> list[Prediction]:
    try:
        answers = {a["id"]: a.get("answer") for a in json.loads(text)["answers"]}
    except (ValueError, KeyError, TypeError) as exc:
        return [Prediction.failed(i.id, f"parse_failure: {exc.__class__.__name__}") for i in batch]
    out = []
    for k, inst in enumerate(batch, start=1):
        value = answers.get(f"c{k}")
        if value is None:
            out.append(Prediction.failed(inst.id, f"missing: c{k}"))
        elif value not in ("yes", "no"):
            out.append(Prediction(inst.id, value, False, (f"invalid_label: {value!r}",)))
        else:
            out.append(Prediction(inst.id, value, True))
    return out


def score(pred: Prediction, inst: Instance) -> Score:
    return Score(inst.id, {"correct": float(pred.valid and pred.value == inst.gold)})


def items(prompt: str) -> list[tuple[str, str, int, str]]:
    """(opaque id, sample id, row, speaker) of each item in a rendered prompt."""
    return [(m[1], m[2], int(m[3]), m[4]) for m in _LINE.finditer(prompt)]


def oracle(request: Any) -> str:
    """The right answer to a rendered prompt (a fake-server handler)."""
    return json.dumps(
        {
            "answers": [
                {"id": k, "answer": "yes" if speaker == "Therapist" else "no"}
                for k, _, _, speaker in items(request.text)
            ]
        }
    )
