"""A fake OpenAI-compatible ``/v1/chat/completions`` server on loopback: the test double for paid APIs.

It speaks real HTTP/1.1 (keep-alive, Content-Length) on 127.0.0.1 from an asyncio loop in a background thread,
so the real ``openai`` SDK and its ``httpx2`` transport are exercised end to end, and hundreds of requests can
be in flight at once (latency is an ``asyncio.sleep``, not a thread).

Scripting: give a *handler*, a callable that receives each :class:`ChatRequest` and returns what to answer:

* a ``str``: the assistant message content (HTTP 200);
* a ``dict`` or ``list``: dumped as JSON and used as the content;
* a :class:`Script`: full control, including faults. Helpers build the common ones: :func:`ok`,
  :func:`rate_limited` (429 with ``Retry-After``), :func:`server_error` (500), :func:`hang` (slower than the
  client's timeout), :func:`truncated_json` (a 200 whose JSON body is cut short), :func:`truncated_stream`
  (the connection closes mid-body), :func:`reset` (TCP reset), :func:`unsupported_format` (400 about
  ``response_format``), :func:`refusal` (DashScope's ``data_inspection_failed``); hostile servers:
  :func:`drip` (a 200 body one byte every half second), :func:`huge` (megabytes of content, chunked or not),
  :func:`echo_key` (the request's bearer token comes back in the answer and the reasoning).
  :func:`llamacpp_python_format` answers as llama-cpp-python's server does (``json_schema`` refused with an
  HTTP 500). ``slots=1`` makes a one-slot server: one request at a time, the others queue, as llama.cpp does.

``ChatRequest.nth`` counts identical requests (same messages), so "fail the first two attempts, then answer"
is ``lambda r: rate_limited(0) if r.nth <= 2 else "..."``. Every request is logged in
:attr:`FakeOpenAIServer.requests`.

Example::

    with FakeOpenAIServer(lambda req: '{"answer": "yes"}', latency=0.05) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="sk-test")
        ...
        assert server.count == 1

Run it standalone (``python tests/fakes/openai_server.py --latency 0.5``) to serve schema-shaped answers to
another process; it prints its base URL on the first line of stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Fault = Literal["reset", "truncated_json", "truncated_stream"]


@dataclass(frozen=True)
class Script:
    """One scripted answer."""

    content: str | None = ""
    reasoning: str | None = None
    finish_reason: str = "stop"
    status: int = 200
    error: dict[str, Any] | None = None
    """The ``error`` object of a non-200 answer."""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float | None = None
    """Seconds before answering; ``None`` uses the server's latency."""
    fault: Fault | None = None
    usage: tuple[int, int] | None = None
    """(prompt_tokens, completion_tokens); default: characters / 4."""
    reasoning_tokens: int | None = None
    """Sent as ``usage.completion_tokens_details.reasoning_tokens`` when given."""
    drip: float | None = None
    """Seconds between single bytes of a 200 body (a server that never quite finishes)."""
    chunked: bool = False
    """Send a 200 body with ``Transfer-Encoding: chunked`` instead of a ``Content-Length``."""
    model: str | None = None
    """The reply's ``model``; default: the model the request named."""
    system_fingerprint: str | None = None
    """Sent as the reply's ``system_fingerprint`` when given."""


def ok(
    content: str, *, reasoning: str | None = None, finish_reason: str = "stop", delay: float | None = None
) -> Script:
    return Script(content=content, reasoning=reasoning, finish_reason=finish_reason, delay=delay)


def rate_limited(retry_after: float | None = 1.0) -> Script:
    headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
    return Script(
        status=429,
        headers=headers,
        error={"message": "Rate limit reached, slow down", "type": "rate_limit_error", "code": None},
    )


def server_error(status: int = 500) -> Script:
    return Script(
        status=status, error={"message": "The server had an error", "type": "server_error", "code": None}
    )


def hang(seconds: float = 30.0) -> Script:
    """Answer only after ``seconds``: longer than the client's timeout, so the client times out."""
    return Script(content="{}", delay=seconds)


def truncated_json(content: str = "{}") -> Script:
    return Script(content=content, fault="truncated_json")


def truncated_stream(content: str = "{}") -> Script:
    return Script(content=content, fault="truncated_stream")


def drip(seconds_per_byte: float = 0.5, *, chunked: bool = False) -> Script:
    """A 200 whose body comes one byte every ``seconds_per_byte``: each read is quick, the whole is not."""
    return Script(content='{"answer": "' + "x" * 200 + '"}', drip=seconds_per_byte, chunked=chunked)


def huge(megabytes: float, *, chunked: bool = False) -> Script:
    """A 200 whose content is ``megabytes`` of text."""
    return Script(content='{"answer": "' + "x" * int(megabytes * 2**20) + '"}', chunked=chunked)


def echo_key(request: ChatRequest) -> Script:
    """A misbehaving gateway: the bearer token of the request comes back in the answer and the reasoning."""
    token = request.headers.get("authorization", "").removeprefix("Bearer ")
    return Script(content=json.dumps({"answer": f"your key is {token}"}), reasoning=f"Key {token} seen.")


def reset() -> Script:
    return Script(fault="reset")


def unsupported_format(kind: str = "json_schema") -> Script:
    return Script(
        status=400,
        error={
            "message": f"response_format type '{kind}' is not supported by this model",
            "type": "invalid_request_error",
            "param": "response_format",
            "code": None,
        },
    )


def llamacpp_python_format(answer: Handler | None = None) -> Handler:
    """llama-cpp-python's server (0.3.x): ``json_schema`` is refused as its request model's validation error,
    an HTTP 500 with pydantic's words; ``json_object`` (with a ``schema`` or not) and text are answered by
    ``answer`` (default: schema-shaped answers)."""
    answer = answer or schema_answer

    def handler(request: ChatRequest) -> Script | str | dict[str, Any] | list[Any]:
        if (request.response_format or {}).get("type") == "json_schema":
            detail = (
                "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
                "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
                "'ctx': {'expected': \"'text' or 'json_object'\"}}\n"
            )
            return Script(status=500, error={"message": detail, "type": "internal_server_error"})
        return answer(request)

    return handler


def refusal() -> Script:
    return Script(
        status=400,
        error={
            "code": "data_inspection_failed",
            "type": "data_inspection_failed",
            "message": "Input data may contain inappropriate content.",
        },
    )


def unauthorized() -> Script:
    return Script(
        status=401,
        error={
            "message": "Incorrect API key provided",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        },
    )


@dataclass(frozen=True)
class ChatRequest:
    """One request as the server saw it."""

    index: int
    """0-based arrival order."""
    path: str
    headers: dict[str, str]
    """Lower-cased header names."""
    body: dict[str, Any]
    nth: int
    """1-based count of requests with the same messages so far (this one included)."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def response_format(self) -> dict[str, Any] | None:
        return self.body.get("response_format")

    @property
    def text(self) -> str:
        """All message text, joined."""
        return "\n".join(_message_text(m) for m in self.messages)

    @property
    def content_key(self) -> str:
        return _content_key(self.messages)

    @property
    def schema(self) -> dict[str, Any] | None:
        fmt = self.response_format or {}
        if fmt.get("type") == "json_schema":
            return dict(fmt.get("json_schema", {}).get("schema") or {})
        return fmt.get("schema")


Handler = Callable[[ChatRequest], "Script | str | dict[str, Any] | list[Any]"]


class FakeOpenAIServer:
    """The server; use as a context manager or call :meth:`start` / :meth:`stop`."""

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        latency: float = 0.0,
        port: int = 0,
        require_key: str | None = None,
        slots: int | None = None,
    ) -> None:
        self.handler: Handler = handler or schema_answer
        self.latency = latency
        self.slots = slots
        """Requests served at once, like a llama.cpp server's slots (the others wait their turn, in order);
        ``None``: all of them at once."""
        self.require_key = require_key
        self.requests: list[ChatRequest] = []
        self.completed = 0
        """Responses written in full with status 200."""
        self.in_flight = 0
        self.max_in_flight = 0
        """The most chat requests the server was handling at once."""
        self._port = port
        self._lock = threading.Lock()
        self._seen: Counter[str] = Counter()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._slot: asyncio.Semaphore | None = None

    # -- lifecycle
    # ---------------------------------------------------------------------------------------------
    def start(self) -> FakeOpenAIServer:
        self._thread = threading.Thread(target=self._run, name="fake-openai", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake server did not start")
        return self

    def stop(self) -> None:
        """Stop serving: new connections are refused, as by a server that died. Stopping twice is fine."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def reset_log(self) -> None:
        with self._lock:
            self.requests.clear()
            self._seen.clear()
            self.completed = 0
            self.max_in_flight = 0

    # -- serving
    # -----------------------------------------------------------------------------------------------
    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._slot = asyncio.Semaphore(self.slots) if self.slots else None
        self._server = loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", self._port, backlog=4096, limit=2**24)
        )
        self._port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            self._server.close()
            for task in asyncio.all_tasks(loop):
                task.cancel()
            loop.run_until_complete(asyncio.sleep(0))
            loop.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                method, path, headers = _parse_head(head)
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                keep = await self._respond(method, path, headers, body, writer)
                if not keep or headers.get("connection", "").lower() == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:  # the server stops with requests still queued for a slot
            pass
        finally:
            writer.close()

    async def _respond(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        route = path.split("?")[0].rstrip("/")  # a query (a gateway's ?api-key=) is not part of the route
        if method == "GET" and route.endswith("/models"):
            await _send(writer, 200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
            return True
        if method != "POST" or not route.endswith("/chat/completions"):
            await _send(writer, 404, {"error": {"message": f"no route {method} {path}"}})
            return True
        if self.require_key is not None and headers.get("authorization") != f"Bearer {self.require_key}":
            script = unauthorized()
            request = None
        else:
            request = self._log(path, headers, json.loads(raw or b"{}"))
            script = self._script(request)
        delay = self.latency if script.delay is None else script.delay
        if self._slot is not None and script.status == 200:
            async with self._slot:  # a one-slot server: one request at a time, the rest queue
                return await self._serve(script, request, writer, delay)
        return await self._serve(script, request, writer, delay)

    async def _serve(
        self, script: Script, request: ChatRequest | None, writer: asyncio.StreamWriter, delay: float
    ) -> bool:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if delay > 0:
                await asyncio.sleep(delay)
            return await self._write(script, request, writer)
        finally:
            self.in_flight -= 1

    def _log(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> ChatRequest:
        with self._lock:
            key = _content_key(body.get("messages", []))
            self._seen[key] += 1
            request = ChatRequest(len(self.requests), path, headers, body, self._seen[key])
            self.requests.append(request)
        return request

    def _script(self, request: ChatRequest) -> Script:
        try:
            answer = self.handler(request)
        except Exception as exc:  # a broken script shows up as a 500 the test will notice
            return Script(
                status=500, error={"message": f"fake handler failed: {exc!r}", "type": "server_error"}
            )
        if isinstance(answer, Script):
            return answer
        if isinstance(answer, str):
            return ok(answer)
        return ok(json.dumps(answer))

    async def _write(self, script: Script, request: ChatRequest | None, writer: asyncio.StreamWriter) -> bool:
        if script.fault == "reset":
            sock = writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return False
        if script.status != 200:
            await _send(
                writer, script.status, {"error": script.error or {"message": "error"}}, script.headers
            )
            return True
        payload = json.dumps(_completion(script, request)).encode()
        if script.fault == "truncated_json":
            await _send_bytes(writer, 200, payload[: len(payload) // 2], script.headers)
            return True
        if script.fault == "truncated_stream":
            writer.write(_head(200, len(payload), script.headers) + payload[: len(payload) // 2])
            await writer.drain()
            return False
        if script.drip is not None or script.chunked:
            await _send_slowly(writer, payload, script)
        else:
            await _send_bytes(writer, 200, payload, script.headers)
        with self._lock:
            self.completed += 1
        return True


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return method, path, headers


def _head(status: int, length: int | None, headers: Mapping[str, str]) -> bytes:
    framing = "Transfer-Encoding: chunked" if length is None else f"Content-Length: {length}"
    lines = [f"HTTP/1.1 {status} X", "Content-Type: application/json", framing]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _send_bytes(
    writer: asyncio.StreamWriter, status: int, payload: bytes, headers: Mapping[str, str]
) -> None:
    writer.write(_head(status, len(payload), headers) + payload)
    await writer.drain()


async def _send_slowly(writer: asyncio.StreamWriter, payload: bytes, script: Script) -> None:
    """A 200 body chunked and/or one byte at a time (``script.drip`` seconds apart)."""
    writer.write(_head(200, None if script.chunked else len(payload), script.headers))
    step = 1 if script.drip is not None else 65536
    for start in range(0, len(payload), step):
        piece = payload[start : start + step]
        writer.write(b"%x\r\n%s\r\n" % (len(piece), piece) if script.chunked else piece)
        await writer.drain()
        if script.drip is not None:
            await asyncio.sleep(script.drip)
    if script.chunked:
        writer.write(b"0\r\n\r\n")
        await writer.drain()


async def _send(
    writer: asyncio.StreamWriter, status: int, obj: Any, headers: Mapping[str, str] | None = None
) -> None:
    await _send_bytes(writer, status, json.dumps(obj).encode(), headers or {})


def _completion(script: Script, request: ChatRequest | None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": script.content}
    if script.reasoning is not None:
        message["reasoning_content"] = script.reasoning
    text = request.text if request else ""
    prompt, completion = script.usage or (len(text) // 4, len(script.content or "") // 4)
    return {
        "id": f"chatcmpl-fake-{request.index if request else 0}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": script.model or (request.model if request else "fake"),
        **({"system_fingerprint": script.system_fingerprint} if script.system_fingerprint else {}),
        "choices": [{"index": 0, "message": message, "finish_reason": script.finish_reason}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            **(
                {"completion_tokens_details": {"reasoning_tokens": script.reasoning_tokens}}
                if script.reasoning_tokens is not None
                else {}
            ),
        },
    }


def _message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _content_key(messages: Any) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:16]


#  -- schema-shaped answers
# -------------------------------------------------------------------------------------------
_OPAQUE_ID = re.compile(r"\bc(\d+)\b")


def schema_answer(request: ChatRequest) -> str:
    """A JSON answer shaped by the request's schema (first enum values, one item per opaque id ``c1..cN``)."""
    ids = sorted({int(n) for n in _OPAQUE_ID.findall(request.text)}) or [1]
    return json.dumps(synthesize(request.schema or {"type": "object"}, [f"c{i}" for i in ids]))


def synthesize(schema: Mapping[str, Any], ids: list[str], defs: Mapping[str, Any] | None = None) -> Any:
    """A value that fits ``schema``; arrays of objects with an ``id`` get one item per id."""
    defs = defs if defs is not None else {**schema.get("$defs", {}), **schema.get("definitions", {})}
    if "$ref" in schema:
        return synthesize(defs.get(str(schema["$ref"]).rsplit("/", 1)[-1], {}), ids, defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return synthesize(schema[key][0], ids, defs)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type", "object")
    kind = next((k for k in kind if k != "null"), "null") if isinstance(kind, list) else kind
    if kind == "object":
        props: Mapping[str, Any] = schema.get("properties", {})
        return {name: synthesize(sub, ids, defs) for name, sub in props.items()}
    if kind == "array":
        return _synth_array(schema, ids, defs)
    return {"string": "x", "integer": schema.get("minimum", 1), "number": 1.0, "boolean": False}.get(kind)


def _synth_array(schema: Mapping[str, Any], ids: list[str], defs: Mapping[str, Any]) -> list[Any]:
    items: Mapping[str, Any] = schema.get("items", {})
    if "$ref" in items:
        items = defs.get(str(items["$ref"]).rsplit("/", 1)[-1], {})
    if "id" in items.get("properties", {}):
        return [{**synthesize(items, ids, defs), "id": i} for i in ids]
    count = max(1, int(schema.get("minItems", 1)))
    enum = items.get("enum")
    if enum:
        return list(enum[: max(count, min(3, len(enum), int(schema.get("maxItems", 3))))])
    return [synthesize(items, ids, defs) for _ in range(count)]


def main() -> None:  # pragma: no cover - used by benchmarks/bench_engine.py
    parser = argparse.ArgumentParser(description="Serve schema-shaped fake chat completions on loopback.")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--slots", type=int, default=None, help="requests served at once (default: all)")
    args = parser.parse_args()
    server = FakeOpenAIServer(latency=args.latency, port=args.port, slots=args.slots).start()
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":  # pragma: no cover
    main()
