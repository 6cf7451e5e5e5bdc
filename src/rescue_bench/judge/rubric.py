"""Judge requests, JSON schemas and strict verdict parsing, for every task with a judge rubric.

A judged task's module holds its :class:`~rescue_bench.tasks.base.JudgeRubric` (``INFO.judge``): the rubric
text (the reference scripts' protocol §6-7 and the paper's §4.2 for ER and VP), what the judge is shown of a
checkpoint, the integer scores and their ranges, and a total the pass adds up itself (VP's 0-6), never taken
from the judge. This module turns those into requests and verdicts.

What a judge request shows is what the reference scripts' ``judge_prompt`` shows: the turn (speaker, time,
words), the gold annotation, the prediction value and the answer's own short ``reason``, under opaque ids
``c1``, ``c2``, ... It never shows the candidate model's name, its reasoning trace or the instance ids.

Parsing never clamps and never defaults: an out-of-range, missing or unreadable score makes that item's
verdict invalid with a reason; the runner asks once more and then leaves it unscored.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from rescue_bench.errors import ConfigError
from rescue_bench.records import Json, Request
from rescue_bench.tasks import judged_tasks, task_info
from rescue_bench.tasks.base import JudgeRubric, TurnFacts

JUDGE_TASKS: tuple[str, ...] = judged_tasks()
VERDICT_LABELS = ("strong", "pass", "borderline", "fail")
JUDGE_MAX_TOKENS = 1800


def judge_rubric(task: str) -> JudgeRubric:
    """The judge rubric of ``task`` (``INFO.judge``); :class:`ConfigError` when the task is not judged.

    >>> judge_rubric("er").fields[0].reply_key
    'emotion_score'
    """
    rule = task_info(task).judge
    if rule is None:
        raise ConfigError(f"task {task!r} is not judged; judged tasks: {', '.join(JUDGE_TASKS)}")
    return rule


@functools.cache
def schema(task: str, exact: tuple[str, ...] = ()) -> dict[str, Json]:
    """The JSON schema of a judge reply for ``task``: one entry per checkpoint with each score's range.

    With ``exact`` ids (an in-process judge, :mod:`rescue_bench.judge.local`), ``graded`` holds exactly one
    entry per id, in order, and ``notes`` may only be empty.

    >>> graded = schema("er", ("c1", "c2"))["properties"]["graded"]
    >>> graded["items"]["properties"]["id"], graded["minItems"], graded["maxItems"]
    ({'type': 'string', 'enum': ['c1', 'c2']}, 2, 2)
    """
    props: dict[str, Json] = {"id": {"type": "string", "enum": list(exact)} if exact else {"type": "string"}}
    for score in judge_rubric(task).fields:
        props[score.reply_key] = {"type": "integer", "enum": list(range(score.low, score.high + 1))}
    props["verdict"] = {"type": "string", "enum": list(VERDICT_LABELS)}
    props["notes"] = {"type": "string", "enum": [""]} if exact else {"type": "string"}
    item = {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}
    graded: dict[str, Json] = {"type": "array", "items": item}
    if exact:
        graded.update(minItems=len(exact), maxItems=len(exact))
    return {
        "type": "object",
        "properties": {"graded": graded},
        "required": ["graded"],
        "additionalProperties": False,
    }


def judged_task(request: Request) -> str:
    """The task whose checkpoints a judge request made by :func:`render` grades (``ValueError`` for any other
    request).

    >>> judged_task(render([JudgeItem("s::vp::2", "vp", {"p": 1}, {"p": 2})]))
    'vp'
    """
    task = request.task.removesuffix("_judge")
    if task == request.task or task not in JUDGE_TASKS or request.response_schema != schema(task):
        raise ValueError(f"{request.task}: not a judge request (its schema is not a judge rubric's)")
    return task


def prompt_hash(task: str) -> str:
    """Hash of the rubric, the schema and the fields a checkpoint shows for ``task`` (12 hex digits),
    recorded with every judgment: judgments made with other inputs have another hash.

    >>> len(prompt_hash("er")), prompt_hash("er") != prompt_hash("vp")
    (12, True)
    """
    rule = judge_rubric(task)
    shown = list(rule.view(None, None, TurnFacts()))
    blob = json.dumps([rule.rubric, schema(task), shown], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


@dataclass(frozen=True, slots=True)
class JudgeItem:
    """What the judge sees about one instance: the turn, gold and prediction, never the model or the id."""

    instance_id: str
    task: str
    gold: Json
    prediction: Json
    speaker: str | None = None
    repeat: int = 0
    """The prediction's repeat (``repeats``): never shown to the judge, written on its judgment line."""
    timestamp: str | None = None
    utterance: str | None = None
    reason: str | None = None
    """The answer's own short reason (its ``reason`` field), as the reference judge sees it."""

    @property
    def turn(self) -> TurnFacts:
        return TurnFacts(self.speaker, self.timestamp, self.utterance, self.reason)


def render(items: Sequence[JudgeItem], *, note: str = "") -> Request:
    """One judge request for the checkpoints of one sample and task, under opaque ids ``c1``, ``c2``, ...

    >>> req = render([JudgeItem("s::er::3", "er", {"emotion": "hurt", "intensity": 6}, {"emotion": "sad"})])
    >>> user = req.messages[1]["content"]
    >>> req.task, req.instance_ids, "s::er::3" in user, '"gold_intensity": 6' in user
    ('er_judge', ('s::er::3',), False, True)
    """
    if not items:
        raise ValueError("a judge request needs at least one item")
    task = items[0].task
    if any(it.task != task for it in items):
        raise ValueError("a judge request holds items of one task only")
    rule = judge_rubric(task)
    checkpoints = {f"c{i}": rule.view(it.gold, it.prediction, it.turn) for i, it in enumerate(items, start=1)}
    user = "Checkpoints:\n" + json.dumps(checkpoints, ensure_ascii=False, indent=1) + note
    return Request(
        task=f"{task}_judge",
        messages=({"role": "system", "content": rule.rubric}, {"role": "user", "content": user}),
        response_schema=schema(task),
        instance_ids=tuple(it.instance_id for it in items),
        max_tokens=JUDGE_MAX_TOKENS,
        prompt_hash=prompt_hash(task),
    )


def render_reask(items: Sequence[JudgeItem], problems: Mapping[str, str]) -> Request:
    """The one re-ask: the items whose verdict was invalid, renumbered ``c1``..., with what was wrong.

    The prompt differs from the first request, so a response cache cannot hand back the same bad answer.
    ``problems`` maps instance ids to the reason their verdict was invalid.

    >>> items = [JudgeItem(f"s::er::{i}", "er", {"emotion": "hurt"}, {"emotion": "sad"}) for i in (1, 2)]
    >>> req = render_reask(items, {"s::er::2": "out_of_range: emotion_score=9 (allowed 1-5)"})
    >>> req.instance_ids, "- c1: out_of_range" in req.messages[1]["content"]
    (('s::er::2',), True)
    """
    keep = [it for it in items if it.instance_id in problems]
    if not keep:
        raise ValueError("nothing to re-ask")
    reasons = "".join(f"\n- c{i}: {problems[it.instance_id]}" for i, it in enumerate(keep, start=1))
    note = (
        "\n\nA previous answer for these checkpoints could not be used:" + reasons + "\n"
        "Grade them again, using only the allowed integer values, and return JSON only in the required shape."
    )
    return render(keep, note=note)


@dataclass(frozen=True, slots=True)
class Verdict:
    """The judge's grade of one instance: ``scores`` when valid, else ``problem`` says why not."""

    scores: dict[str, float] | None
    problem: str | None = None
    raw: Json = None
    notes: tuple[str, ...] = field(default=())

    @property
    def valid(self) -> bool:
        return self.scores is not None


_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.IGNORECASE)
_MAX_SCAN = 2000


def extract_json(text: str) -> Json:
    """The first JSON value in ``text`` (code fences and surrounding prose allowed), or raise ``ValueError``.

    >>> extract_json('```json\\n{"graded": []}\\n```')
    {'graded': []}
    >>> extract_json('Sure! {"a": 1} hope this helps')
    {'a': 1}
    """
    stripped = _FENCE.sub("", text.strip())
    # ValueError covers JSONDecodeError and integers too long to convert; RecursionError deep nesting.
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        pass
    decoder = json.JSONDecoder()
    for attempt, match in enumerate(re.finditer(r"[\[{]", stripped)):
        if attempt >= _MAX_SCAN:  # a reply of nothing but brackets would otherwise cost minutes
            break
        try:
            value, _ = decoder.raw_decode(stripped, match.start())
        except (ValueError, RecursionError):
            continue
        return value
    raise ValueError("reply holds no JSON object")


def _integer(value: Json) -> int | None:
    """An integer score from an int, an integral float or an integral numeric string; ``None`` otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+(\.0+)?\s*", value):
        try:  # not int(float(...)): a 400-digit string is a float overflow, not an integer
            return int(value.strip().split(".", 1)[0])
        except ValueError:  # more digits than Python converts
            return None
    return None


def _short(text: str, limit: int = 40) -> str:
    """Cut a shown value so that a reply of 400 digits does not fill the judgments file's problem notes.

    >>> _short("4" * 50, 10)
    '4444444444…'
    """
    return text if len(text) <= limit else text[:limit] + "…"


def grade_item(task: str, item: Json) -> Verdict:
    """Check one graded entry against the rubric ranges; never clamps.

    >>> grade_item("er", {"emotion_score": 4}).scores
    {'s_emo': 4.0}
    >>> grade_item("er", {"emotion_score": 7}).problem
    'out_of_range: emotion_score=7 (allowed 1-5)'
    >>> grade_item("vp", {"source_target_score": 2, "viewpoint_score": 3, "viewpoint_total_score": 6}).scores
    {'pairing': 2.0, 'viewpoint': 3.0, 'total': 5.0}
    >>> grade_item("vp", {"source_target_score": 1}).problem
    'missing: viewpoint_score'
    """
    if not isinstance(item, Mapping):
        return Verdict(None, f"parse_failure: graded entry is {type(item).__name__}, not an object", item)
    rule = judge_rubric(task)
    scores: dict[str, float] = {}
    for score in rule.fields:
        name, low, high = score.reply_key, score.low, score.high
        if name not in item or item[name] is None or item[name] == "":
            return Verdict(None, f"missing: {name}", item)
        value = _integer(item[name])
        if value is None:
            return Verdict(None, f"parse_failure: {name}={_short(repr(item[name]))} is not an integer", item)
        if not low <= value <= high:
            return Verdict(None, f"out_of_range: {name}={_short(str(value))} (allowed {low}-{high})", item)
        scores[score.score_key] = float(value)
    if rule.total is None:
        return Verdict(scores, None, item)
    total = scores[rule.total.key] = sum(scores[score.score_key] for score in rule.fields)
    claimed = None if rule.total.claimed_key is None else item.get(rule.total.claimed_key)
    notes: tuple[str, ...] = ()
    if claimed is not None and _integer(claimed) != total:
        notes = (f"judge_total_ignored: {claimed!r} != {total:g}",)
    return Verdict(scores, None, item, notes)


_REPLY_KEYS = frozenset(score.reply_key for task in JUDGE_TASKS for score in judge_rubric(task).fields)
"""Score keys of any judged task: a lone object holding one is taken as a graded entry without a list."""


class _Graded(BaseModel):
    """The judge's reply object: its ``graded`` list (other keys are the judge's, and ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    graded: Json = None


class _EntryId(BaseModel):
    """The checkpoint id of one graded entry, under either name a judge uses."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: Json = None
    checkpoint_id: Json = None

    @property
    def key(self) -> Json:
        return self.id if "id" in self.model_fields_set else self.checkpoint_id


def _entries(payload: Json) -> list[Json] | None:
    if isinstance(payload, list):
        return payload
    if isinstance(payload, Mapping):
        graded = _Graded.model_validate(payload).graded
        if isinstance(graded, list):
            return graded
        if any(name in payload for name in _REPLY_KEYS):
            return [payload]
    return None


def parse_verdicts(task: str, text: str, opaque_ids: Sequence[str]) -> dict[str, Verdict]:
    """One verdict per opaque id: valid, or invalid with the reason (garbage, missing, out of range).

    A lone entry without an id is accepted when exactly one checkpoint was asked for. Entries with unknown
    ids are ignored; a repeated id keeps its first entry.

    >>> v = parse_verdicts("er", '{"graded": [{"id": "c1", "emotion_score": 5}]}', ["c1", "c2"])
    >>> v["c1"].scores, v["c2"].problem
    ({'s_emo': 5.0}, 'missing: no verdict')
    >>> parse_verdicts("er", "I think it is a 4.", ["c1"])["c1"].problem
    'parse_failure: reply holds no JSON object'
    """
    try:
        entries = _entries(extract_json(text))
    except ValueError as exc:
        return {oid: Verdict(None, f"parse_failure: {exc}") for oid in opaque_ids}
    if entries is None:
        return {oid: Verdict(None, "parse_failure: no 'graded' list in the reply") for oid in opaque_ids}
    by_id: dict[str, Json] = {}
    for entry in entries:
        key = _EntryId.model_validate(entry).key if isinstance(entry, Mapping) else None
        if key is None and len(opaque_ids) == 1 and len(entries) == 1:
            key = opaque_ids[0]
        if isinstance(key, str | int):
            by_id.setdefault(str(key), entry)
    out: dict[str, Verdict] = {}
    for oid in opaque_ids:
        out[oid] = grade_item(task, by_id[oid]) if oid in by_id else Verdict(None, "missing: no verdict")
    return out
