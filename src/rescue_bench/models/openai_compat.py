"""Any OpenAI-compatible chat endpoint, through the ``openai`` SDK: the request's JSON body posted with
``AsyncOpenAI.post``, or with ``RESCUE_BENCH_PLAIN_HTTP=1`` the typed ``chat.completions.create`` (the seam of
:mod:`rescue_bench.models.http_pool`).

One ``AsyncOpenAI`` client per provider (one endpoint), with a connection pool that keeps as many connections
alive as the run keeps requests in flight (its transport: :mod:`rescue_bench.models.http_pool`). The SDK's own
retries are off (``max_retries=0``): the engine owns retries, so that they are counted, jittered, honour
``Retry-After`` and apply only to faults worth retrying.
This module only translates (HTTP statuses: :mod:`rescue_bench.models.openai_errors`):

* 429, 408, 5xx, timeouts, connection errors and unreadable bodies -> :class:`RetryableError`;
* ``data_inspection_failed`` (or an empty ``content_filter`` answer) -> :class:`ModerationRefusal`;
* 401, 403 and 404 (bad key, no access, unknown model) -> :class:`ProviderError`, which stops the run;
* any other 4xx, and a reply over ``max_reply_bytes`` -> a failed :class:`Reply` with the reason (no retry);
* a 400/422/500 that complains about ``response_format`` -> step down json_schema -> json_object -> text and
  remember it for this endpoint.

``timeout`` bounds a whole request, wall clock, whatever the server does (a reply that drips a byte at a
time included). Reasoning output (``reasoning_content`` or ``reasoning``) is kept apart from the answer. The
key is removed from every reply and message (a gateway may echo it). Proxy variables and ``SSL_CERT_FILE``
are honoured, as by any httpx2 client.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, cast

import httpx2
import openai
from openai import AsyncOpenAI, omit

from rescue_bench.errors import RetryableError
from rescue_bench.models.base import Capabilities, GenerationParams, ResponseFormat
from rescue_bench.models.env import redact
from rescue_bench.models.http_pool import BEARER_AUTH, make_http_client, posts_json_body
from rescue_bench.models.openai_errors import KeyOrigin, rejects_format, status_failure
from rescue_bench.models.openai_reply import parse_reply
from rescue_bench.models.presets import (
    FORMAT_LADDER,
    LOCAL_PLACEHOLDER_KEY,
    Preset,
    lower_format,
    public_url,
    reasoning_fields,
    response_format_field,
    sends_sampling,
)
from rescue_bench.records import Instance, Json, Reply, Request

if TYPE_CHECKING:
    from openai import AsyncAPIResponse
    from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
    from openai.types.chat.completion_create_params import ResponseFormat as SDKResponseFormat

DEFAULT_MAX_REPLY_BYTES = 4 * 1024 * 1024
"""Replies larger than this are refused unread: no benchmark answer comes near it, a runaway gateway can."""


class ReplyTooLarge(Exception):
    """A reply body over the provider's ``max_reply_bytes``."""


class OpenAICompatProvider:
    """One model on one OpenAI-compatible endpoint.

    ``key_origin`` names where the key came from (for the 401 hint); ``concurrency`` is how many requests the
    run keeps in flight (the pool keeps that many connections alive); ``http_client`` replaces the SDK's
    (tests use a mock transport).
    """

    capabilities = Capabilities()

    def __init__(
        self,
        model: str,
        *,
        preset: Preset,
        base_url: str,
        api_key: str,
        timeout: float = 120.0,
        http_client: httpx2.AsyncClient | None = None,
        key_origin: KeyOrigin | None = None,
        concurrency: int = 64,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        self.name = f"{preset.name}/{model}"
        self.model = model
        self.preset = preset
        self.base_url = base_url
        self.timeout = timeout
        self.max_reply_bytes = max_reply_bytes
        self._secrets = () if api_key == LOCAL_PLACEHOLDER_KEY else (api_key,)
        self._origin = key_origin or KeyOrigin(None)
        self.client = AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=timeout,
            http_client=http_client or make_http_client(concurrency),
        )
        self.format_ceiling: ResponseFormat = preset.best_format
        """The richest response format this endpoint took; lowered when it rejects one."""

    def identity(self) -> dict[str, Json]:
        return {"provider": self.preset.name, "model": self.model, "base_url": public_url(self.base_url)}

    def prepare(self, instances: Sequence[Instance]) -> None:
        """Nothing to prepare: each request stands alone (the Provider protocol of branch engine)."""

    async def aclose(self) -> None:
        await self.client.close()

    async def complete(self, request: Request, params: GenerationParams) -> Reply:
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self.timeout):
                return await self._complete(request, params, started)
        except TimeoutError:  # the whole request's deadline, above
            raise RetryableError(f"timed out after {self.timeout:g} s") from None
        except (openai.APITimeoutError, httpx2.TimeoutException) as exc:
            root = _root_cause(exc)
            if isinstance(root, TimeoutError | httpx2.TimeoutException):
                raise RetryableError(f"timed out after {self.timeout:g} s") from None
            # The SDK's aiohttp transport maps every aiohttp connection error (a refused certificate
            # included) to httpx2.ConnectTimeout: what went wrong is the error underneath.
            raise RetryableError(f"connection error: {self._clean(str(root))}") from None
        except openai.APIConnectionError as exc:
            raise RetryableError(f"connection error: {self._clean(str(exc.__cause__ or exc))}") from None
        except httpx2.TransportError as exc:  # while the body streams in, past the SDK's own mapping
            raise RetryableError(f"connection error: {self._clean(str(exc))}") from None
        except (ValueError, httpx2.DecodingError) as exc:  # a truncated or garbled body
            raise RetryableError(f"unreadable response body: {exc.__class__.__name__}") from None
        except ReplyTooLarge as exc:
            return Reply.failure(f"{self.name}: {exc}", latency=time.perf_counter() - started)

    async def _complete(self, request: Request, params: GenerationParams, started: float) -> Reply:
        fmt = self.effective_format(params)
        while True:
            try:
                data = await self._post(request, params, fmt)
            except openai.APIStatusError as exc:
                if fmt != "text" and rejects_format(exc):
                    fmt = FORMAT_LADDER[FORMAT_LADDER.index(fmt) + 1]
                    self.format_ceiling = lower_format(self.format_ceiling, fmt)
                    continue
                where = f"{self.name} at {public_url(self.base_url)}"
                latency = time.perf_counter() - started
                return status_failure(
                    exc, where=where, origin=self._origin, clean=self._clean, latency=latency
                )
            reply = parse_reply(data, time.perf_counter() - started)
            if not self._secrets:
                return reply
            reasoning = None if reply.reasoning is None else redact(reply.reasoning, self._secrets)
            return dataclasses.replace(reply, text=redact(reply.text, self._secrets), reasoning=reasoning)

    async def _post(self, request: Request, params: GenerationParams, fmt: ResponseFormat) -> Any:
        """One chat completion, its body read up to ``max_reply_bytes`` and decoded as JSON."""
        body = self.body(request, params, fmt)
        if not posts_json_body():
            async with self._create(body) as typed:
                return await self._read(typed.headers, typed.iter_bytes())
        # The request path's seam (models/http_pool.py): the body as JSON, past create()'s type transformer.
        # cast_to=httpx2.Response returns the raw response, its body not read yet (stream=True).
        response = cast(
            "httpx2.Response",
            await self.client.post(
                "/chat/completions", cast_to=httpx2.Response, body=body, options=BEARER_AUTH, stream=True
            ),
        )
        try:
            return await self._read(response.headers, response.aiter_bytes())
        finally:
            await response.aclose()

    def _create(self, body: dict[str, Any]) -> AbstractAsyncContextManager[AsyncAPIResponse[ChatCompletion]]:
        """The SDK's typed call with ``body``'s fields (the plain path of the seam)."""
        body = dict(body)
        limit = body.pop(self.preset.token_field)
        model, messages, temperature, seed, response_format = (
            body.pop(k, None) for k in ("model", "messages", "temperature", "seed", "response_format")
        )
        return self.client.chat.completions.with_streaming_response.create(
            model=model,
            messages=cast("list[ChatCompletionMessageParam]", messages),
            temperature=omit if temperature is None else temperature,  # left out with OpenAI reasoning
            seed=omit if seed is None else seed,
            max_tokens=limit if self.preset.token_field == "max_tokens" else omit,
            max_completion_tokens=limit if self.preset.token_field == "max_completion_tokens" else omit,
            response_format=omit if response_format is None else cast("SDKResponseFormat", response_format),
            extra_body=body or None,  # top_p, the preset's thinking/reasoning fields, the run's extra fields
        )

    async def _read(self, headers: httpx2.Headers, chunks: AsyncIterator[bytes]) -> Any:
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_reply_bytes:
            raise ReplyTooLarge(self._too_large(f"{int(declared):,} bytes"))
        received, size = [], 0
        async for chunk in chunks:
            size += len(chunk)
            if size > self.max_reply_bytes:
                raise ReplyTooLarge(self._too_large("more"))
            received.append(chunk)
        return json.loads(b"".join(received))

    def _too_large(self, size: str) -> str:
        return f"reply of {size} exceeds max_reply_bytes={self.max_reply_bytes:,}; not read further"

    def body(self, request: Request, params: GenerationParams, fmt: ResponseFormat) -> dict[str, Any]:
        """The JSON body of the chat completion request (also the ``body`` of a Batch API line), its keys in
        the order ``create`` sends them, so that both calls of the seam send the same bytes."""
        sampling = sends_sampling(self.preset, params.reasoning_effort)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],
            **({"temperature": params.temperature} if sampling else {}),
            self.preset.token_field: params.cap(request.max_tokens or params.max_tokens),
        }
        if params.top_p is not None and sampling:
            body["top_p"] = params.top_p
        if params.seed is not None:
            body["seed"] = params.seed
        response_format = response_format_field(fmt, request, self.preset)
        if response_format is not None:
            body["response_format"] = response_format
        if params.disable_thinking and self.preset.thinking_off:
            body.update(self.preset.thinking_off)
        body.update(reasoning_fields(self.preset, params.reasoning_effort))
        body.update(params.extra)  # last: the run's own fields win over the preset's
        return _in_create_order(body)

    def effective_format(self, params: GenerationParams) -> ResponseFormat:
        return lower_format(params.response_format, self.format_ceiling)

    def _clean(self, text: str) -> str:
        return redact(text, self._secrets)[:500]


CREATE_ORDER = (
    "model",
    "messages",
    "max_completion_tokens",
    "max_tokens",
    "response_format",
    "seed",
    "temperature",
)
"""The fields :meth:`OpenAICompatProvider._create` passes by name, in the order ``create`` writes them; the
others go in ``extra_body``, after them."""


def _in_create_order(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with its keys in the order ``create`` sends them, so both calls send the same bytes."""
    named = {key: body[key] for key in CREATE_ORDER if key in body}
    return {**named, **{key: value for key, value in body.items() if key not in named}}


def _root_cause(exc: BaseException) -> BaseException:
    """The innermost exception of ``exc``'s ``__cause__`` chain (``exc`` itself when it has none)."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return exc
