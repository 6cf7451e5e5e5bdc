"""Any OpenAI-compatible chat endpoint, through the ``openai`` SDK: the request's JSON body posted with
``AsyncOpenAI.post`` (:mod:`rescue_bench.models.http_pool` says why).

This module holds what a provider knows without the SDK: its identity, the request body, the response-format
ladder and the whole request's deadline. The SDK side (one ``AsyncOpenAI`` client per provider with a
connection pool that keeps as many connections alive as the run keeps requests in flight, the call, and the
SDK's errors mapped to the engine's) is :mod:`rescue_bench.models.openai_sdk`, imported when the provider
first needs it (:meth:`OpenAICompatProvider.endpoint`): ``import openai`` takes about a second, and a run
answered from the cache never sends a request. The SDK's own retries are off (``max_retries=0``): the engine
owns retries, so that they are counted, jittered, honour ``Retry-After`` and apply only to faults worth
retrying.

* 429, 408, 5xx, timeouts, connection errors and unreadable bodies -> :class:`RetryableError`;
* ``data_inspection_failed`` (or an empty ``content_filter`` answer) -> :class:`ModerationRefusal`;
* 401, 403 and 404 (bad key, no access, unknown model) -> :class:`ProviderError`, which stops the run;
* any other 4xx, and a reply over ``max_reply_bytes`` -> a failed :class:`Reply` with the reason (no retry);
* a 400/422/500 that complains about ``response_format`` -> step down json_schema -> json_object -> text and
  remember it for this endpoint; the first step to a format is said once (a warning that names what was
  refused, what is sent now, whether the schema still goes, and the preset that keeps it), and each reply
  records the format it was asked in (:attr:`Reply.response_format`) and the model the endpoint says
  answered.

``timeout`` bounds a whole request, wall clock, whatever the server does (a reply that drips a byte at a
time included). Reasoning output (``reasoning_content`` or ``reasoning``) is kept apart from the answer. The
key is removed from every reply and message (a gateway may echo it). Proxy variables and ``SSL_CERT_FILE``
are honoured, as by any httpx2 client.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rescue_bench.errors import ConfigError, FormatRejected, ProviderError, RetryableError
from rescue_bench.models.base import Capabilities, Generation, ResponseFormat
from rescue_bench.models.env import KeyOrigin
from rescue_bench.models.presets import (
    FORMAT_LADDER,
    LOCAL_PLACEHOLDER_KEY,
    Preset,
    format_label,
    lower_format,
    reasoning_fields,
    response_format_field,
    sends_sampling,
    step_down_note,
)
from rescue_bench.records import Instance, Json, Reply, Request
from rescue_bench.redaction import public_url, url_secrets

if TYPE_CHECKING:
    import httpx2

    from rescue_bench.models.openai_sdk import SdkEndpoint

log = logging.getLogger("rescue_bench.models.openai_compat")

DEFAULT_MAX_REPLY_BYTES = 4 * 1024 * 1024
"""Replies larger than this are refused unread: no benchmark answer comes near it, a runaway gateway can."""


class OpenAICompatProvider:
    """One model on one OpenAI-compatible endpoint.

    ``key_origin`` names where the key came from (for the 401 hint); ``concurrency`` is how many requests the
    run keeps in flight (the pool keeps that many connections alive); ``http_client`` replaces the SDK's
    (tests use a mock transport).
    """

    capabilities = Capabilities(billed=True)
    """A service bills its requests (a local server's prices are the user's to give): ``--budget`` guards
    them."""

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
        check_key(api_key, key_origin or KeyOrigin(None))
        self.model = model
        self.preset = preset
        self.base_url = base_url
        self.timeout = timeout
        self.max_reply_bytes = max_reply_bytes
        key = () if api_key == LOCAL_PLACEHOLDER_KEY else (api_key,)
        self.secrets: tuple[str, ...] = (*key, *url_secrets(base_url))
        """The key and the secret parts of the URL: taken out of every reply and error this endpoint gives."""
        self._origin = key_origin or KeyOrigin(None)
        self._api_key, self._http_client, self._concurrency = api_key, http_client, concurrency
        self._endpoint: SdkEndpoint | None = None
        self.format_ceiling: ResponseFormat = preset.best_format
        """The richest response format this endpoint took; lowered when it rejects one."""
        self.served_model: str | None = None
        """The model the endpoint last said answered (a reply's ``model``)."""

    def identity(self) -> dict[str, Json]:
        return {"provider": self.preset.name, "model": self.model, "base_url": public_url(self.base_url)}

    def prepare(self, instances: Sequence[Instance]) -> None:
        """Nothing to prepare: each request stands alone (the Provider protocol of branch engine)."""

    @property
    def endpoint(self) -> SdkEndpoint:
        """The SDK side of this endpoint (:mod:`rescue_bench.models.openai_sdk`), made on first use."""
        if self._endpoint is None:
            # Deferred (not to dodge a cycle): the SDK costs about a second to import, and a run
            # answered from the cache (or ``estimate``, or ``batch export``) never needs it.
            from rescue_bench.models.openai_sdk import EndpointSettings, SdkEndpoint

            settings = EndpointSettings(
                name=self.name,
                api_key=self._api_key,
                base_url=self.base_url,
                timeout=self.timeout,
                token_field=self.preset.token_field,
                origin=self._origin,
                secrets=self.secrets,
                max_reply_bytes=self.max_reply_bytes,
                concurrency=self._concurrency,
                http_client=self._http_client,
            )
            self._endpoint = SdkEndpoint(settings)
        return self._endpoint

    async def aclose(self) -> None:
        if self._endpoint is not None:
            await self._endpoint.aclose()

    async def complete(self, request: Request, params: Generation) -> Reply:
        endpoint = self.endpoint  # the first request imports the SDK: not part of its latency
        started = time.perf_counter()
        fmt = self.effective_format(params)
        try:
            async with asyncio.timeout(self.timeout):
                while True:
                    body = self.body(request, params, fmt)
                    check_body(body, self.name)
                    try:
                        reply = await endpoint.complete(body, step_down=fmt != "text", started=started)
                    except FormatRejected as exc:
                        fmt = self._step_down(fmt, f"HTTP {exc.status}: {exc.detail}".rstrip(": "))
                        continue
                    self._served(reply.model)
                    return replace(reply, response_format=format_label(fmt, self.preset))
        except TimeoutError:  # the whole request's deadline, above
            raise RetryableError(f"timed out after {self.timeout:g} s", overload=True) from None

    def body(self, request: Request, params: Generation, fmt: ResponseFormat) -> dict[str, Any]:
        """The JSON body of the chat completion request (also the ``body`` of a Batch API line)."""
        sampling = sends_sampling(self.preset, params.reasoning_effort)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],
            self.preset.token_field: params.cap(request.max_tokens),
        }
        response_format = response_format_field(fmt, request, self.preset)
        if response_format is not None:
            body["response_format"] = response_format
        if params.seed is not None:
            body["seed"] = params.seed
        if sampling:
            body["temperature"] = params.temperature
        if params.top_p is not None and sampling:
            body["top_p"] = params.top_p
        if params.disable_thinking and self.preset.thinking_off:
            body.update(self.preset.thinking_off)
        body.update(reasoning_fields(self.preset, params.reasoning_effort))
        body.update(params.extra_body)  # last: the run's own fields win over the preset's
        return body

    def _step_down(self, refused: ResponseFormat, why: str) -> ResponseFormat:
        """The next plainer format after ``refused``; the first step to it is said once, in plain words."""
        fmt = FORMAT_LADDER[FORMAT_LADDER.index(refused) + 1]
        if lower_format(self.format_ceiling, fmt) != self.format_ceiling:
            self.format_ceiling = fmt
            log.warning("warning: %s", step_down_note(self.name, refused, why, fmt, self.preset))
        return fmt

    def _served(self, model: str | None) -> None:
        """Remember the first model the endpoint says answered; a later other one is said once per change."""
        if model is None or model == self.served_model:
            return
        if self.served_model is not None:
            log.warning(
                "warning: %s: the endpoint's model changed within the run, from %s to %s; the run.json "
                "counts name the model of each reply",
                self.name,
                self.served_model,
                model,
            )
        self.served_model = model

    def effective_format(self, params: Generation) -> ResponseFormat:
        return lower_format(params.response_format, self.format_ceiling)


def check_key(key: str, origin: KeyOrigin) -> None:
    """Refuse a key no HTTP header can carry (a newline, a space, a non-ASCII character), naming where it came
    from and never the key: sent, it fails in the HTTP library, and every request would fail the same way."""
    bad = next((c for c in key if not (c.isascii() and c.isprintable()) or c.isspace()), None)
    if bad is None:
        return
    what = (
        "a newline" if bad in "\r\n" else "a space" if bad.isspace() else "a non-ASCII or control character"
    )
    where = f"the key in {origin.variable}" if origin.variable else "the API key"
    raise ConfigError(f"{where} holds {what}, which no HTTP header can carry; check the variable")


def check_body(body: Mapping[str, Any], name: str) -> None:
    """Refuse a request body that is not strict JSON (``inf`` or ``nan`` in ``extra_body`` or a parameter):
    the same body would fail every request, so the run stops with the reason instead of recording failures."""
    try:
        json.dumps(body, allow_nan=False)
    except (ValueError, TypeError) as exc:
        raise ProviderError(
            f"{name}: the request body cannot be sent as JSON ({exc}); fix the run's settings"
        ) from None
