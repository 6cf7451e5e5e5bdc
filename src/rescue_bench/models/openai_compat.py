"""Any OpenAI-compatible chat endpoint, through the official ``openai`` SDK's async client.

The SDK's own retries are off (``max_retries=0``): the engine owns retries, so that they are counted,
jittered, honour ``Retry-After`` and apply only to faults worth retrying. This module only translates:

* 429, 408, 5xx, timeouts, connection errors and unreadable bodies -> :class:`RetryableError`;
* ``data_inspection_failed`` (or an empty ``content_filter`` answer) -> :class:`ModerationRefusal`;
* 401, 403 and 404 (bad key, no access, unknown model) -> :class:`ProviderError`, which stops the run: no
  request can succeed, so asking the other thousands would only repeat the error;
* any other 4xx -> a failed :class:`Reply` with the server's message (no retry);
* a 400/422/500 that complains about ``response_format`` -> step down json_schema -> json_object -> text and
  remember it for this endpoint.

Reasoning output (``reasoning_content`` or ``reasoning``) is kept apart from the answer. No message carries
the key.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

import httpx2
import openai
from openai import AsyncOpenAI

from rescue_bench.engine.limits import ModerationRefusal, RetryableError, parse_retry_after
from rescue_bench.errors import ProviderError
from rescue_bench.models.base import GenerationParams, ResponseFormat
from rescue_bench.models.env import redact
from rescue_bench.models.presets import Preset, public_url
from rescue_bench.records import Json, Reply, Request, Usage

FORMAT_LADDER: tuple[ResponseFormat, ...] = ("json_schema", "json_object", "text")
_FATAL_STATUS = (401, 403, 404)
_FORMAT_REJECTION_STATUS = (400, 422, 500)
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "response format")


class OpenAICompatProvider:
    """One model on one OpenAI-compatible endpoint."""

    def __init__(
        self,
        model: str,
        *,
        preset: Preset,
        base_url: str,
        api_key: str,
        timeout: float = 120.0,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        self.name = f"{preset.name}/{model}"
        self.model = model
        self.preset = preset
        self.base_url = base_url
        self._secrets = (api_key,)
        self._client = AsyncOpenAI(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout, http_client=http_client
        )
        self.timeout = timeout
        self.format_ceiling: ResponseFormat = preset.best_format
        """The richest response format this endpoint took; lowered when it rejects one."""

    def identity(self) -> dict[str, Json]:
        return {"provider": self.preset.name, "model": self.model, "base_url": public_url(self.base_url)}

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(self, request: Request, params: GenerationParams) -> Reply:
        fmt = _lower(params.response_format, self.format_ceiling)
        started = time.perf_counter()
        while True:
            try:
                response = await self._client.chat.completions.create(**self.body(request, params, fmt))
            except openai.APIStatusError as exc:
                if fmt != "text" and _rejects_format(exc):
                    fmt = FORMAT_LADDER[FORMAT_LADDER.index(fmt) + 1]
                    self.format_ceiling = _lower(self.format_ceiling, fmt)
                    continue
                return self._status_failure(exc, time.perf_counter() - started)
            except openai.APITimeoutError:
                raise RetryableError(f"timeout after {self.timeout:g} s") from None
            except openai.APIConnectionError as exc:
                raise RetryableError(f"connection error: {self._clean(str(exc.__cause__ or exc))}") from None
            except ValueError as exc:  # the SDK's json.loads on a truncated or garbled body
                raise RetryableError(f"unreadable response body: {exc.__class__.__name__}") from None
            return self._reply(response, time.perf_counter() - started)

    def body(self, request: Request, params: GenerationParams, fmt: ResponseFormat) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` (also the body of a Batch API line)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],
            "temperature": params.temperature,
            self.preset.token_field: request.max_tokens or params.max_tokens,
        }
        if params.seed is not None:
            body["seed"] = params.seed
        response_format = _response_format(fmt, request, self.preset)
        if response_format is not None:
            body["response_format"] = response_format
        extra: dict[str, Json] = {}
        if params.disable_thinking and self.preset.thinking_off:
            extra.update(self.preset.thinking_off)
        extra.update(params.extra)
        if extra:
            body["extra_body"] = extra
        return body

    def effective_format(self, params: GenerationParams) -> ResponseFormat:
        return _lower(params.response_format, self.format_ceiling)

    def _status_failure(self, exc: openai.APIStatusError, latency: float) -> Reply:
        status = exc.status_code
        text = _error_text(exc)
        if "data_inspection_failed" in text:
            raise ModerationRefusal(f"HTTP {status} data_inspection_failed") from None
        if status in (408, 429) or status >= 500:
            retry_after = parse_retry_after(dict(exc.response.headers))
            raise RetryableError(
                f"HTTP {status}: {self._clean(exc.message)}", retry_after=retry_after
            ) from None
        message = f"{self.name} at {public_url(self.base_url)}: HTTP {status}: {self._clean(exc.message)}"
        if status in _FATAL_STATUS:
            raise ProviderError(message + _hint(status, self.preset)) from None
        return Reply.failure(message, latency=latency)

    def _reply(self, response: Any, latency: float) -> Reply:
        if not response.choices:
            raise RetryableError("response without choices")
        choice = response.choices[0]
        message = choice.message
        text = message.content or ""
        finish = choice.finish_reason
        if finish == "content_filter" and not text:
            raise ModerationRefusal("finish_reason content_filter")
        extra = message.model_extra or {}
        reasoning = extra.get("reasoning_content") or extra.get("reasoning")
        return Reply(
            text=text,
            reasoning=reasoning if isinstance(reasoning, str) else None,
            usage=_usage(response.usage),
            latency=latency,
            finish_reason=finish,
        )

    def _clean(self, text: str) -> str:
        return redact(text, self._secrets)[:500]


def _lower(a: ResponseFormat, b: ResponseFormat) -> ResponseFormat:
    """The poorer of two formats.

    >>> _lower("json_schema", "json_object"), _lower("text", "json_schema")
    ('json_object', 'text')
    """
    return FORMAT_LADDER[max(FORMAT_LADDER.index(a), FORMAT_LADDER.index(b))]


def _response_format(fmt: ResponseFormat, request: Request, preset: Preset) -> dict[str, Json] | None:
    if fmt == "text":
        return None
    if fmt == "json_object":
        out: dict[str, Json] = {"type": "json_object"}
        if preset.json_object_schema and request.response_schema:
            out["schema"] = request.response_schema
        return out
    name = f"{request.task or 'answer'}_answer"
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": request.response_schema, "strict": False},
    }


def _error_text(exc: openai.APIStatusError) -> str:
    parts = [exc.message, json.dumps(exc.body, default=str) if exc.body is not None else ""]
    with contextlib.suppress(httpx2.ResponseNotRead, UnicodeDecodeError):
        parts.append(exc.response.text[:2000])
    return " ".join(parts)


def _rejects_format(exc: openai.APIStatusError) -> bool:
    if exc.status_code not in _FORMAT_REJECTION_STATUS:
        return False
    text = _error_text(exc).lower()
    return "data_inspection_failed" not in text and any(word in text for word in _FORMAT_WORDS)


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    details = getattr(usage, "completion_tokens_details", None)
    reasoning = getattr(details, "reasoning_tokens", None) or 0
    return Usage(int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0), int(reasoning))


def _hint(status: int, preset: Preset) -> str:
    if status == 401:
        return f" (check the key: {' or '.join(preset.key_envs)}, or --api-key-env)"
    if status == 404:
        return " (check the model name and --base-url)"
    return ""
