"""In-process judges (``--judge local/<name>``): every column of the table filled offline.

A judge must read prompts (``Capabilities.reads_prompts``): an endpoint model or the local llama.cpp model,
never a baseline or a replay. The local model is asked the same rubric request as any judge
(:func:`rescue_bench.judge.rubric.render`), laid out in its own chat form by the provider (the GGUF's chat
template for an instruct model, the plain document for a base model), and its output is constrained to the
rubric's JSON schema. For an in-process model the schema is made exact first (:func:`exact_schema`): the
``graded`` list holds one entry per checkpoint asked, with the checkpoints' ids in order, so a small model
can neither skip nor invent a checkpoint; each score stays an enum of its rubric range, so every verdict is in
range by construction. Its ``notes`` are left empty (forced, not generated): a small model's notes say
nothing, and forcing them spares the CPU time of generating them.
Endpoint judges get the rubric's schema unchanged (their requests and cache keys are as before).

The verdicts of a 135M or 270M model are noise: this path exists to exercise the judge pass offline, not to
grade anything.
"""

from __future__ import annotations

from dataclasses import replace

from rescue_bench.judge.runner import Complete
from rescue_bench.models.base import Provider
from rescue_bench.records import Json, Reply, Request


def exact_schema(request: Request) -> Request:
    """The judge request with its schema narrowed to exactly its checkpoints, ids in order.

    >>> from rescue_bench.judge.rubric import JudgeItem, render
    >>> items = [JudgeItem(f"s::er::{i}", "er", {"emotion": "hurt"}, {"emotion": "sad"}) for i in (1, 2)]
    >>> graded = exact_schema(render(items)).response_schema["properties"]["graded"]
    >>> graded["items"]["properties"]["id"], graded["minItems"], graded["maxItems"]
    ({'type': 'string', 'enum': ['c1', 'c2']}, 2, 2)
    """
    schema = dict(request.response_schema)
    properties = schema.get("properties")
    graded = properties.get("graded") if isinstance(properties, dict) else None
    items = graded.get("items") if isinstance(graded, dict) else None
    fields = items.get("properties") if isinstance(items, dict) else None
    if not (isinstance(properties, dict) and isinstance(graded, dict) and isinstance(items, dict)):
        raise ValueError(f"{request.task}: not a judge schema (no 'graded' list of objects)")
    if not isinstance(fields, dict) or "id" not in fields:
        raise ValueError(f"{request.task}: the judge schema's entries have no 'id'")
    ids: list[Json] = list(request.opaque_ids)
    fields = {**fields, "id": {"type": "string", "enum": ids}}
    if "notes" in fields:
        fields["notes"] = {"type": "string", "enum": [""]}
    graded = {**graded, "items": {**items, "properties": fields}, "minItems": len(ids), "maxItems": len(ids)}
    schema["properties"] = {**properties, "graded": graded}
    return replace(request, response_schema=schema)


def judge_complete(provider: Provider, complete: Complete) -> Complete:
    """How the judge pass asks ``provider``: an in-process model with :func:`exact_schema`, others as is."""
    if provider.capabilities.has_endpoint:
        return complete

    async def exact(request: Request) -> Reply:
        return await complete(exact_schema(request))

    return exact
