"""LLM pre-annotation: requests for a segment's rows, reading the answers, one repair round, the final draft.

A segment is asked in chunks of ``rows_per_request`` rows (the whole segment is shown as context each time),
so the answer stays within an output budget. Every answer is checked with :func:`rules.check_rows`; an answer
that breaks rules (or cannot be read) goes back to the model once, with the violations listed, in the same
conversation. Of the two answers, the one with fewer violations is kept (the repaired one on a tie), and what
is still wrong is stored per row in ``draft.json`` for the reviewers, never silently fixed.

The draft keeps the model's values, except where a value cannot be loaded at all (a string where a list
belongs, a negative time): that field is left out and the row's violations say so, so the review app can still
open the segment. A row the model did not return is filled from the subtitles (times, speaker, words).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rescue_bench import media
from rescue_bench.annotate import prompt
from rescue_bench.annotate.rowfields import Answer, RowFields
from rescue_bench.annotate.rules import RuleContext, Violation, check_rows, skeleton
from rescue_bench.data.schema import Row
from rescue_bench.errors import DataError
from rescue_bench.records import Json, Request
from rescue_bench.tasks.parsing import json_values
from rescue_bench.workdir import Draft, DraftStatus, ManifestRow, SegmentManifest

TASK = "annotate"


@dataclass(frozen=True, slots=True)
class DraftSettings:
    frames: int = 0
    """Still frames per row sent as images (0: text only)."""
    rows_per_request: int = 20
    tokens_per_row: int = 700
    """Output budget per row; a request gets rows x this + 500, capped by ``max_tokens``."""
    max_tokens: int = 16000
    frame_width: int = 512
    jobs: int = 2
    """ffmpeg processes at once while extracting frames."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One request's worth of a segment: which rows it asks for, and the request."""

    segment: SegmentManifest
    indices: tuple[int, ...]
    request: Request


@dataclass(frozen=True, slots=True)
class Attempt:
    """One answer, read and checked."""

    text: str
    rows: dict[int, dict[str, Any]]
    """Rows by index, without ``split_note``."""
    notes: dict[int, str]
    """The model's ``split_note`` per row, where it gave one."""
    violations: tuple[Violation, ...]
    usable: bool
    """The answer held a readable ``rows`` list."""


@dataclass(slots=True)
class DraftResult:
    """A chunk's way through the rounds."""

    chunk: Chunk
    first: Attempt | None = None
    repaired: Attempt | None = None
    error: str | None = None

    @property
    def best(self) -> Attempt | None:
        if self.repaired is None or (self.first is not None and not self.repaired.usable):
            return self.first
        if (
            self.first is not None
            and self.first.usable
            and len(self.first.violations) < len(self.repaired.violations)
        ):
            return self.first
        return self.repaired


def chunk_indices(count: int, size: int) -> list[tuple[int, ...]]:
    """Row indices 1..count in consecutive chunks of at most ``size``.

    >>> chunk_indices(5, 2)
    [(1, 2), (3, 4), (5,)]
    """
    return [tuple(range(start, min(count, start + size - 1) + 1)) for start in range(1, count + 1, size)]


def build_request(
    segment: SegmentManifest,
    indices: Sequence[int],
    video_duration: float | None,
    settings: DraftSettings,
    frames: Mapping[int, Sequence[str]] | None = None,
) -> Request:
    """The first-round request for ``indices`` of ``segment`` (images in OpenAI content parts when given)."""
    text = prompt.user_text(segment, indices, video_duration)
    content: Json = text
    if frames:
        parts: list[Json] = [{"type": "text", "text": text}]
        for index in indices:
            urls = frames.get(index, ())
            row = segment.rows[index - 1]
            parts.append({"type": "text", "text": f"Row {index}: {len(urls)} frames over {_span(row)} s"})
            parts.extend({"type": "image_url", "image_url": {"url": url}} for url in urls)
        content = parts
    return Request(
        task=TASK,
        messages=(
            {"role": "system", "content": prompt.system_prompt(segment.scenario, bool(frames))},
            {"role": "user", "content": content},
        ),
        response_schema=prompt.answer_schema(segment.scenario, segment.participants, indices),
        instance_ids=(f"{segment.sample_id}::{TASK}::{indices[0]}-{indices[-1]}",),
        max_tokens=min(settings.max_tokens, settings.tokens_per_row * len(indices) + 500),
        prompt_hash=prompt.PROMPT_HASH,
    )


def _span(row: ManifestRow) -> str:
    return f"{row.end_time - row.start_time:.1f}"


def repair_request(chunk: Chunk, attempt: Attempt) -> Request:
    """The conversation so far, plus the list of what to fix."""
    listing = [f"row {v.row_index}: {v.text}" if v.row_index else v.text for v in attempt.violations]
    messages = (
        *chunk.request.messages,
        {"role": "assistant", "content": attempt.text},
        {"role": "user", "content": prompt.repair_text(listing, chunk.indices)},
    )
    return Request(
        task=TASK,
        messages=messages,
        response_schema=chunk.request.response_schema,
        instance_ids=chunk.request.instance_ids,
        max_tokens=chunk.request.max_tokens,
        prompt_hash=chunk.request.prompt_hash,
    )


def read_answer(text: str, indices: Sequence[int]) -> Attempt:
    """The rows of an answer by index, with answer-level violations (unreadable, unasked or missing rows)."""
    raw_rows = _rows_value(text)
    if raw_rows is None:
        problem = Violation(None, "", 'the answer is not a JSON object with a "rows" list')
        return Attempt(text, {}, {}, (problem,), False)
    rows: dict[int, dict[str, Any]] = {}
    notes: dict[int, str] = {}
    problems: list[Violation] = []
    for position, raw in enumerate(raw_rows):
        given = RowFields.model_validate(raw).row_index if isinstance(raw, dict) else raw
        index = _index(given) if isinstance(raw, dict) else None
        if index is None or index not in indices:
            shown = given
            problems.append(
                Violation(None, f"rows[{position}]", f"row_index {shown!r} is not a row asked for")
            )
        elif index in rows:
            problems.append(Violation(index, "", "the row appears twice in the answer; give it once"))
        else:
            row = dict(raw)
            note = row.pop("split_note", "")
            if isinstance(note, str) and note.strip():
                notes[index] = note.strip()
            rows[index] = row
    problems.extend(Violation(i, "", "missing from the answer") for i in indices if i not in rows)
    return Attempt(text, rows, notes, tuple(problems), True)


def _rows_value(text: str) -> list[Any] | None:
    for value in json_values(text):
        if isinstance(value, dict):
            try:
                return Answer.model_validate(value).rows
            except ValidationError:  # an object without a rows list: maybe a later value has one
                continue
        if isinstance(value, list) and value and all(isinstance(v, dict) and "row_index" in v for v in value):
            return value
    return None


def _index(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def evaluate(text: str, chunk: Chunk, ctx: RuleContext) -> Attempt:
    """Read an answer and check its rows against the rules."""
    attempt = read_answer(text, chunk.indices)
    if not attempt.usable:
        return attempt
    found = check_rows(attempt.rows, ctx)
    return Attempt(text, attempt.rows, attempt.notes, (*attempt.violations, *found), True)


def assemble(segment: SegmentManifest, results: Sequence[DraftResult], model: str) -> Draft:
    """The segment's draft: one loadable release row per subtitle row, and what is still wrong with each."""
    rows: list[dict[str, Json]] = []
    violations: dict[str, list[str]] = {}
    overall: list[str] = []
    usable = False
    for result in results:
        attempt = result.best
        usable = usable or (attempt is not None and attempt.usable)
        found = attempt.violations if attempt is not None else ()
        overall.extend(v.text for v in found if v.row_index is None)
        for index in result.chunk.indices:
            manifest_row = segment.rows[index - 1]
            raw = attempt.rows.get(index) if attempt is not None else None
            row, notes = (
                loadable_row(raw, index, manifest_row) if raw is not None else (skeleton(manifest_row), [])
            )
            listed = [v.text or "no usable row" for v in found if v.row_index == index] + notes
            if attempt is not None and index in attempt.notes:
                listed.append(f"should be split (model's note): {attempt.notes[index]}")
            if raw is None and not listed:
                listed.append("no usable row from the model; filled from the subtitles")
            if listed:
                violations[str(index)] = listed
            rows.append(row)
    status: DraftStatus = "violations"
    if not usable:
        status = "unusable"
    elif not violations and not overall:
        status = "clean"
    return Draft(model, tuple(rows), violations, status, tuple(overall))


def loadable_row(
    raw: Mapping[str, Any], index: int, manifest_row: ManifestRow
) -> tuple[dict[str, Json], list[str]]:
    """The row with fields that the loader cannot read left out (and listed), and times never negative."""
    row: dict[str, Json] = {"row_index": index, **{k: v for k, v in raw.items() if k != "row_index"}}
    notes: list[str] = []
    for name in ("start_time", "end_time"):
        value = row.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            row[name] = getattr(manifest_row, name)
            notes.append(f"{name}: negative ({value}); replaced by the subtitle time")
    for _ in range(len(row)):
        try:
            Row.model_validate(row)
            break
        except ValidationError as exc:
            bad = sorted({str(err["loc"][0]) for err in exc.errors() if err["loc"]} - {"row_index"})
            if not bad:
                break
            for key in bad:
                row.pop(key, None)
                notes.append(f"{key}: unreadable, left out of the draft (enter it during review)")
    return row, notes


def row_frames(
    root: Path, segment: SegmentManifest, indices: Sequence[int], settings: DraftSettings
) -> dict[int, list[str]]:
    """``settings.frames`` JPEG data URLs per row, from the rows' clips."""
    tools = media.find_tools()
    missing = [i for i in indices if not _clip(root, segment, i).is_file()]
    if missing:
        raise DataError(
            f"{segment.segment_id}: no clip for row(s) {', '.join(map(str, missing[:10]))}; "
            "re-run `annotate ingest` or draft without --frames"
        )

    def grab(index: int) -> list[str]:
        row = segment.rows[index - 1]
        clip = _clip(root, segment, index)
        width = settings.frame_width
        frames = media.extract_frames(
            clip, settings.frames, duration=row.duration_sec, max_width=width, tools=tools
        )
        return [media.data_url(image, "image/jpeg") for image in frames]

    with ThreadPoolExecutor(max_workers=settings.jobs) as pool:
        return dict(zip(indices, pool.map(grab, indices), strict=True))


def _clip(root: Path, segment: SegmentManifest, index: int) -> Path:
    clip = segment.rows[index - 1].clip_path
    return root / clip if clip else root / "__no_clip__"


@dataclass(slots=True)
class Counts:
    """What a drafting session did."""

    drafted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    requests: int = 0
    repairs: int = 0
    cached: int = 0
    rows: int = 0
    flagged_rows: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    """Tokens of replies this session received (not from the cache)."""
    priced_prompt_tokens: int = 0
    priced_completion_tokens: int = 0
    """The tokens already added to ``spent_usd`` (and to ``workdir.json``)."""
    spent_usd: float | None = None
    """This session's spend in dollars, when prices were given."""
    spent_total_usd: float | None = None
    """The spend over every session of the work directory, as ``workdir.json`` now records it."""
