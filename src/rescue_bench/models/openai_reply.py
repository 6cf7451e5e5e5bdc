"""A chat completion's JSON body to a :class:`Reply`: answer, reasoning apart, usage with reasoning tokens.

Read through small models of the few fields that matter (unknown keys ignored), not the SDK's
``ChatCompletion``: that one requires fields (``id``, ``created``, ``object``) that compatible servers omit,
and it has no ``reasoning_content`` / ``reasoning``, which they add.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rescue_bench.errors import ModerationRefusal, RetryableError
from rescue_bench.records import Json, Reply, Usage


class Open(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Message(Open):
    content: Json = None
    reasoning_content: Json = None
    reasoning: Json = None


class Choice(Open):
    message: Message
    finish_reason: Json = None


class Completion(Open):
    choices: Annotated[list[Json], Field(min_length=1)]
    usage: Json = None


class TokenDetails(Open):
    reasoning_tokens: Json = None


class CompletionUsage(Open):
    prompt_tokens: Json = None
    completion_tokens: Json = None
    completion_tokens_details: Json = None


def parse_reply(data: Any, latency: float) -> Reply:
    """The reply in a decoded chat completion body.

    >>> parse_reply({"choices": [{"message": {"content": "hi", "reasoning": "hm"}, "finish_reason": "stop"}]},
    ...             0.5).text
    'hi'
    """
    try:
        body = Completion.model_validate(data)
        choice = Choice.model_validate(body.choices[0])
    except ValidationError:
        raise RetryableError("response without choices") from None
    message = choice.message
    text = message.content or ""
    finish = choice.finish_reason
    if finish == "content_filter" and not text:
        raise ModerationRefusal("finish_reason content_filter")
    reasoning = message.reasoning_content or message.reasoning
    return Reply(
        text=text if isinstance(text, str) else json.dumps(text),
        reasoning=reasoning if isinstance(reasoning, str) else None,
        usage=parse_usage(body.usage),
        latency=latency,
        finish_reason=finish if isinstance(finish, str) else None,
    )


def parse_usage(usage: Any) -> Usage:
    """Token counts of a response's ``usage`` object.

    >>> parse_usage({"prompt_tokens": 9, "completion_tokens": 4,
    ...              "completion_tokens_details": {"reasoning_tokens": 2}})
    Usage(prompt_tokens=9, completion_tokens=4, reasoning_tokens=2)
    """
    if not isinstance(usage, dict):
        return Usage()
    counts = CompletionUsage.model_validate(usage)
    details = counts.completion_tokens_details
    reasoning = TokenDetails.model_validate(details).reasoning_tokens if isinstance(details, dict) else 0
    return Usage(_tokens(counts.prompt_tokens), _tokens(counts.completion_tokens), _tokens(reasoning))


def _tokens(value: Json) -> int:
    """A token count as the server sent it (a number, or its digits); a malformed one raises ValueError, which
    the caller reports as an unreadable body."""
    if isinstance(value, list | dict):
        raise ValueError("a token count is not a number")
    return int(value or 0)
