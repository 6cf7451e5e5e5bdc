"""The one performance seam of the request path: which HTTP client the SDK's ``AsyncOpenAI`` sends through.

The seam is the SDK's own, documented choice of transport: ``openai.DefaultAioHttpClient`` (the SDK's
``aiohttp`` extra), an ``httpx2.AsyncClient`` whose requests go out through one ``aiohttp`` connection pool.
Measured on the fake endpoint at 64 requests in flight (docs/benchmarks.md, "The core redesign"), it costs
about a third less CPU per request than the default httpx2 transport, whose connection pool scans (and
probes with a ``select`` call) every connection it holds whenever a request starts or a response ends.
Everything above the transport (the SDK's typed call, its errors, the streamed body) is the same.

The plain fallback is the SDK's default client (``openai.DefaultAsyncHttpxClient``, httpx2), used when
``aiohttp`` is not installed, when a proxy variable is set (httpx2 then picks the proxy from the environment,
as any httpx2 client does), and with ``RESCUE_BENCH_PLAIN_HTTP=1``.
"""

from __future__ import annotations

import importlib.util
import os
import urllib.request

import httpx2
import openai

PLAIN_HTTP_ENV = "RESCUE_BENCH_PLAIN_HTTP"
"""Set to ``1`` to send through the SDK's default httpx2 client."""

AIOHTTP_MIN_CONNECTIONS = 100
"""aiohttp's own default connection limit; raised to the run's concurrency when that is higher."""


def uses_aiohttp() -> bool:
    """Whether :func:`make_http_client` picks the aiohttp transport in this environment."""
    if os.environ.get(PLAIN_HTTP_ENV) == "1" or urllib.request.getproxies():
        return False
    return importlib.util.find_spec("aiohttp") is not None


def make_http_client(concurrency: int) -> httpx2.AsyncClient:
    """The SDK's aiohttp client when :func:`uses_aiohttp`, else its default httpx2 client.

    Either keeps ``concurrency`` connections alive, so a run's requests in flight never wait for a
    connection.
    """
    if uses_aiohttp():
        limit = max(AIOHTTP_MIN_CONNECTIONS, concurrency)
        limits = httpx2.Limits(max_connections=limit, max_keepalive_connections=concurrency)
        return openai.DefaultAioHttpClient(limits=limits)
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=concurrency)
    return openai.DefaultAsyncHttpxClient(limits=limits)
