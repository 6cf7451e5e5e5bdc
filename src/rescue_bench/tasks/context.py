"""Transcript rendering shared by all tasks: one compact line per row, per mode, and one context-window rule.

A row becomes one deterministic line, for example::

    [12] Nadia -> Tom (61.2-66s): I told you twice. | tone: sharp | face: Nadia: narrows eyes

Empty fields are left out, and no key is repeated. What a line carries depends on the mode (protocol
section 1.2):

* ``dialogue`` and ``video``: speaker, addressees, time, words, overlapping background speech
  (``video`` attaches clips later, by ``row_index``);
* ``audio``: + tone of voice;
* ``visual``: + posture, facial expressions, self-directed behaviour, interaction behaviour;
* ``audiovisual``: both.

Rows are rendered once per sample and mode for a task config (:func:`row_records` keeps them in the config's
:class:`~rescue_bench.tasks.base.RowCache`) and shared by every instance built from that sample with it; an
instance's context holds references to these records, never copies.

Context window (:func:`window`): ``-1`` all rows before the cut, ``0`` none, ``N`` the last ``N`` rows
before it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from rescue_bench.data.schema import Cue, Row, Sample
from rescue_bench.records import ChatMessage as ChatMessage  # re-exported for the readers of prompts
from rescue_bench.records import Mode, RowRecord, Shown
from rescue_bench.records import chat_message as chat_message
from rescue_bench.tasks.base import RenderedRows, RowCache

T = TypeVar("T")

AUDIO_MODES: frozenset[str] = frozenset({"audio", "audiovisual"})
VISUAL_MODES: frozenset[str] = frozenset({"visual", "audiovisual"})

_WORD = re.compile(r"[A-Za-z0-9']+")


def clean(text: object) -> str:
    """A string with runs of whitespace (newlines included) collapsed to one space; non-strings give ``""``.

    >>> clean("  two\\n lines ")
    'two lines'
    """
    # str.split() splits at exactly the characters the regex \s matches (every code point checked), and at
    # 4-5x the speed: rendering calls this about 50,000 times per paper-sized run.
    return " ".join(text.split()) if isinstance(text, str) else ""


def word_count(text: str | None) -> int:
    """Words as the protocol counts them: runs of ``[A-Za-z0-9']``.

    >>> word_count("I don't know, 2 days?")
    5
    """
    return len(_WORD.findall(text or ""))


def _time(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def timestamp(row: Row) -> str | None:
    """``12.5-15s`` as the transcript shows a row's time; ``None`` when both times are missing."""
    if row.start_time is None and row.end_time is None:
        return None
    return f"{_time(row.start_time or 0.0)}-{_time(row.end_time or 0.0)}s"


def _timing(row: Row) -> str:
    stamp = timestamp(row)
    return "" if stamp is None else f" ({stamp})"


def _cues(cues: Sequence[Cue]) -> str:
    """``Nadia: a / b; Tom: c``: descriptions grouped by person, in order of first mention."""
    grouped: dict[str, list[str]] = {}
    for cue in cues:
        text = clean(cue.description)
        if text:
            grouped.setdefault(clean(cue.person), []).append(text)
    parts = [
        f"{person}: {' / '.join(texts)}" if person else " / ".join(texts) for person, texts in grouped.items()
    ]
    return "; ".join(parts)


def _directed(who: str | None, to: Sequence[str], what: str | None) -> str:
    who_text, what_text = clean(who), clean(what)
    if not what_text:
        return ""
    names = ", ".join(n for n in (clean(t) for t in to) if n)
    head = f"{who_text} -> {names}" if who_text and names else who_text or (f"-> {names}" if names else "")
    return f"{head}: {what_text}" if head else what_text


def render_row(row: Row, mode: Mode) -> str:
    """One transcript line for ``row`` in ``mode``; deterministic, with no empty fields.

    >>> r = Row(row_index=3, start_time=1.5, end_time=4, primary_speaker="Ana", target=["Ben"],
    ...         dialogue_cleaned="Fine.", tone_of_voice="flat", facial_expressions=[{"person": "Ana",
    ...         "description": "looks down"}])
    >>> render_row(r, "dialogue")
    '[3] Ana -> Ben (1.5-4s): Fine.'
    >>> render_row(r, "audiovisual")
    '[3] Ana -> Ben (1.5-4s): Fine. | tone: flat | face: Ana: looks down'
    """
    # Names are cleaned like text: a newline in a name must not start a transcript line of its own.
    targets = ", ".join(n for n in (clean(t) for t in row.targets) if n)
    speaker = clean(row.speaker) or "(unknown speaker)"
    head = f"[{row.row_index}] {speaker}" + (f" -> {targets}" if targets else "") + _timing(row)
    parts = [f"{head}: {clean(row.dialogue_cleaned) or '(no words)'}"]
    background = "; ".join(
        b
        for b in (_directed(line.speaker, line.target, line.content) for line in row.background_dialogue)
        if b
    )
    if background:
        parts.append(f"background: {background}")
    if mode in AUDIO_MODES and clean(row.tone_of_voice):
        parts.append(f"tone: {clean(row.tone_of_voice)}")
    if mode in VISUAL_MODES:
        for name, cues in (
            ("posture", row.body_posture),
            ("face", row.facial_expressions),
            ("self", row.self_directed_behavior),
        ):
            text = _cues(cues)
            if text:
                parts.append(f"{name}: {text}")
        acts = "; ".join(
            a
            for a in (_directed(i.initiator, i.target, i.description) for i in row.interaction_behavior)
            if a
        )
        if acts:
            parts.append(f"interaction: {acts}")
    return " | ".join(parts)


def row_records(sample: Sample, mode: Mode, cache: RowCache | None = None) -> RenderedRows:
    """The rendered rows of ``sample`` in ``mode`` (item ``i`` is row ``i + 1``), shared by instances: those
    of ``cache`` when it has them (a task config's, :attr:`TaskConfig.rows`), else rendered and kept there."""
    hit = None if cache is None else cache.get(sample, mode)
    if hit is not None:
        return hit
    records = tuple({"row_index": row.row_index, "line": render_row(row, mode)} for row in sample.rows)
    if cache is not None:
        cache.put(sample, mode, records)
    return records


def window(records: Sequence[T], cut: int, size: int) -> tuple[T, ...]:
    """The rows shown before the 1-based row ``cut`` (exclusive): all (-1), none (0) or the last ``size``.

    >>> rows = list(range(1, 11))   # stands for rows 1..10
    >>> window(rows, 6, 3), window(rows, 6, -1), window(rows, 6, 0), window(rows, 2, 3)
    ((3, 4, 5), (1, 2, 3, 4, 5), (), (1,))
    """
    end = max(0, min(cut - 1, len(records)))
    if size == 0:
        return ()
    start = 0 if size < 0 else max(0, end - size)
    return tuple(records[start:end])


def transcript(records: Sequence[RowRecord]) -> str:
    """The lines of ``records``, one per row."""
    return "\n".join(str(r["line"]) for r in records)


def row_index_of(record: RowRecord) -> int:
    """The row a rendered row record is of."""
    return int(record["row_index"])


@dataclass(frozen=True, slots=True)
class ShownRows:
    """The rendered rows an instance's context shows: its earlier rows, and the current row (ER, VP, RPP
    with the current turn); the records themselves, shared with the other instances of the sample."""

    rows: tuple[RowRecord, ...] = ()
    current: RowRecord | None = None

    @property
    def indices(self) -> tuple[int, ...]:
        """Row indices in display order (earlier rows, then the current row)."""
        current = () if self.current is None else (row_index_of(self.current),)
        return (*(row_index_of(r) for r in self.rows), *current)


def shown_context(context: Shown | None) -> ShownRows:
    """The rows of an instance's context (none for an instance built without one, such as a test's).

    >>> shown = Shown("dialogue", 1, rows=({"row_index": 2, "line": "a"},), current={"row_index": 3})
    >>> shown_context(shown).indices
    (2, 3)
    >>> shown_context(None).indices
    ()
    """
    return ShownRows() if context is None else ShownRows(context.rows, context.current)


def shown_rows(context: Shown | None) -> tuple[int, ...]:
    """Row indices an instance shows, in display order (earlier rows, then the current row)."""
    return shown_context(context).indices


def _spread(n: int, limit: int) -> list[int]:
    return [round(k * (n - 1) / (limit - 1)) for k in range(limit)]


def _even(items: Sequence[T], limit: int, key: Callable[[T], Hashable], single: int) -> list[T]:
    n = len(items)
    if limit <= 0 or n <= limit:
        return list(items)
    if limit == 1:
        return [items[single]]
    picked: list[T] = []
    seen: set[Hashable] = set()
    for position in _spread(n, limit):
        if key(items[position]) not in seen:
            seen.add(key(items[position]))
            picked.append(items[position])
    for item in items:  # only reached with duplicates, which cannot happen when n > limit; kept for fidelity
        if len(picked) >= limit:
            break
        if key(item) not in seen:
            seen.add(key(item))
            picked.append(item)
    return picked[:limit]


def pick_evenly(items: Sequence[T], limit: int, key: Callable[[T], Hashable] = id) -> list[T]:
    """ER/VP checkpoints: ``limit`` evenly spaced items (Python ``round``), the first when ``limit == 1``.

    >>> pick_evenly(list("abcdefg"), 5), pick_evenly(list("abc"), 1), pick_evenly(list("ab"), 5)
    (['a', 'c', 'd', 'e', 'g'], ['a'], ['a', 'b'])
    """
    return _even(items, limit, key, 0)


def even_sample(items: Sequence[T], limit: int, key: Callable[[T], Hashable] = id) -> list[T]:
    """ITP class balancing: as :func:`pick_evenly`, but the middle item (``n // 2``) when ``limit == 1``.

    >>> even_sample(list("abcd"), 1), even_sample(list("abcdefg"), 3)
    (['c'], ['a', 'd', 'g'])
    """
    return _even(items, limit, key, len(items) // 2)


def early_cutoff(total_rows: int, ratio: float = 0.3) -> int:
    """ER: the first row index kept after dropping the first ``ratio`` of rows (all rows kept for 0-1 rows).

    >>> early_cutoff(10), early_cutoff(16), early_cutoff(1), early_cutoff(2)
    (4, 6, 1, 2)
    """
    if total_rows <= 1:
        return 1
    drop = min(total_rows - 1, math.ceil(total_rows * ratio))
    return drop + 1
