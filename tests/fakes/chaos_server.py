"""A fault-injecting OpenAI-compatible server on loopback: the fake server plus seeded storms of failures.

It extends :class:`~tests.fakes.openai_server.FakeOpenAIServer` (real HTTP/1.1, the real ``openai`` SDK on the
other end) with:

* **deterministic answers per request content**: :func:`chaos_reply` derives the answer from the messages
  and the JSON schema alone (a seeded RNG over their hash), so a run that goes through any number of faults
  gets, for every request, the same text as a fault-free run. Some answers are deliberately imperfect (an
  item left out, a label outside the set, prose without JSON) so that single re-asks, invalid labels and
  parse failures happen too;
* **seeded faults** (:class:`FaultRates`; defaults: 10% HTTP 500, 5% 429 with ``Retry-After``, 3% hangs longer
  than the client's timeout, 2% bad bodies (half a JSON body, or an HTML page with status 200), 1% TCP
  resets). Whether attempt ``n`` of a request faults depends only on ``(seed, request content, n)``, so a
  storm is reproducible whatever the timing. No request is faulted more than ``max_streak`` times in a row,
  so a client that retries at least that often always gets through;
* **a server-side log** (:class:`Entry`): every request with its session, content key, attempt number,
  planned outcome and whether the response was delivered;
* **sessions, hooks and a freeze** for kill tests: :meth:`ChaosServer.begin_session` labels the connections
  of the next client process, :meth:`ChaosServer.hook_at` runs a callback when the n-th request of the
  session arrives (to SIGKILL the client at that moment), and :meth:`ChaosServer.freeze_at` holds every
  response from the n-th request on, so the client can settle before it is killed.

Keys: ``Entry.key`` is the content key the engine records in ``requests.jsonl`` (``request_key``), rebuilt
from the request body by :func:`engine_request_key`.

Run it standalone (``python tests/fakes/chaos_server.py --seed 1``) to point a real ``rescue-bench run`` at a
storm; it prints its base URL on the first line of stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import dataclasses
import hashlib
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tests.fakes.openai_server import (
    FakeOpenAIServer,
    Script,
    ok,
    rate_limited,
    reset,
    server_error,
    synthesize,
    truncated_json,
)

from rescue_bench.records import Request

Outcome = Literal["ok", "http_500", "http_429", "timeout", "truncated_json", "html_body", "reset"]
FAULTS: tuple[Outcome, ...] = ("http_500", "http_429", "timeout", "truncated_json", "html_body", "reset")
HTML_PAGE = b"<html><head><title>Gateway</title></head><body>Please sign in to continue.</body></html>"


@dataclass(frozen=True, slots=True)
class FaultRates:
    """Probability of each fault per attempt; the rest is answered normally."""

    server_error: float = 0.10
    rate_limit: float = 0.05
    timeout: float = 0.03
    bad_body: float = 0.02
    """Split evenly between a truncated JSON body and an HTML page sent with status 200."""
    reset: float = 0.01

    @property
    def total(self) -> float:
        return self.server_error + self.rate_limit + self.timeout + self.bad_body + self.reset


NO_FAULTS = FaultRates(0.0, 0.0, 0.0, 0.0, 0.0)


def unit(*parts: object) -> float:
    """A uniform number in [0, 1) that depends only on ``parts``.

    >>> unit("a", 1) == unit("a", 1), unit("a", 1) == unit("a", 2)
    (True, False)
    """
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def plan_outcome(seed: int, key: str, nth: int, rates: FaultRates, streak: int, max_streak: int) -> Outcome:
    """The outcome of attempt ``nth`` of the request ``key``; ``streak`` faults came right before it.

    >>> plan_outcome(0, "k", 1, NO_FAULTS, 0, 3)
    'ok'
    >>> plan_outcome(0, "k", 9, FaultRates(server_error=1.0), 3, 3)
    'ok'
    >>> plan_outcome(0, "k", 1, FaultRates(server_error=1.0), 0, 3)
    'http_500'
    """
    if streak >= max_streak:
        return "ok"
    u = unit(seed, key, nth)
    edges: tuple[tuple[float, Outcome], ...] = (
        (rates.server_error, "http_500"),
        (rates.rate_limit, "http_429"),
        (rates.timeout, "timeout"),
        (rates.bad_body / 2, "truncated_json"),
        (rates.bad_body / 2, "html_body"),
        (rates.reset, "reset"),
    )
    edge = 0.0
    for rate, outcome in edges:
        edge += rate
        if u < edge:
            return outcome
    return "ok"


def engine_request_key(body: Mapping[str, Any]) -> str:
    """The ``request_key`` that the engine records for the request that produced ``body``."""
    fmt = body.get("response_format") or {}
    schema = (
        fmt.get("json_schema", {}).get("schema") if fmt.get("type") == "json_schema" else fmt.get("schema")
    )
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or 0
    request = Request(
        task="",
        messages=tuple(body.get("messages") or ()),
        response_schema=schema or {},
        instance_ids=(),
        max_tokens=int(max_tokens),
    )
    return request.content_key()


# -- deterministic answers -----------------------------------------------------------------------------------

WORDS = ("unheard", "hopeful", "guarded", "tired", "hurt", "relieved", "anxious", "tender", "defensive")


def chaos_reply(messages: Any, schema: Mapping[str, Any] | None) -> str:
    """An answer that depends only on ``messages`` and ``schema``: mostly valid, sometimes flawed.

    About 2% are prose without JSON, 6% leave out the last item of a batch, 3% carry a label outside the
    allowed set and 4% wrap the JSON in prose and a code fence.

    >>> schema = {"properties": {"predictions": {"type": "array", "items": {"type": "object", "properties": {
    ...     "id": {"type": "string", "enum": ["c1", "c2"]}, "x": {"type": "string", "enum": ["a", "b"]}}}}}}
    >>> chaos_reply([{"role": "user", "content": "hi"}], schema) == chaos_reply(
    ...     [{"role": "user", "content": "hi"}], schema)
    True
    """
    blob = json.dumps([messages, schema], sort_keys=True, ensure_ascii=False)
    rng = random.Random(hashlib.sha256(blob.encode()).hexdigest())
    item_schema = (((schema or {}).get("properties") or {}).get("predictions") or {}).get("items")
    if not isinstance(item_schema, dict):
        return json.dumps(synthesize(schema or {"type": "object"}, ["c1"]))
    ids = list(((item_schema.get("properties") or {}).get("id") or {}).get("enum") or ["c1"])
    entries = [{**schema_value(item_schema, rng), "id": i} for i in ids]
    style = rng.random()
    if style < 0.02:
        return "I am not able to give a structured answer for these items."
    if style < 0.08 and len(entries) > 1:
        entries = entries[:-1]
    elif style < 0.11:
        _spoil_label(entries[rng.randrange(len(entries))])
    text = json.dumps({"predictions": entries}, ensure_ascii=False)
    if style > 0.96:
        return f"Here is my assessment.\n```json\n{text}\n```\nI hope this helps."
    return text


def schema_value(schema: Mapping[str, Any], rng: random.Random) -> Any:
    if schema.get("enum"):
        return rng.choice(list(schema["enum"]))
    kind = schema.get("type", "object")
    if kind == "object":
        return {name: schema_value(sub, rng) for name, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        items: Mapping[str, Any] = schema.get("items") or {}
        low, high = int(schema.get("minItems", 0)), int(schema.get("maxItems", 3))
        enum = list(items.get("enum") or [])
        if enum:
            return rng.sample(enum, rng.randint(max(1, low), max(1, min(high, len(enum)))))
        return [schema_value(items, rng) for _ in range(rng.randint(low, max(low, min(high, 3))))]
    if kind == "integer":
        return rng.randint(int(schema.get("minimum", 0)), int(schema.get("maximum", 10)))
    if kind == "number":
        return round(rng.random(), 3)
    if kind == "boolean":
        return rng.random() < 0.5
    return f"feels {rng.choice(WORDS)} and {rng.choice(WORDS)}"


def _spoil_label(entry: dict[str, Any]) -> None:
    for name, value in entry.items():
        if name == "id":
            continue
        if isinstance(value, list) and value and isinstance(value[0], str):
            entry[name] = ["not_a_label", *value[1:]]
            return
        if isinstance(value, str) and name != "reason":
            entry[name] = "not_a_label"
            return


# -- the server ----------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Entry:
    """One request as the chaos server saw it (a copy is handed out by :meth:`ChaosServer.entries`)."""

    index: int
    session: int
    """The session whose client opened the connection (see :meth:`ChaosServer.begin_session`)."""
    key: str
    """The engine's ``request_key`` of the request."""
    nth: int
    """1-based attempt number of this content, over the server's lifetime (or since :meth:`reset_log`)."""
    outcome: Outcome
    arrived: float
    """``time.monotonic()`` at arrival."""
    reply: str | None = None
    """The answer text (``ok`` outcomes only)."""
    delivered: bool = False
    """The response (or the fault) was written in full; a held or abandoned response stays ``False``."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_SESSION: contextvars.ContextVar[int] = contextvars.ContextVar("chaos_session", default=0)


class ChaosServer(FakeOpenAIServer):
    """The fake server with seeded faults, a request log, sessions, hooks and a freeze."""

    def __init__(
        self,
        *,
        seed: int = 0,
        rates: FaultRates | None = None,
        latency: float = 0.005,
        hang: float = 30.0,
        retry_after: float = 1.0,
        max_streak: int = 3,
        port: int = 0,
    ) -> None:
        super().__init__(latency=latency, port=port)
        self.seed = seed
        self.rates = rates if rates is not None else FaultRates()
        self.hang = hang
        self.retry_after = retry_after
        self.max_streak = max_streak
        self.session = 0
        self._entries: list[Entry] = []
        self._attempts: Counter[str] = Counter()
        self._streaks: Counter[str] = Counter()
        self._admitted = 0
        self._last_arrival = 0.0
        self._hooks: dict[int, Callable[[], None]] = {}
        self._freeze_at: int | None = None
        self._freeze_when: Callable[[Entry], bool] | None = None
        self._open: asyncio.Event | None = None
        self._frozen_since: float | None = None

    def start(self) -> ChaosServer:
        super().start()
        return self

    def __enter__(self) -> ChaosServer:
        return self.start()

    # -- control from the test thread
    # ------------------------------------------------------------------------------------------------
    def begin_session(self, session: int) -> None:
        """Label connections opened from now on; drop hooks and the freeze, abandon held responses."""
        with self._lock:
            self.session = session
            self._admitted = 0
            self._hooks.clear()
            self._freeze_at = None
            self._freeze_when = None
            self._frozen_since = None
        self._call_in_loop(self._gate().set)

    def set_rates(self, rates: FaultRates) -> None:
        with self._lock:
            self.rates = rates

    def hook_at(self, n: int, callback: Callable[[], None]) -> None:
        """Call ``callback`` (in the server thread) when the ``n``-th request of the session arrives."""
        with self._lock:
            self._hooks[n] = callback

    def freeze_at(self, n: int, when: Callable[[Entry], bool] | None = None) -> None:
        """Hold every response from the ``n``-th request of the session on (that one included).

        With ``when``, the freeze starts at the first request from the ``n``-th on for which ``when(entry)``
        is true (say, a single re-ask, so that its batch is caught half-answered).
        """
        with self._lock:
            self._freeze_at = n
            self._freeze_when = when

    @property
    def frozen_since(self) -> float | None:
        with self._lock:
            return self._frozen_since

    def idle_for(self) -> float:
        """Seconds since the last request arrived."""
        with self._lock:
            return time.monotonic() - self._last_arrival

    def admitted(self) -> int:
        """Requests of the current session so far."""
        with self._lock:
            return self._admitted

    def entries(self) -> list[Entry]:
        with self._lock:
            return [dataclasses.replace(e) for e in self._entries]

    def reset_log(self) -> None:
        super().reset_log()
        with self._lock:
            self._entries.clear()
            self._attempts.clear()
            self._streaks.clear()

    def dump_log(self, path: Any) -> None:
        """Write the log as JSONL (for a test that wants to keep it next to its run directories)."""
        with open(path, "w", encoding="utf-8") as out:
            for entry in self.entries():
                out.write(json.dumps(entry.to_json(), ensure_ascii=False) + "\n")

    def _gate(self) -> asyncio.Event:
        if self._open is None:
            self._open = asyncio.Event()
            self._open.set()
        return self._open

    def _call_in_loop(self, fn: Callable[[], object]) -> None:
        if self._loop is None:
            fn()
            return

        async def run() -> None:
            fn()

        asyncio.run_coroutine_threadsafe(run(), self._loop).result(10)

    # -- serving
    # ------------------------------------------------------------------------------------------------
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with self._lock:
            _SESSION.set(self.session)
        try:
            await super()._connection(reader, writer)
        except asyncio.CancelledError:  # server shutdown while a response hangs: nothing left to answer
            writer.close()

    async def _respond(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            return await super()._respond(method, path, headers, raw, writer)
        body = json.loads(raw or b"{}")
        request = self._log(path, headers, body)
        entry, callback = self._admit(body)
        if callback is not None:
            callback()
        script = self._fault_script(entry)
        delay = self.latency if script.delay is None else script.delay
        if delay > 0:
            await asyncio.sleep(delay)
        await self._gate().wait()
        with self._lock:
            abandoned = entry.session != self.session
        if abandoned:  # the client of that session is gone; answering now would only confuse the log
            writer.transport.abort()
            return False
        if entry.outcome == "html_body":
            writer.write(_html_response())
            await writer.drain()
            keep = True
        else:
            keep = await self._write(script, request, writer)
        with self._lock:
            entry.delivered = True
        return keep

    def _admit(self, body: Mapping[str, Any]) -> tuple[Entry, Callable[[], None] | None]:
        key = engine_request_key(body)
        with self._lock:
            self._attempts[key] += 1
            outcome = plan_outcome(
                self.seed, key, self._attempts[key], self.rates, self._streaks[key], self.max_streak
            )
            self._streaks[key] = 0 if outcome == "ok" else self._streaks[key] + 1
            reply = chaos_reply(body.get("messages"), _schema(body)) if outcome == "ok" else None
            now = time.monotonic()
            entry = Entry(len(self._entries), _SESSION.get(), key, self._attempts[key], outcome, now, reply)
            self._entries.append(entry)
            self._last_arrival = now
            if entry.session != self.session:
                return entry, None
            self._admitted += 1
            if (
                self._freeze_at is not None
                and self._admitted >= self._freeze_at
                and self._frozen_since is None
                and (self._freeze_when is None or self._freeze_when(entry))
            ):
                self._frozen_since = now
                self._gate().clear()
            return entry, self._hooks.pop(self._admitted, None)

    def _fault_script(self, entry: Entry) -> Script:
        if entry.outcome == "ok":
            return ok(entry.reply or "")
        if entry.outcome == "http_500":
            return server_error(500)
        if entry.outcome == "http_429":
            return rate_limited(self.retry_after)
        if entry.outcome == "timeout":
            return Script(content="{}", delay=self.hang)
        if entry.outcome == "truncated_json":
            return truncated_json('{"predictions": []}')
        if entry.outcome == "reset":
            return reset()
        return Script()  # html_body is written by _respond itself


def _schema(body: Mapping[str, Any]) -> dict[str, Any] | None:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return dict(fmt.get("json_schema", {}).get("schema") or {})
    schema = fmt.get("schema")
    return dict(schema) if isinstance(schema, dict) else None


def _html_response() -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(HTML_PAGE)}\r\n\r\n"
    return head.encode("latin-1") + HTML_PAGE


def outcome_counts(entries: list[Entry]) -> dict[str, int]:
    """How many requests ended in each outcome."""
    return dict(Counter(e.outcome for e in entries))


def main() -> None:  # pragma: no cover - manual use
    parser = argparse.ArgumentParser(description="Serve fake chat completions with seeded faults.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.005)
    parser.add_argument("--hang", type=float, default=30.0, help="seconds a 'timeout' fault hangs")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ChaosServer(seed=args.seed, latency=args.latency, hang=args.hang, port=args.port).start()
    print(server.base_url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":  # pragma: no cover
    main()
