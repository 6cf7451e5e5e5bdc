"""HTTP errors of an OpenAI-compatible endpoint, mapped to what the engine does next.

* 429, 408 and 5xx -> :class:`RetryableError`, with the server's ``Retry-After`` (:func:`parse_retry_after`);
* ``data_inspection_failed`` anywhere in the error -> :class:`ModerationRefusal`;
* 401, 403 and 404 (bad key, no access, unknown model) -> :class:`ProviderError`, which stops the run: no
  request can succeed, so asking the other thousands would only repeat the error;
* any other 4xx -> a failed :class:`Reply` with the server's message (no retry).

:func:`rejects_format` recognises a 400/422/500 that complains about ``response_format``, so the provider can
step down to a plainer format. Messages pass through a ``clean`` function that removes the key.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable

import httpx2
import openai

from rescue_bench.errors import ModerationRefusal, ProviderError, RetryableError
from rescue_bench.models.env import KeyOrigin
from rescue_bench.records import Reply
from rescue_bench.retry_after import parse_retry_after

FATAL_STATUS = (401, 403, 404)
_OVERLOAD_STATUS = (408, 429, 503, 504)
_FORMAT_REJECTION_STATUS = (400, 422, 500)
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "response format")


def status_failure(
    exc: openai.APIStatusError, *, where: str, origin: KeyOrigin, clean: Callable[[str], str], latency: float
) -> Reply:
    """The failed reply for an HTTP error status, or the exception the status calls for."""
    status = exc.status_code
    if "data_inspection_failed" in error_text(exc):
        raise ModerationRefusal(f"HTTP {status} data_inspection_failed") from None
    if status in (408, 429) or status >= 500:
        retry_after = parse_retry_after(exc.response.headers)
        overload = status in _OVERLOAD_STATUS  # the endpoint says it has more than it can take
        raise RetryableError(
            f"HTTP {status}: {clean(exc.message)}", retry_after=retry_after, overload=overload
        ) from None
    message = f"{where}: HTTP {status}: {clean(exc.message)}"
    if status == 401:
        raise ProviderError(message + origin.hint()) from None
    if status == 404:
        raise ProviderError(message + " (check the model name and --base-url)") from None
    if status in FATAL_STATUS:
        raise ProviderError(message) from None
    return Reply.failure(message, latency=latency)


def error_text(exc: openai.APIStatusError) -> str:
    """Everything the server said about an error: message, parsed body and raw text."""
    parts = [exc.message, json.dumps(exc.body, default=str) if exc.body is not None else ""]
    # A body that was not read or does not decode adds nothing: the message and body above say it all.
    with contextlib.suppress(httpx2.ResponseNotRead, UnicodeDecodeError):
        parts.append(exc.response.text[:2000])
    return " ".join(parts)


def rejects_format(exc: openai.APIStatusError) -> bool:
    """Whether an error complains about the ``response_format`` sent (not about moderation)."""
    if exc.status_code not in _FORMAT_REJECTION_STATUS:
        return False
    text = error_text(exc).lower()
    return "data_inspection_failed" not in text and any(word in text for word in _FORMAT_WORDS)
