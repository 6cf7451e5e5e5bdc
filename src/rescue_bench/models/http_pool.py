"""The one performance seam of the request path: several small connection pools in place of one large one.

httpcore's pool scans every connection it holds (and probes each idle one with a ``select`` call) whenever a
request starts or a response ends, so its cost per request grows with the pool: with 64 requests in flight on
one pool, the scans were the largest share of the harness's CPU after the SDK itself.
:class:`ShardedTransport` spreads requests over a few plain ``httpx2.AsyncHTTPTransport`` instances (public
API only), each holding a few connections, sending each request to the shard with the fewest in flight.

It is used only without proxy variables: with a proxy configured, the SDK's default client (which picks the
proxy from the environment) is the plain fallback, as it is with ``RESCUE_BENCH_PLAIN_HTTP=1``.
"""

from __future__ import annotations

import os
import urllib.request
from collections.abc import AsyncIterator, Callable

import httpx2
import openai

SHARD_SIZE = 8
"""Connections per shard: the scans cost little up to about this many."""


def make_http_client(concurrency: int) -> httpx2.AsyncClient:
    """The SDK's default client, on a :class:`ShardedTransport` when no proxy is configured."""
    if urllib.request.getproxies() or os.environ.get("RESCUE_BENCH_PLAIN_HTTP") == "1":
        limits = httpx2.Limits(max_connections=None, max_keepalive_connections=concurrency)
        return openai.DefaultAsyncHttpxClient(limits=limits)
    shards = max(1, -(-concurrency // SHARD_SIZE))
    return openai.DefaultAsyncHttpxClient(transport=ShardedTransport(shards, SHARD_SIZE))


class ShardedTransport(httpx2.AsyncBaseTransport):
    """Requests spread over ``shards`` plain httpx2 transports, keeping ``per_shard`` connections each."""

    def __init__(self, shards: int, per_shard: int) -> None:
        verify = httpx2.create_ssl_context()  # once: loading the certificates is the costly part
        limits = httpx2.Limits(max_connections=None, max_keepalive_connections=per_shard)
        self._shards = [httpx2.AsyncHTTPTransport(verify=verify, limits=limits) for _ in range(shards)]
        self.in_flight = [0] * shards
        """Requests in flight on each shard."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        index = self.in_flight.index(min(self.in_flight))
        self.in_flight[index] += 1
        try:
            response = await self._shards[index].handle_async_request(request)
        except BaseException:
            self.in_flight[index] -= 1
            raise
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=_Released(response.stream, lambda: self._release(index)),
            extensions=response.extensions,
        )

    def _release(self, index: int) -> None:
        self.in_flight[index] -= 1

    async def aclose(self) -> None:
        for shard in self._shards:
            await shard.aclose()


class _Released(httpx2.AsyncByteStream):
    """A response body that tells its shard when it is closed (the connection is free again)."""

    def __init__(self, inner: httpx2.AsyncByteStream, release: Callable[[], None]) -> None:
        self._inner = inner
        self._release: Callable[[], None] | None = release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            if self._release is not None:
                self._release()
                self._release = None
