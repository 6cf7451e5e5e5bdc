"""Deterministic fake replies drawn from a hash of the prompt, for the equality tests of the adapters.

The same prompt always gets the same reply, whichever harness sends it, so a difference between the numbers
of ``rescue-bench run`` and of an adapter can only come from the adapter. Replies fit the task's own schema
(looked up by the prompt among the requests our tasks render, so a harness that rewrites the schema on the way
cannot change the answer); about one in six is not JSON and one label in ten is outside the label set, so
parse failures and invalid labels are exercised too. Judge requests get one verdict per checkpoint, drawn
from a hash of that checkpoint alone, so the verdicts do not depend on how checkpoints are grouped.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable, Mapping
from typing import Any

from tests.fakes.openai_server import ChatRequest, Script, server_error

from rescue_bench.judge.rubric import VERDICT_LABELS, judge_rubric
from rescue_bench.records import Request

_CHECKPOINTS = re.compile(r"Checkpoints:\n(.*?)(\n\nA previous answer|\Z)", re.S)


def contents_key(contents: Iterable[str]) -> str:
    return hashlib.sha256(json.dumps(list(contents)).encode()).hexdigest()


def _rng(text: str) -> random.Random:
    return random.Random(int(hashlib.sha256(text.encode()).hexdigest()[:16], 16))


def draw(schema: Mapping[str, Any], rng: random.Random) -> Any:
    """A value of ``schema`` chosen by ``rng`` (enums, bounded arrays, objects; strings are short words)."""
    if schema.get("enum"):
        options = list(schema["enum"])
        return "not-a-label" if rng.random() < 0.1 else rng.choice(options)
    kind = schema.get("type", "object")
    kind = next((k for k in kind if k != "null"), "null") if isinstance(kind, list) else kind
    if kind == "object":
        return {name: draw(sub, rng) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        items = schema.get("items", {})
        low, high = int(schema.get("minItems", 1)), int(schema.get("maxItems", 3))
        if items.get("enum"):
            return rng.sample(list(items["enum"]), min(rng.randint(low, high), len(items["enum"])))
        return [draw(items, rng) for _ in range(rng.randint(low, high))]
    if kind == "integer":
        return rng.randint(int(schema.get("minimum", 0)), int(schema.get("maximum", 10)))
    if kind == "number":
        return rng.random()
    if kind == "boolean":
        return rng.random() < 0.5
    return rng.choice(["hurt", "calm", "angry", "they feel unheard", "x"])


def answer(request: Request, key: str) -> str:
    """The reply to one of our requests: an item per opaque id, drawn from the prompt's hash."""
    rng = _rng(key)
    if rng.random() < 1 / 6:
        return "Sorry, I cannot answer in JSON today."
    item_schema = request.response_schema["properties"]["predictions"]["items"]  # type: ignore[index]
    items = []
    for opaque in request.opaque_ids:
        item = draw(item_schema, rng)
        item["id"] = opaque
        items.append(item)
    return json.dumps({"predictions": items})


def grade(user: str) -> str:
    """One verdict per checkpoint, from the hash of the checkpoint's own view."""
    found = _CHECKPOINTS.match(user)
    assert found is not None
    graded = []
    for cid, view in json.loads(found.group(1)).items():
        rng = _rng(json.dumps(view, sort_keys=True))
        task = "er" if "gold_emotion" in view else "vp"
        entry: dict[str, Any] = {"id": cid}
        for field in judge_rubric(task).fields:
            entry[field.reply_key] = rng.randint(field.low, field.high)
        entry["verdict"] = rng.choice(VERDICT_LABELS)
        entry["notes"] = ""
        graded.append(entry)
    return json.dumps({"graded": graded})


class HashedAnswers:
    """The fake server's handler for the prompts of ``requests`` (and judge requests)."""

    def __init__(self, requests: Iterable[Request]) -> None:
        self.known = {contents_key(str(m["content"]) for m in r.messages): r for r in requests}
        self.unknown: list[ChatRequest] = []

    def __call__(self, request: ChatRequest) -> Script | str:
        contents = [str(m.get("content")) for m in request.messages]
        if len(contents) == 2 and contents[1].startswith("Checkpoints:"):
            return grade(contents[1])
        key = contents_key(contents)
        ours = self.known.get(key)
        if ours is None:
            self.unknown.append(request)
            return server_error(500)
        return answer(ours, key)
