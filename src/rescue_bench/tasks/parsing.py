"""Reading model replies: total functions that turn any text into one :class:`Prediction` per instance.

Nothing here raises on model text. A reply is searched for JSON (the whole text, fenced blocks, or JSON inside
prose and reasoning), the answer entries are matched to the request's opaque ids (``c1``, ``"1"`` and ``1``
all mean the first item; a one-item batch may leave the id out), and each entry is handed to the task's
reader. Anything that cannot be read becomes an invalid prediction whose first problem says why:

* ``parse_failure: ...``: no usable JSON, or an entry without the answer field;
* ``missing: ...``: no entry for this item;
* ``invalid_label: ...``: an answer outside the closed set (or an intensity outside 0-10);
* notes such as ``normalized: 'Track' -> 'track'`` record repairs on valid answers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from rescue_bench.metrics.ranking import rank_metrics
from rescue_bench.records import Instance, Prediction
from rescue_bench.taxonomy import canonical_form, normalize_label

ItemReader = Callable[[dict[str, Any], Instance], Prediction]

ID_KEYS = ("id", "item", "item_id", "candidate_id", "turn_id", "checkpoint_id")
LIST_KEYS = ("predictions", "items", "answers", "results", "prediction")
_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_ID = re.compile(r"^(?:c|item|candidate|id)?[\s_#:-]*(\d{1,6})$")
_MAX_SCAN = 2000


def normalize_id(raw: object, count: int) -> str | None:
    """The opaque id (``c1`` ...) that ``raw`` denotes in a batch of ``count`` items, or ``None``.

    >>> [normalize_id(x, 3) for x in ("c2", "C3", "2", 1, "item 1", "c4", "x", True)]
    ['c2', 'c3', 'c2', 'c1', 'c1', None, None, None]
    """
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        number = raw
    elif isinstance(raw, float) and raw.is_integer():
        number = int(raw)
    elif isinstance(raw, str):
        match = _ID.match(raw.strip().strip("\"'`[]()").lower())
        if match is None:
            return None
        number = int(match.group(1))
    else:
        return None
    return f"c{number}" if 1 <= number <= count else None


def _loads(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def json_values(text: str) -> Iterator[Any]:
    """Candidate JSON values in ``text``: the whole text, fenced blocks, then values embedded in prose.

    >>> list(json_values('Sure! ```json\\n{"a": 1}\\n``` and [2]'))
    [{'a': 1}, {'a': 1}, [2]]
    """
    stripped = _THINK.sub(" ", text).strip()
    ok, value = _loads(stripped)
    if ok:
        yield value
        if isinstance(value, str):  # a JSON answer sent as one JSON string
            ok, inner = _loads(value)
            if ok:
                yield inner
        return
    for block in _FENCE.findall(stripped):
        ok, value = _loads(block.strip())
        if ok:
            yield value
    decoder = json.JSONDecoder()
    position, attempts = 0, 0
    while attempts < _MAX_SCAN:
        starts = [i for i in (stripped.find("{", position), stripped.find("[", position)) if i >= 0]
        if not starts:
            return
        start = min(starts)
        attempts += 1
        try:
            value, end = decoder.raw_decode(stripped, start)
        except (ValueError, RecursionError):
            position = start + 1
            continue
        yield value
        position = max(end, start + 1)


def _as_dict(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        ok, loaded = _loads(value)
        if ok and isinstance(loaded, dict):
            return loaded
    return None


def payload_items(value: Any, answer_keys: Sequence[str], count: int) -> list[dict[str, Any]]:
    """Answer entries in a JSON value: ``{"predictions": [...]}``, a bare list, a single entry or an id map.

    >>> payload_items({"predictions": [{"id": "c1", "x": 1}]}, ("x",), 1)
    [{'id': 'c1', 'x': 1}]
    >>> payload_items({"c1": "yes", "c2": "no"}, ("x",), 2)
    [{'id': 'c1', 'x': 'yes'}, {'id': 'c2', 'x': 'no'}]
    """
    if isinstance(value, list):
        return [d for d in map(_as_dict, value) if d is not None]
    if not isinstance(value, dict):
        return []
    for key in LIST_KEYS:
        if key in value:
            inner = value[key]
            if isinstance(inner, list):
                return payload_items(inner, answer_keys, count)
            if isinstance(inner, dict):
                return payload_items(inner, answer_keys, count)
    if any(k in value for k in answer_keys):
        return [value]
    ids = {k: normalize_id(k, count) for k in value}
    if value and all(ids.values()):
        return [
            {"id": ids[k], **v} if isinstance(v, dict) else {"id": ids[k], answer_keys[0]: v}
            for k, v in value.items()
        ]
    return []


def _best_items(text: str, answer_keys: Sequence[str], count: int) -> list[dict[str, Any]] | None:
    """Entries of the JSON value that answers most items (the later one on ties); ``None`` without JSON."""
    best: list[dict[str, Any]] | None = None
    best_score = -1
    found_json = False
    for value in json_values(text):
        found_json = True
        items = payload_items(value, answer_keys, count)
        if not items:
            continue
        score = len({_item_id(i, count) for i in items} - {None}) + (count == 1)
        if score >= best_score:
            best, best_score = items, score
    return best if best is not None else ([] if found_json else None)


def _item_id(item: dict[str, Any], count: int) -> str | None:
    for key in ID_KEYS:
        if key in item:
            return normalize_id(item[key], count)
    return None


def match_items(items: Sequence[dict[str, Any]], count: int) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """Entries by opaque id (the first wins) and the ids that had duplicates. One-item batches need no id."""
    matched: dict[str, dict[str, Any]] = {}
    duplicates: set[str] = set()
    for item in items:
        opaque = _item_id(item, count)
        if opaque is None and count == 1 and len(items) == 1 and not any(k in item for k in ID_KEYS):
            opaque = "c1"
        if opaque is None:
            continue
        if opaque in matched:
            duplicates.add(opaque)
            continue
        matched[opaque] = item
    return matched, duplicates


def parse_batch(
    text: str, batch: Sequence[Instance], answer_keys: Sequence[str], read: ItemReader
) -> list[Prediction]:
    """One prediction per instance of ``batch``, in batch order; never raises on model text."""
    count = len(batch)
    if not isinstance(text, str) or not text.strip():
        return [Prediction.failed(inst.id, "parse_failure: empty reply") for inst in batch]
    items = _best_items(text, answer_keys, count)
    if items is None:
        return [Prediction.failed(inst.id, "parse_failure: no JSON found in the reply") for inst in batch]
    matched, duplicates = match_items(items, count)
    if not matched and items == []:
        return [Prediction.failed(inst.id, "parse_failure: no answer entries in the JSON") for inst in batch]
    out: list[Prediction] = []
    for position, inst in enumerate(batch, start=1):
        opaque = f"c{position}"
        item = matched.get(opaque)
        if item is None:
            out.append(Prediction.failed(inst.id, f"missing: no answer for {opaque}"))
            continue
        try:
            pred = read(item, inst)
        except Exception as exc:
            pred = Prediction.failed(inst.id, f"parse_failure: unreadable answer ({type(exc).__name__})")
        if pred.valid:
            pred = replace(pred, reason=answer_reason(item))
        if opaque in duplicates:
            pred = note(pred, f"duplicate answers for {opaque}; the first was used")
        out.append(pred)
    return out


def note(pred: Prediction, text: str) -> Prediction:
    return replace(pred, problems=(*pred.problems, text))


REASON_LIMIT = 400
"""Characters of an answer's reason kept for the judge (the schema asks for at most 200)."""


def answer_reason(item: Mapping[str, Any]) -> str | None:
    """The answer entry's ``reason`` as one clean line (cut at :data:`REASON_LIMIT`), ``None`` without one.

    >>> answer_reason({"reason": "  tone   rises "}), answer_reason({"reason": 3}), answer_reason({})
    ('tone rises', None, None)
    """
    raw = item.get("reason")
    text = " ".join(raw.split()) if isinstance(raw, str) else ""
    return text[:REASON_LIMIT] or None


def field(item: dict[str, Any], keys: Sequence[str]) -> tuple[bool, Any]:
    """The first of ``keys`` present in ``item`` (``(False, None)`` when none is)."""
    for key in keys:
        if key in item:
            return True, item[key]
    return False, None


def short(value: object, limit: int = 60) -> str:
    """A short ``repr`` for problem messages.

    >>> short("x" * 100)[:5], len(short("x" * 100))
    ("'xxxx", 61)
    """
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def read_label(raw: object, allowed: Sequence[str]) -> tuple[str | None, list[str]]:
    """A label of ``allowed`` (re-cased or aliased, with a note) or ``None`` and the problem."""
    if not isinstance(raw, str) or not raw.strip():
        return None, [f"invalid_label: {short(raw)} is not a label"]
    result = normalize_label(raw, tuple(allowed))
    label = result.label
    if label is None:  # names and group labels are capitalised: compare their canonical forms too
        label = {canonical_form(a): a for a in allowed}.get(canonical_form(raw))
    if label is None:
        return None, [f"invalid_label: {short(raw)} is not one of the allowed labels"]
    notes = [f"normalized: {short(raw)} -> {label!r}"] if label != raw else []
    return label, notes


def _entries(raw: object) -> list[object] | None:
    if isinstance(raw, str):
        return [p for p in (s.strip() for s in raw.split(",")) if p]
    if isinstance(raw, list):
        out: list[object] = []
        for entry in raw:
            if isinstance(entry, dict):
                entry = next((entry[k] for k in ("label", "name", "value") if k in entry), entry)
            out.append(entry)
        return out
    return None


def read_ranking(raw: object, allowed: Sequence[str], inst: Instance, top: int = 3) -> Prediction:
    """A ranked answer: distinct allowed labels, at most ``top``.

    The ranking stops at the first entry outside ``allowed`` (later entries are never moved up); if that is
    the first entry, the answer is invalid. Duplicates are dropped with a note. Nothing is padded.
    """
    entries = _entries(raw)
    if entries is None or not entries:
        return Prediction.failed(inst.id, f"parse_failure: no ranked labels in {short(raw)}")
    ranked: list[str] = []
    notes: list[str] = []
    for position, entry in enumerate(entries, start=1):
        if len(ranked) >= top:
            break
        label, found = read_label(entry, allowed)
        if label is None:
            if not ranked:
                return Prediction(inst.id, None, False, tuple(found))
            notes.append(f"truncated: entry {position} {short(entry)} is not an allowed label")
            break
        notes.extend(found)
        if label in ranked:
            notes.append(f"duplicate: {label!r} at rank {position} dropped")
            continue
        ranked.append(label)
    if len(entries) > top and len(ranked) >= top:
        notes.append(f"truncated: {len(entries)} labels given, the first {top} were used")
    return Prediction(inst.id, ranked, True, tuple(notes))


def parse_ranking(text: str, batch: Sequence[Instance], answer_keys: Sequence[str]) -> list[Prediction]:
    """Ranked answers (RPP, STP, SSP); ``answer_keys[0]`` is the schema field, the rest accepted spellings."""

    def read(item: dict[str, Any], inst: Instance) -> Prediction:
        present, raw = field(item, answer_keys)
        if not present:
            return Prediction.failed(inst.id, f"parse_failure: no {answer_keys[0]} in the answer")
        return read_ranking(raw, inst.candidates, inst)

    return parse_batch(text, batch, answer_keys, read)


def ranking_metrics(pred: Prediction, inst: Instance) -> dict[str, float]:
    """Recall@1..3 and MRR of a ranked answer against ``inst.gold``; an invalid answer ranks nothing.

    >>> inst = Instance("s::ssp::2", "ssp", "s", "couple", 2, "track", ("track", "evoke"))
    >>> ranking_metrics(Prediction("s::ssp::2", ["evoke", "track"], True), inst)["mrr"]
    0.5
    """
    metrics = rank_metrics(str(inst.gold), pred.value if pred.valid else [])
    metrics.pop("gold_rank", None)
    return metrics
