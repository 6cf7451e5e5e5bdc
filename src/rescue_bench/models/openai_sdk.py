"""The SDK side of :class:`~rescue_bench.models.openai_compat.OpenAICompatProvider`: one ``AsyncOpenAI``
client per endpoint, a chat completion sent and read, and the SDK's errors mapped to the engine's.

The provider imports this module when it first needs the endpoint (:meth:`OpenAICompatProvider.endpoint`):
``import openai`` takes about a second of CPU, and a run answered from the cache, ``estimate`` and
``batch export`` never send a request. Nothing else in the package imports ``openai``.

The mapping (HTTP statuses: :mod:`rescue_bench.models.openai_errors`):

* 429, 408, 5xx, timeouts, connection errors and unreadable bodies -> :class:`RetryableError`;
* ``data_inspection_failed`` (or an empty ``content_filter`` answer) -> :class:`ModerationRefusal`;
* 401, 403 and 404 (bad key, no access, unknown model) -> :class:`ProviderError`, which stops the run;
* any other 4xx, and a reply over ``max_reply_bytes`` -> a failed :class:`Reply` with the reason (no retry);
* a 400/422/500 that complains about ``response_format`` -> :class:`FormatRejected` when the caller can step
  down to a plainer format.

The calls of the Files and Batches APIs (``run --batch``) go through :meth:`SdkEndpoint.call`, which maps
the SDK's errors to :class:`CallFailed`.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import httpx2
import openai
from openai import AsyncOpenAI

from rescue_bench.errors import CallFailed, FormatRejected, RetryableError
from rescue_bench.models.env import KeyOrigin
from rescue_bench.models.http_pool import BEARER_AUTH, make_http_client
from rescue_bench.models.openai_errors import rejects_format, status_failure
from rescue_bench.models.openai_reply import parse_reply
from rescue_bench.records import Reply
from rescue_bench.redaction import public_url, redact, redact_reply

T = TypeVar("T")
_TRANSIENT = (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)


class ReplyTooLarge(Exception):
    """A reply body over the endpoint's ``max_reply_bytes``."""


@dataclass(frozen=True, slots=True)
class EndpointSettings:
    """What the SDK client of one endpoint is made with (the provider's settings)."""

    name: str
    """``<provider>/<model>``: a failed reply's reason starts with it (an HTTP error's adds the URL)."""
    api_key: str
    base_url: str
    timeout: float
    token_field: str
    """The preset's output-cap field (``max_tokens`` or ``max_completion_tokens``)."""
    origin: KeyOrigin
    secrets: tuple[str, ...]
    """Removed from every reply and error message (a gateway may echo the key)."""
    max_reply_bytes: int
    concurrency: int
    http_client: httpx2.AsyncClient | None = None


class SdkEndpoint:
    """One ``AsyncOpenAI`` client (its own connection pool, the SDK's retries off: the engine owns them)."""

    def __init__(self, settings: EndpointSettings) -> None:
        self.settings = settings
        # A query in the base URL (a gateway's ``?api-key=``, Azure's ``?api-version=``) goes on every request
        # as the SDK's default query: pasted into the base URL, it would end up before the path.
        base, query = _split_query(settings.base_url)
        self.client = AsyncOpenAI(
            api_key=settings.api_key,
            base_url=base,
            default_query=query or None,
            max_retries=0,
            timeout=settings.timeout,
            http_client=settings.http_client or make_http_client(settings.concurrency),
        )

    async def aclose(self) -> None:
        await self.client.close()

    async def complete(self, body: dict[str, Any], *, step_down: bool, started: float) -> Reply:
        """One chat completion of ``body``, as a :class:`Reply` (the key removed from its text).

        Raises:
            FormatRejected: ``step_down`` and the endpoint complains about the ``response_format`` sent.
            RetryableError, ModerationRefusal, ProviderError: as the module docstring says.
        """
        try:
            reply = parse_reply(await self._post(body), time.perf_counter() - started)
        except (openai.APITimeoutError, httpx2.TimeoutException) as exc:
            root = _root_cause(exc)
            if isinstance(root, TimeoutError | httpx2.TimeoutException):
                raise RetryableError(f"timed out after {self.settings.timeout:g} s", overload=True) from None
            # The SDK's aiohttp transport maps every aiohttp connection error (a refused certificate
            # included) to httpx2.ConnectTimeout: what went wrong is the error underneath.
            raise RetryableError(f"{self._where}: connection error: {self._clean(str(root))}") from None
        except openai.APIConnectionError as exc:
            cause = self._clean(str(exc.__cause__ or exc))
            raise RetryableError(f"{self._where}: connection error: {cause}") from None
        except httpx2.TransportError as exc:  # while the body streams in, past the SDK's own mapping
            raise RetryableError(f"{self._where}: connection error: {self._clean(str(exc))}") from None
        except (ValueError, httpx2.DecodingError) as exc:  # a truncated or garbled body
            raise RetryableError(f"unreadable response body: {exc.__class__.__name__}") from None
        except ReplyTooLarge as exc:
            return Reply.failure(f"{self.settings.name}: {exc}", latency=time.perf_counter() - started)
        except openai.APIStatusError as exc:
            if step_down and rejects_format(exc):
                raise FormatRejected(exc.status_code, self._clean(exc.message)[:200]) from None
            s = self.settings
            where = f"{s.name} at {public_url(s.base_url)}"
            latency = time.perf_counter() - started
            return status_failure(exc, where=where, origin=s.origin, clean=self._clean, latency=latency)
        return redact_reply(reply, self.settings.secrets)

    async def call(self, make: Callable[[AsyncOpenAI], Awaitable[T]]) -> T:
        """A call of the client's other APIs (files, batches); its SDK errors raise :class:`CallFailed`."""
        try:
            return await make(self.client)
        except _TRANSIENT as exc:
            raise CallFailed(exc.__class__.__name__, None) from None
        except openai.APIStatusError as exc:
            raise CallFailed(exc.__class__.__name__, exc.status_code) from None

    async def _post(self, body: dict[str, Any]) -> Any:
        """One chat completion, its body read up to ``max_reply_bytes`` and decoded as JSON.

        The body is posted as it is (:mod:`rescue_bench.models.http_pool` says why);
        ``cast_to=httpx2.Response`` returns the raw response, its body not read yet (``stream=True``).
        """
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

    async def _read(self, headers: httpx2.Headers, chunks: AsyncIterator[bytes]) -> Any:
        cap = self.settings.max_reply_bytes
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise ReplyTooLarge(_too_large(f"{int(declared):,} bytes", cap))
        received, size = [], 0
        async for chunk in chunks:
            size += len(chunk)
            if size > cap:
                raise ReplyTooLarge(_too_large("more", cap))
            received.append(chunk)
        return json.loads(b"".join(received))

    def _clean(self, text: str) -> str:
        return redact(text, self.settings.secrets)[:500]

    @property
    def _where(self) -> str:
        """The endpoint, safe to show (no user info, no query)."""
        return public_url(self.settings.base_url)


def _split_query(url: str) -> tuple[str, dict[str, str]]:
    """The URL without its query, and the query's fields.

    >>> _split_query("https://h/v1?api-key=k&v=1")
    ('https://h/v1', {'api-key': 'k', 'v': '1'})
    """
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")), query


def _too_large(size: str, cap: int) -> str:
    return f"reply of {size} exceeds max_reply_bytes={cap:,}; not read further"


def _root_cause(exc: BaseException) -> BaseException:
    """The innermost exception of ``exc``'s ``__cause__`` chain (``exc`` itself when it has none)."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return exc
