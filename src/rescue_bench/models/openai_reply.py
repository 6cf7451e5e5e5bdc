"""A chat completion's JSON body to a :class:`Reply`: answer, reasoning apart, usage with reasoning tokens.

Read through small models of the few fields that matter (unknown keys ignored), not the SDK's
``ChatCompletion``: that one requires fields (``id``, ``created``, ``object``) that compatible servers omit,
and it has no ``reasoning_content`` / ``reasoning``, which they add.

One model per part of the body, generic in how strictly its values are read, for its two readers:

* an online reply (:func:`parse_reply`) reads them as sent (``Json``): content that is not a string is kept
  as its JSON, a token count may be its digits, a ``usage`` that is not an object counts nothing; a body
  without a readable choice is a :class:`RetryableError`, since the next attempt may be better;
* a Batch API result (:mod:`rescue_bench.batch.results`) is a third party's file, read once:
  content must be a string and a token count a non-negative integer (:data:`TokenCount`), and a result
  that does not fit is a failed reply naming the field. Its models are named (:class:`BatchBody` ...)
  because those names appear in the failure recorded for such a result.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from rescue_bench.errors import ModerationRefusal, RetryableError
from rescue_bench.records import Json, Reply, Usage

CountT = TypeVar("CountT")
DetailsT = TypeVar("DetailsT")
ContentT = TypeVar("ContentT")
MessageT = TypeVar("MessageT")
UsageT = TypeVar("UsageT")


class Open(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ReasoningDetails(Open, Generic[CountT]):
    """``usage.completion_tokens_details``."""

    reasoning_tokens: CountT | None = None


class CompletionUsage(Open, Generic[CountT, DetailsT]):
    prompt_tokens: CountT | None = None
    completion_tokens: CountT | None = None
    completion_tokens_details: DetailsT | None = None


class CompletionMessage(Open, Generic[ContentT]):
    content: ContentT | None = None
    reasoning_content: Json = None
    reasoning: Json = None


class CompletionChoice(Open, Generic[MessageT]):
    message: MessageT
    finish_reason: Json = None


class ChatCompletion(Open, Generic[UsageT]):
    choices: Annotated[list[Json], Field(min_length=1)]
    usage: UsageT | None = None
    model: Json = None
    """The model that answered, as the server names it (read as sent: :func:`_name` keeps only a string)."""
    system_fingerprint: Json = None


# --- read strictly (Batch API results) -------------------------------------------------------------------

TokenCount = Annotated[int, Field(strict=True, ge=0)]


class TokenDetails(ReasoningDetails[TokenCount]):
    pass


class BatchUsage(CompletionUsage[TokenCount, TokenDetails]):
    pass


class BatchMessage(CompletionMessage[StrictStr]):
    pass


class BatchChoice(CompletionChoice[BatchMessage]):
    pass


class BatchBody(ChatCompletion[BatchUsage]):
    pass


# --- read as sent (online replies) ---------------------------------------------------------------------

SentBody = ChatCompletion[Json]
SentChoice = CompletionChoice[CompletionMessage[Json]]
SentUsage = CompletionUsage[Json, Json]
SentDetails = ReasoningDetails[Json]


def parse_reply(data: Any, latency: float) -> Reply:
    """The reply in a decoded chat completion body.

    >>> parse_reply({"choices": [{"message": {"content": "hi", "reasoning": "hm"}, "finish_reason": "stop"}]},
    ...             0.5).text
    'hi'
    """
    try:
        body = SentBody.model_validate(data)
        choice = SentChoice.model_validate(body.choices[0])
    except ValidationError:
        raise RetryableError("response without choices") from None
    if choice.finish_reason == "content_filter" and not choice.message.content:
        raise ModerationRefusal("finish_reason content_filter")
    reply = choice_reply(choice, parse_usage(body.usage), latency)
    return replace(reply, model=_name(body.model), system_fingerprint=_name(body.system_fingerprint))


def _name(value: Json) -> str | None:
    """A name the server sent (a model, a fingerprint), kept short; anything else is not one.

    >>> _name("gpt-4o-2024-08-06"), _name(""), _name(3)
    ('gpt-4o-2024-08-06', None, None)
    """
    return value[:200] if isinstance(value, str) and value else None


def parse_usage(usage: Any) -> Usage:
    """Token counts of a response's ``usage`` object.

    >>> parse_usage({"prompt_tokens": 9, "completion_tokens": 4,
    ...              "completion_tokens_details": {"reasoning_tokens": 2}})
    Usage(prompt_tokens=9, completion_tokens=4, reasoning_tokens=2)
    """
    if not isinstance(usage, dict):
        return Usage()
    counts = SentUsage.model_validate(usage)
    details = counts.completion_tokens_details
    return usage_counts(counts, SentDetails.model_validate(details) if isinstance(details, dict) else None)


# --- both ------------------------------------------------------------------------------------------------


def choice_reply(choice: CompletionChoice[Any], usage: Usage, latency: float = 0.0) -> Reply:
    """The :class:`Reply` of a read choice: content (its JSON when not a string), reasoning when a string."""
    message: CompletionMessage[Any] = choice.message
    text = message.content or ""
    finish = choice.finish_reason
    reasoning = message.reasoning_content or message.reasoning
    return Reply(
        text=text if isinstance(text, str) else json.dumps(text),
        reasoning=reasoning if isinstance(reasoning, str) else None,
        usage=usage,
        latency=latency,
        finish_reason=finish if isinstance(finish, str) else None,
    )


def usage_counts(counts: CompletionUsage[Any, Any], details: ReasoningDetails[Any] | None) -> Usage:
    """The token counts of a read ``usage``; ``details`` its read ``completion_tokens_details``, if any."""
    reasoning = 0 if details is None else details.reasoning_tokens
    return Usage(_tokens(counts.prompt_tokens), _tokens(counts.completion_tokens), _tokens(reasoning))


def _tokens(value: Json) -> int:
    """A token count as the server sent it (a number, or its digits); a malformed one raises ValueError, which
    the caller reports as an unreadable body."""
    if isinstance(value, list | dict):
        raise ValueError("a token count is not a number")
    return int(value or 0)
