"""A chat completion's JSON body to a :class:`Reply`: answer, reasoning apart, usage with reasoning tokens.

Read from the decoded JSON rather than the SDK's ``ChatCompletion`` model: compatible servers omit or add
fields freely (``reasoning_content``, ``reasoning``), and only these few matter.
"""

from __future__ import annotations

import json
from typing import Any

from rescue_bench.errors import ModerationRefusal, RetryableError
from rescue_bench.records import Reply, Usage


def parse_reply(data: Any, latency: float) -> Reply:
    """The reply in a decoded chat completion body.

    >>> parse_reply({"choices": [{"message": {"content": "hi", "reasoning": "hm"}, "finish_reason": "stop"}]},
    ...             0.5).text
    'hi'
    """
    try:
        choice = data["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise RetryableError("response without choices") from None
    text = message.get("content") or ""
    finish = choice.get("finish_reason")
    if finish == "content_filter" and not text:
        raise ModerationRefusal("finish_reason content_filter")
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return Reply(
        text=text if isinstance(text, str) else json.dumps(text),
        reasoning=reasoning if isinstance(reasoning, str) else None,
        usage=parse_usage(data.get("usage")),
        latency=latency,
        finish_reason=finish,
    )


def parse_usage(usage: Any) -> Usage:
    """Token counts of a response's ``usage`` object.

    >>> parse_usage({"prompt_tokens": 9, "completion_tokens": 4,
    ...              "completion_tokens_details": {"reasoning_tokens": 2}})
    Usage(prompt_tokens=9, completion_tokens=4, reasoning_tokens=2)
    """
    if not isinstance(usage, dict):
        return Usage()
    details = usage.get("completion_tokens_details") or {}
    reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else 0
    return Usage(
        int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0), int(reasoning or 0)
    )
