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

from rescue_bench.judge import rubric
from rescue_bench.judge.runner import Complete
from rescue_bench.models.base import Provider
from rescue_bench.records import Reply, Request


def exact_schema(request: Request) -> Request:
    """The judge request with its schema narrowed to exactly its checkpoints, ids in order.

    >>> from rescue_bench.judge.rubric import JudgeItem, render
    >>> items = [JudgeItem(f"s::er::{i}", "er", {"emotion": "hurt"}, {"emotion": "sad"}) for i in (1, 2)]
    >>> graded = exact_schema(render(items)).response_schema["properties"]["graded"]
    >>> graded["items"]["properties"]["id"], graded["minItems"], graded["maxItems"]
    ({'type': 'string', 'enum': ['c1', 'c2']}, 2, 2)
    """
    task = rubric.judged_task(request)
    return replace(request, response_schema=rubric.schema(task, request.opaque_ids))


def judge_complete(provider: Provider, complete: Complete) -> Complete:
    """How the judge pass asks ``provider``: an in-process model with :func:`exact_schema`, others as is."""
    if provider.capabilities.has_endpoint:
        return complete

    async def exact(request: Request) -> Reply:
        return await complete(exact_schema(request))

    return exact
