"""A fake OpenAI Files + Batches API on loopback, beside the chat fake (:mod:`tests.fakes.openai_server`).

It serves, over the same real HTTP/1.1 machinery (the chat fake's, reused by subclassing):

* ``POST /v1/files`` (multipart upload, ``purpose=batch``) and ``GET /v1/files/{id}/content``;
* ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``;
* ``POST /v1/chat/completions``, as the chat fake does (so one handler answers online and batch runs alike).

Scripting: each created batch takes the next :class:`BatchPlan` of ``plans`` (the last one repeats). A plan
lists the states the batch goes through, one per ``retrieve`` (``validating``, ``in_progress``, then a
terminal one: ``completed``, ``failed``, ``expired`` or ``cancelled``). When it ends, every input line is
answered by the handler (a :class:`~tests.fakes.openai_server.Script` with a non-200 status, or one of
``plan.fail``'s custom-id prefixes, goes to the error file); an ``expired`` or ``cancelled`` batch answers
only its first ``plan.answered`` lines and puts the rest in the error file (``batch_expired``) or nowhere
(cancelled), as OpenAI does. ``failed`` has no output at all.

Counters for the tests: :attr:`uploads`, :attr:`created` (batch ids in order), :attr:`retrieves`.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.openai_server import (
    ChatRequest,
    FakeOpenAIServer,
    Handler,
    _completion,
    _send,
    _send_bytes,
    ok,
)

TERMINAL = ("completed", "failed", "expired", "cancelled")


@dataclass(frozen=True)
class BatchPlan:
    """How one batch goes: its states (one per retrieve), and for an ended batch what got answered."""

    states: tuple[str, ...] = ("validating", "in_progress", "completed")
    answered: int | None = None
    """Lines answered before an ``expired`` / ``cancelled`` end (``None``: all of them)."""
    fail: tuple[str, ...] = ()
    """Custom ids starting with one of these go to the error file with HTTP 500."""
    output: str = "ok"
    """A hostile server's output file: ``garbage`` (not JSON), ``missing`` (its id answers 404) or
    ``duplicate`` (the first line again, with another answer)."""


@dataclass
class FakeBatch:
    id: str
    input_file_id: str
    plan: BatchPlan
    step: int = 0
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: dict[str, int] = field(default_factory=lambda: {"total": 0, "completed": 0, "failed": 0})
    cancelled: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    """The headers the batch was created with: each line is answered as if sent with them (a gateway that
    echoes the key of whoever submitted)."""

    @property
    def status(self) -> str:
        if self.cancelled:
            return "cancelled"
        return self.plan.states[min(self.step, len(self.plan.states) - 1)]


class FakeBatchServer(FakeOpenAIServer):
    """The chat fake plus ``/v1/files`` and ``/v1/batches``."""

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        plans: Sequence[BatchPlan] = (BatchPlan(),),
        require_key: str | None = None,
    ) -> None:
        super().__init__(handler, require_key=require_key)
        self.plans = list(plans)
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, FakeBatch] = {}
        self.uploads = 0
        self.created: list[str] = []
        self.retrieves = 0
        self.batch_lines: list[dict[str, Any]] = []
        """Every input line of every batch, in upload order."""
        self._ids = itertools.count(1)
        self._batch_lock = threading.Lock()

    async def _respond(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, writer: Any
    ) -> bool:
        route = path.split("?")[0].rstrip("/")
        if "/files" not in route and "/batches" not in route:
            return await super()._respond(method, path, headers, raw, writer)
        if self.require_key is not None and headers.get("authorization") != f"Bearer {self.require_key}":
            await _send(writer, 401, {"error": {"message": "Incorrect API key provided"}})
            return True
        try:
            status, answer = self._route(method, route, headers, raw)
        except KeyError as exc:
            status, answer = 404, {"error": {"message": f"no such object {exc}"}}
        if isinstance(answer, bytes):
            await _send_bytes(writer, status, answer, {})
        else:
            await _send(writer, status, answer)
        return True

    def _route(self, method: str, route: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any]:
        parts = route.split("/")
        with self._batch_lock:
            if method == "POST" and route.endswith("/files"):
                return 200, self._upload(headers, raw)
            if method == "GET" and parts[-1] == "content":
                return 200, self.files[parts[-2]]
            if method == "POST" and route.endswith("/batches"):
                return 200, self._create(json.loads(raw), headers)
            if method == "POST" and parts[-1] == "cancel":
                batch = self.batches[parts[-2]]
                batch.cancelled = True
                self._finish(batch)
                return 200, self._object(batch)
            if method == "GET" and parts[-2] == "batches":
                return 200, self._retrieve(self.batches[parts[-1]])
        return 404, {"error": {"message": f"no route {method} {route}"}}

    def _upload(self, headers: dict[str, str], raw: bytes) -> dict[str, Any]:
        fields = _multipart(headers.get("content-type", ""), raw)
        if fields.get("purpose") != b"batch":
            raise KeyError("purpose must be batch")
        self.uploads += 1
        file_id = f"file-{next(self._ids)}"
        self.files[file_id] = fields["file"]
        return _file_object(file_id, len(fields["file"]))

    def _create(self, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        plan = self.plans[min(len(self.created), len(self.plans) - 1)]
        batch = FakeBatch(f"batch_{next(self._ids)}", str(body["input_file_id"]), plan, headers=dict(headers))
        lines = _lines(self.files[batch.input_file_id])
        self.batch_lines.extend(lines)
        batch.counts["total"] = len(lines)
        self.batches[batch.id] = batch
        self.created.append(batch.id)
        return self._object(batch)

    def _retrieve(self, batch: FakeBatch) -> dict[str, Any]:
        self.retrieves += 1
        if batch.status not in TERMINAL:
            batch.step += 1
            if batch.status in TERMINAL:
                self._finish(batch)
        return self._object(batch)

    def _finish(self, batch: FakeBatch) -> None:
        """Answer the batch's lines as its end says: output lines, error lines."""
        lines = _lines(self.files[batch.input_file_id])
        status = batch.status
        answered = len(lines) if batch.plan.answered is None else batch.plan.answered
        if status == "failed":
            answered = 0
        out: list[bytes] = []
        errors: list[bytes] = []
        for index, line in enumerate(lines):
            if index >= answered:
                if status == "expired":
                    errors.append(
                        _error_line(
                            line,
                            "batch_expired",
                            "This request could not be executed before the completion window expired.",
                        )
                    )
                continue
            result, good = self._answer(line, index, batch)
            (out if good else errors).append(result)
        batch.counts["completed"] = len(out)
        batch.counts["failed"] = len(errors)
        if out and batch.plan.output == "duplicate":
            first = json.loads(out[0])
            first["response"]["body"]["choices"][0]["message"]["content"] = "{}"
            out.append((json.dumps(first) + "\n").encode())
        if out:
            batch.output_file_id = self._store(
                b"not json at all\n" if batch.plan.output == "garbage" else b"".join(out)
            )
        if out and batch.plan.output == "missing":
            batch.output_file_id = "file-deleted"
        if errors:
            batch.error_file_id = self._store(b"".join(errors))

    def _answer(self, line: dict[str, Any], index: int, batch: FakeBatch) -> tuple[bytes, bool]:
        request = ChatRequest(index, str(line["url"]), batch.headers, line["body"], 1)
        script = self._script(request)
        if script.status != 200 or str(line["custom_id"]).startswith(batch.plan.fail):
            body = {"error": script.error or {"message": "The server had an error", "type": "server_error"}}
            status = script.status if script.status != 200 else 500
            record = {"custom_id": line["custom_id"], "response": {"status_code": status, "body": body}}
            return (json.dumps(record) + "\n").encode(), False
        record = {
            "id": f"batch_req_{index}",
            "custom_id": line["custom_id"],
            "response": {"status_code": 200, "body": _completion(script, request)},
            "error": None,
        }
        return (json.dumps(record) + "\n").encode(), True

    def _store(self, data: bytes) -> str:
        file_id = f"file-{next(self._ids)}"
        self.files[file_id] = data
        return file_id

    def _object(self, batch: FakeBatch) -> dict[str, Any]:
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
            "created_at": int(time.time()),
            "input_file_id": batch.input_file_id,
            "status": batch.status,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "request_counts": dict(batch.counts),
        }


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def _error_line(line: dict[str, Any], code: str, message: str) -> bytes:
    record = {"custom_id": line["custom_id"], "response": None, "error": {"code": code, "message": message}}
    return (json.dumps(record) + "\n").encode()


def _file_object(file_id: str, size: int) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": int(time.time()),
        "filename": "batch.jsonl",
        "purpose": "batch",
        "status": "processed",
    }


def _multipart(content_type: str, raw: bytes) -> dict[str, bytes]:
    """The fields of a ``multipart/form-data`` body, by name."""
    boundary = content_type.partition("boundary=")[2].strip('"').encode()
    fields: dict[str, bytes] = {}
    for part in raw.split(b"--" + boundary):
        head, sep, body = part.partition(b"\r\n\r\n")
        if not sep:
            continue
        name = head.partition(b'name="')[2].partition(b'"')[0].decode()
        fields[name] = body.removesuffix(b"\r\n")
    return fields


__all__ = ["TERMINAL", "BatchPlan", "FakeBatchServer", "ok"]
