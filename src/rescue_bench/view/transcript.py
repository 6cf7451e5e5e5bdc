"""What the model saw for one instance: the conversation (speakers, the rows shown, the target row) and the
messages of its request, rebuilt from the run's data with the task's own ``build`` and ``render``. They are
the exact messages sent only when today's data has the dataset hash the run recorded and the prompt template
is unchanged; otherwise the page says what they were rebuilt from and that they may differ.

The batch is the one the request record names (``requests.jsonl``), else the run's batching of the instance's
conversation (batches never cross a conversation, so rebuilding one conversation is exact). When the task's
prompt template changed since the run, the messages are today's and the page says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rescue_bench.data.schema import Sample
from rescue_bench.errors import BenchError
from rescue_bench.records import Instance
from rescue_bench.tasks import get_task, make_batches
from rescue_bench.tasks.context import chat_message, row_index_of, shown_context
from rescue_bench.view.data import ReplyRecord, Source

THERAPIST = "Therapist"


@dataclass(frozen=True, slots=True)
class Turn:
    row_index: int
    speaker: str
    text: str
    side: str
    """``therapist``, ``a``, ``b``, ``c``...: tells the speakers apart (a CSS class)."""
    shown: bool
    """Whether the model saw this row."""
    target: bool


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    content: str


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """The instance as the run built it, or why it could not be rebuilt."""

    turns: tuple[Turn, ...] = ()
    messages: tuple[Message, ...] = ()
    schema: str = ""
    batch: tuple[str, ...] = ()
    """Instance ids of the request, in order (the prompt calls them c1, c2, ...)."""
    notes: tuple[str, ...] = ()
    problem: str | None = None
    origin: str = ""
    """What the transcript and messages were rebuilt from (:func:`~rescue_bench.view.data.data_note`)."""
    shown: tuple[int, ...] = ()
    """The rows the model saw."""
    target: int | None = None
    """The instance's own row."""
    exact: bool = False
    """Same data (recorded hash) and prompt template as the run: these are the messages that were sent."""


def _sides(sample: Sample) -> dict[str, str]:
    letters = "abcdefgh"
    sides = {name: letters[i % len(letters)] for i, name in enumerate(sample.participants)}
    sides[THERAPIST] = "therapist"
    return sides


def _shown_rows(instance: Instance) -> set[int]:
    """The rows the instance's context shows the model (its current row included when the task shows it)."""
    shown = shown_context(instance.context)
    rows = [*shown.rows, *([shown.current] if shown.current is not None else [])]
    return {row_index_of(r) for r in rows if "row_index" in r}


def conversation(sample: Sample, instance: Instance) -> tuple[Turn, ...]:
    """Every row of the conversation up to the target row, marked as shown to the model or not."""
    sides = _sides(sample)
    shown = _shown_rows(instance)
    return tuple(
        Turn(
            row_index=row.row_index,
            speaker=row.primary_speaker or "?",
            text=row.dialogue_cleaned or "",
            side=sides.get(row.primary_speaker or "", "other"),
            shown=row.row_index in shown,
            target=row.row_index == instance.row_index,
        )
        for row in sample.rows
        if row.row_index <= instance.row_index
    )


def _content(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2)


def _batch(
    instance: Instance, built: Sequence[Instance], size: int, reply: ReplyRecord | None
) -> list[Instance]:
    by_id = {i.id: i for i in built}
    if reply is not None and reply.instance_ids and all(i in by_id for i in reply.instance_ids):
        return [by_id[i] for i in reply.instance_ids]
    for batch in make_batches(built, size):
        if any(i.id == instance.id for i in batch):
            return batch
    return [instance]


def rebuild(
    source: Source,
    task_name: str,
    sample_id: str,
    instance_id: str,
    reply: ReplyRecord | None,
    *,
    turns: bool = True,
) -> Rebuilt:
    """The conversation and messages of one instance (a :class:`Rebuilt` with ``problem`` when impossible);
    ``turns`` false leaves out the conversation's turns (:attr:`Rebuilt.shown` and ``target`` still say
    which rows the model saw)."""
    if source.problem:
        return Rebuilt(problem=source.problem)
    sample = source.samples.get(sample_id)
    if sample is None:
        return Rebuilt(problem=f"sample {sample_id!r} is not in the run's data (was the data changed?)")
    try:
        task = get_task(task_name)
        key = (task_name, sample_id)
        if key not in source.built:
            source.built[key] = task.build(sample, source.cfg)
        built: list[Instance] = source.built[key]
        instance = next((i for i in built if i.id == instance_id), None)
        if instance is None:
            return Rebuilt(problem=f"{instance_id} is no longer built from the run's data")
        size = source.batch_sizes.get(task_name, task.INFO.default_batch_size)
        batch = _batch(instance, built, size, reply)
        rendered = ("render", task_name, *(i.id for i in batch))
        if rendered not in source.built:  # instances of one batch share its request
            request = task.render(batch, source.cfg)
            source.built[rendered] = (
                request.prompt_hash,
                tuple(Message(m.role, _content(m.content)) for m in map(chat_message, request.messages)),
                json.dumps(request.response_schema, ensure_ascii=False, indent=2),
            )
        prompt_hash, messages, schema = source.built[rendered]
    except BenchError as exc:
        return Rebuilt(problem=f"the instance cannot be rebuilt: {exc}")
    notes = []
    recorded = source.prompt_hashes.get(task_name)
    same_prompt = not (recorded and prompt_hash and recorded != prompt_hash)
    if not same_prompt:
        notes.append("The task's prompt template changed since this run: the messages below are today's.")
    return Rebuilt(
        turns=conversation(sample, instance) if turns else (),
        shown=tuple(sorted(_shown_rows(instance))),
        target=instance.row_index,
        messages=messages,
        schema=schema,
        batch=tuple(i.id for i in batch),
        notes=tuple(notes),
        origin=source.origin,
        exact=source.exact and same_prompt,
    )


def transcript_hit(texts: Mapping[str, Sequence[tuple[int, str]]], needle: str) -> dict[str, int]:
    """Per conversation, the first row whose text contains ``needle`` (a row the instances from there on saw).

    >>> transcript_hit({"s": [(1, "ann: hi"), (2, "bo: no way")]}, "way")
    {'s': 2}
    """
    out: dict[str, int] = {}
    for sample_id, rows in texts.items():
        for row_index, text in rows:
            if needle in text:
                out[sample_id] = row_index
                break
    return out
