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
import itertools
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
CLIENT_SHARDS = 8
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
        if http_client is not None:
            self._clients = [self._sdk(api_key, base_url, timeout, http_client)]
        else:
            # Several clients, used in turn: httpcore's pool scans (and probes) every idle connection whenever
            # a request starts or ends, which costs milliseconds of CPU per request at 64 connections in one
            # pool. They share one SSL context, whose certificate loading is the expensive part of a client.
            verify = httpx2.create_ssl_context()
            self._clients = [
                self._sdk(api_key, base_url, timeout, openai.DefaultAsyncHttpx2Client(verify=verify))
                for _ in range(CLIENT_SHARDS)
            ]
        self._turn = itertools.cycle(self._clients)
        self.timeout = timeout
        self.format_ceiling: ResponseFormat = preset.best_format
        """The richest response format this endpoint took; lowered when it rejects one."""

    @staticmethod
    def _sdk(
        api_key: str, base_url: str, timeout: float, http_client: httpx2.AsyncClient | None
    ) -> AsyncOpenAI:
        return AsyncOpenAI(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout, http_client=http_client
        )

    def identity(self) -> dict[str, Json]:
        return {"provider": self.preset.name, "model": self.model, "base_url": public_url(self.base_url)}

    async def aclose(self) -> None:
        for client in self._clients:
            await client.close()

    async def complete(self, request: Request, params: GenerationParams) -> Reply:
        fmt = _lower(params.response_format, self.format_ceiling)
        started = time.perf_counter()
        while True:
            try:
                # The SDK's post() with the body as JSON: create() would walk every prompt and schema through
                # its type transformer, which costs more CPU than everything else a request needs.
                raw = await next(self._turn).post(
                    "/chat/completions",
                    cast_to=httpx2.Response,
                    body=self.body(request, params, fmt),
                    options={"security": {"bearer_auth": True}},
                )
                data = json.loads(raw.content)
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
            except ValueError as exc:  # a truncated or garbled body
                raise RetryableError(f"unreadable response body: {exc.__class__.__name__}") from None
            return self._reply(data, time.perf_counter() - started)

    def body(self, request: Request, params: GenerationParams, fmt: ResponseFormat) -> dict[str, Any]:
        """The JSON body of the chat completion request (also the ``body`` of a Batch API line)."""
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
        if params.disable_thinking and self.preset.thinking_off:
            body.update(self.preset.thinking_off)
        body.update(params.extra)
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

    def _reply(self, data: Any, latency: float) -> Reply:
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
            usage=_usage(data.get("usage")),
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
    """Token counts of a response's ``usage`` object.

    >>> _usage({"prompt_tokens": 9, "completion_tokens": 4,
    ...         "completion_tokens_details": {"reasoning_tokens": 2}})
    Usage(prompt_tokens=9, completion_tokens=4, reasoning_tokens=2)
    """
    if not isinstance(usage, dict):
        return Usage()
    details = usage.get("completion_tokens_details") or {}
    reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else 0
    return Usage(
        int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0), int(reasoning or 0)
    )


def _hint(status: int, preset: Preset) -> str:
    if status == 401:
        return f" (check the key: {' or '.join(preset.key_envs)}, or --api-key-env)"
    if status == 404:
        return " (check the model name and --base-url)"
    return ""
