"""How the SDK's ``AsyncOpenAI`` sends a chat completion: two choices, both through the SDK's public API.

* **The transport**: ``openai.DefaultAioHttpClient`` (the SDK's ``aiohttp`` extra), an ``httpx2.AsyncClient``
  whose requests go out through one ``aiohttp`` connection pool. Measured on the fake endpoint at 64 requests
  in flight (``benchmarks/bench_engine.py``), it costs about a third less CPU per request than the
  default httpx2 transport, whose connection pool scans (and probes with a ``select`` call) every connection
  it holds whenever a request starts or a response ends. The fallback is the SDK's default client
  (``openai.DefaultAsyncHttpxClient``, httpx2), used when ``aiohttp`` is not installed and when a proxy
  variable is set (httpx2 then picks the proxy from the environment, as any httpx2 client does).
* **The call**: the request's JSON body (the one a Batch API line carries) posted with ``AsyncOpenAI.post``
  (the SDK's documented way to send a body as it is), streamed so that ``max_reply_bytes`` still caps what is
  read. ``chat.completions.create`` first walks every message and the response schema through the SDK's type
  transformer (1.4 ms of CPU per request here, a quarter of the harness's; no public switch skips it), which
  put the harness's CPU per request level with lm-eval's (``benchmarks/bench_peers.py``). Authentication,
  headers, the SDK's errors and timeouts are those of ``create``.
"""

from __future__ import annotations

import importlib.util
import urllib.request
from typing import Final

import httpx2
import openai
from openai import RequestOptions

BEARER_AUTH: Final[RequestOptions] = {"security": {"bearer_auth": True}}
"""Request options that add the client's API key as a bearer token (what ``create`` itself passes)."""

AIOHTTP_MIN_CONNECTIONS = 100
"""aiohttp's own default connection limit; raised to the run's concurrency when that is higher."""


def uses_aiohttp() -> bool:
    """Whether :func:`make_http_client` picks the aiohttp transport in this environment."""
    if urllib.request.getproxies():
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
