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

Harness CPU per request matters at 64 requests in flight (the engine benchmark's target is under 2 ms), so
each request in flight has an SDK client of its own (one connection per pool, which httpcore then never
scans), and the clients' transport sends each request in one write (:class:`OneWriteTransport`).
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import ssl
import time
import urllib.request
from collections.abc import Iterable, Sequence
from typing import Any

import httpcore2
import httpx2
import openai
from openai import AsyncOpenAI

from rescue_bench.engine.limits import parse_retry_after
from rescue_bench.errors import ModerationRefusal, ProviderError, RetryableError
from rescue_bench.models.base import Capabilities, GenerationParams, ResponseFormat
from rescue_bench.models.env import redact
from rescue_bench.models.presets import Preset, public_url
from rescue_bench.records import Instance, Json, Reply, Request, Usage

FORMAT_LADDER: tuple[ResponseFormat, ...] = ("json_schema", "json_object", "text")
ONE_WRITE_MAX = 256 * 1024
"""Bytes of a request held back to go out in one write; a larger body goes out as it comes."""
_FATAL_STATUS = (401, 403, 404)
_FORMAT_REJECTION_STATUS = (400, 422, 500)
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "response format")


class OpenAICompatProvider:
    """One model on one OpenAI-compatible endpoint."""

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
    ) -> None:
        self.name = f"{preset.name}/{model}"
        self.model = model
        self.preset = preset
        self.base_url = base_url
        self.timeout = timeout
        self._secrets = (api_key,)
        self._api_key = api_key
        self._shared = http_client is not None
        # One SSL context for all clients: its certificate loading is the expensive part of a client.
        self._verify = httpx2.create_ssl_context() if http_client is None else None
        # httpx2 honours proxy variables only with its own transport (looked up once: clients come and go).
        self._proxied = bool(urllib.request.getproxies())
        self._clients = [self._sdk(api_key, base_url, timeout, http_client or self._http_client())]
        self._idle = list(self._clients)
        """Clients with no request in flight; the one that came back last goes out first."""
        self.format_ceiling: ResponseFormat = preset.best_format
        """The richest response format this endpoint took; lowered when it rejects one."""

    @staticmethod
    def _sdk(api_key: str, base_url: str, timeout: float, http_client: httpx2.AsyncClient) -> AsyncOpenAI:
        return AsyncOpenAI(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout, http_client=http_client
        )

    def _http_client(self) -> httpx2.AsyncClient:
        assert self._verify is not None
        if self._proxied:
            return openai.DefaultAsyncHttpx2Client(verify=self._verify)
        transport = OneWriteTransport(self._verify, openai.DEFAULT_CONNECTION_LIMITS)
        return openai.DefaultAsyncHttpx2Client(transport=transport)

    def _take(self) -> AsyncOpenAI:
        """A client with no request in flight, made when none is left.

        httpcore's pool scans (and probes with a ``select`` call) every idle connection of the pool whenever a
        request starts or ends, which costs milliseconds of CPU per request with 64 connections in one pool.
        With one client per request in flight, each pool holds one connection.
        """
        if self._shared:
            return self._clients[0]
        if self._idle:
            return self._idle.pop()
        client = self._sdk(self._api_key, self.base_url, self.timeout, self._http_client())
        self._clients.append(client)
        return client

    def prepare(self, instances: Sequence[Instance]) -> None:
        return None

    def identity(self) -> dict[str, Json]:
        return {"provider": self.preset.name, "model": self.model, "base_url": public_url(self.base_url)}

    async def aclose(self) -> None:
        for client in self._clients:
            await client.close()

    async def complete(self, request: Request, params: GenerationParams) -> Reply:
        client = self._take()
        try:
            return await self._complete(client, request, params)
        finally:
            if not self._shared:
                self._idle.append(client)

    async def _complete(self, client: AsyncOpenAI, request: Request, params: GenerationParams) -> Reply:
        fmt = _lower(params.response_format, self.format_ceiling)
        started = time.perf_counter()
        while True:
            try:
                # The SDK's post() with the body as JSON: create() would walk every prompt and schema through
                # its type transformer, which costs more CPU than everything else a request needs.
                raw = await client.post(
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


class OneWriteTransport(httpx2.AsyncHTTPTransport):
    """httpx2's transport, with connections that send a request's head and body in one write.

    httpcore writes the head and the body of a request separately, and each send to a server on this machine
    or the LAN can wake it, at a cost to the sender: the sends were 17% of the harness's CPU at 64 requests
    in flight on loopback. Only the connection pool differs from httpx2's (its public ``network_backend``):
    httpx2's request mapping and error translation stay.
    """

    def __init__(self, verify: ssl.SSLContext, limits: httpx2.Limits) -> None:
        super().__init__(verify=verify, limits=limits)
        self.backend = OneWriteBackend()
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=verify,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=self.backend,
        )


class OneWriteBackend(httpcore2.AsyncNetworkBackend):
    """httpcore's AnyIO network backend, whose streams are :class:`OneWriteStream`."""

    def __init__(self) -> None:
        self._inner = httpcore2.AnyIOBackend()
        self.sends = 0
        """Writes that reached a socket, over all connections."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return OneWriteStream(stream, self)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.AsyncNetworkStream:
        return OneWriteStream(await self._inner.connect_unix_socket(path, timeout, socket_options), self)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class OneWriteStream(httpcore2.AsyncNetworkStream):
    """Holds what httpcore writes until it reads: an HTTP/1.1 client writes a whole request, then reads."""

    def __init__(self, inner: httpcore2.AsyncNetworkStream, backend: OneWriteBackend) -> None:
        self._inner = inner
        self._backend = backend
        self._held: list[bytes] = []
        self._size = 0
        self._timeout: float | None = None
        # Looked up once: AnyIO builds all of a socket's attributes on every lookup, and httpcore asks whether
        # the socket is readable before each request on a kept-alive connection.
        self._socket: socket.socket | None = inner.get_extra_info("socket")

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if buffer:
            self._held.append(buffer)
            self._size += len(buffer)
            self._timeout = timeout
            if self._size >= ONE_WRITE_MAX:
                await self._flush()

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        # As httpcore does when a write fails: the server may have answered (and closed) early; read that.
        with contextlib.suppress(httpcore2.WriteError):
            await self._flush()
        return await self._inner.read(max_bytes, timeout)

    async def _flush(self) -> None:
        if self._held:
            data = self._held[0] if len(self._held) == 1 else b"".join(self._held)
            self._held, self._size = [], 0
            self._backend.sends += 1
            await self._inner.write(data, self._timeout)

    async def aclose(self) -> None:
        self._held, self._size = [], 0
        await self._inner.aclose()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.AsyncNetworkStream:
        await self._flush()
        return OneWriteStream(
            await self._inner.start_tls(ssl_context, server_hostname, timeout), self._backend
        )

    def get_extra_info(self, info: str) -> Any:
        if info == "socket":
            return self._socket
        if info == "is_readable":
            return _readable(self._socket)
        return self._inner.get_extra_info(info)


def _readable(sock: socket.socket | None) -> bool:
    """Whether a read would not block: on an idle kept-alive connection, the server has closed it.

    >>> a, b = socket.socketpair()
    >>> _readable(a), b.close(), _readable(a), a.close()
    (False, None, True, None)
    """
    fd = -1 if sock is None else sock.fileno()
    if fd < 0:
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))
