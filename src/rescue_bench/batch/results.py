"""The lines of an OpenAI / vLLM Batch API output file, typed, each one's :class:`Reply`, and the provider
that answers a run's requests from them (``batch import`` and ``run --batch`` both record through it).

The format is a third party's, so these models ignore keys they do not use (``extra="ignore"``); what they
use is checked strictly (a token count is a non-negative integer, content a string), and a line whose result
does not fit becomes a failed reply naming the field, recorded for its request like any failure. The chat
completion body inside a result is read by the strict models of :mod:`rescue_bench.models.openai_reply`,
the same models an online reply is read by.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import StrictStr, ValidationError

from rescue_bench.errors import DataError
from rescue_bench.models.base import Capabilities, Generation
from rescue_bench.models.openai_compat import DEFAULT_MAX_REPLY_BYTES
from rescue_bench.models.openai_reply import (
    BatchBody,
    BatchChoice,
    BatchUsage,
    Open,
    choice_reply,
    usage_counts,
)
from rescue_bench.records import Instance, Json, Reply, Request


class BatchLine(Open):
    """One output line: the request's ``custom_id`` and either a ``response`` or an ``error``."""

    custom_id: StrictStr
    error: Json = None
    response: Json = None


class BatchResponse(Open):
    status_code: Json = None
    body: Json = None


class ErrorBody(Open):
    error: Json = None


class ErrorDetail(Open):
    message: Json = None
    code: Json = None


def result_reply(record: BatchLine) -> Reply:
    """One batch output line as a :class:`Reply`; a failure when it carries an error or cannot be read.

    >>> body = {"choices": [{"message": {"content": "{}"}}], "usage": {"prompt_tokens": 5}}
    >>> ok = BatchLine(custom_id="x", response={"status_code": 200, "body": body})
    >>> result_reply(ok).text, result_reply(ok).usage.prompt_tokens
    ('{}', 5)
    >>> result_reply(BatchLine(custom_id="x", error={"message": "expired"})).error
    'batch error: expired'
    >>> result_reply(BatchLine(custom_id="x", response="garbled")).error
    'batch result unreadable (response: Input should be a valid dictionary or instance of BatchResponse)'
    """
    if record.error:
        return Reply.failure(f"batch error: {_error_text(record.error)}")
    try:
        response = _typed(BatchResponse, record.response, "response")
        if response.status_code != 200:
            detail = (
                _typed(ErrorBody, response.body, "body").error if isinstance(response.body, dict) else None
            )
            return Reply.failure(
                f"batch result HTTP {response.status_code}: {_error_text(detail) or 'no detail'}"
            )
        body = _typed(BatchBody, response.body, "body")
        return _reply(body, _typed(BatchChoice, body.choices[0], "choice"))
    except _Unreadable as exc:
        return Reply.failure(f"batch result unreadable ({exc})")


def _reply(body: BatchBody, choice: BatchChoice) -> Reply:
    usage = body.usage or BatchUsage()
    return choice_reply(choice, usage_counts(usage, usage.completion_tokens_details))


def _error_text(error: Json) -> Json:
    """An error object's message (else its code), or the error as given."""
    if isinstance(error, dict):
        detail = ErrorDetail.model_validate(error)
        return detail.message or detail.code
    return error


class _Unreadable(Exception):
    pass


M = TypeVar("M", bound=Open)


def _typed(model: type[M], value: Any, name: str) -> M:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        problem = exc.errors(include_url=False)[0]
        where = ".".join([name, *(str(p) for p in problem["loc"])])
        raise _Unreadable(f"{where}: {problem['msg']}") from None


def parse_results(
    data: bytes, where: str, max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES
) -> dict[str, Reply]:
    """Replies by ``custom_id`` of a Batch API output (or error) file's bytes.

    A line that is not UTF-8 JSON with a string ``custom_id``, or a ``custom_id`` given twice with different
    results, is a :class:`DataError` naming ``where:line``; a line whose result cannot be read, or longer than
    ``max_reply_bytes`` (the cap of an online reply), becomes a failed reply, recorded for its request like
    any failure.
    """
    replies: dict[str, Reply] = {}
    seen: dict[str, tuple[int, bytes]] = {}
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = BatchLine.model_validate(_json_line(raw, f"{where}:{number}"))
        except ValidationError:
            raise DataError(f"{where}:{number}: no string field 'custom_id'") from None
        cid = record.custom_id
        first = seen.setdefault(cid, (number, raw))
        if first[1] != raw:  # the same line twice is harmless; two answers to one request are not
            raise DataError(
                f"{where}:{number}: custom_id {cid!r} is answered twice (first at line {first[0]}); "
                "results must answer each request once"
            )
        if len(raw) > max_reply_bytes:
            replies[cid] = Reply.failure(
                f"batch result of {len(raw):,} bytes exceeds max_reply_bytes={max_reply_bytes:,}; not stored"
            )
        else:
            replies[cid] = result_reply(record)
    return replies


def _json_line(raw: bytes, where: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise DataError(f"{where}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise DataError(f"{where}: JSON nested too deeply") from None


def custom_id(request: Request) -> str:
    """``<task>-<first 32 hex of the content key>``: unique per distinct prompt, and checkable on import."""
    return f"{request.task}-{request.content_key()[:32]}"


class BatchResultsProvider:
    """Answers a run's requests from batch results (by :func:`custom_id`); it never calls a model.

    ``batch import`` reads a results file from outside: it is recorded in the run, not put in the shared
    cache (``cacheable=False``). ``run --batch`` fetched the results itself from the run's own endpoint, so
    it passes that endpoint's identity and ``cacheable=True``: the engine then answers cached requests from
    the cache and stores the batch's replies there, as an online run would.
    """

    def __init__(
        self, results: Mapping[str, Reply], identity: dict[str, Json], name: str, *, cacheable: bool = False
    ) -> None:
        self._results = results
        self._identity = identity
        self.name = name
        self.capabilities = Capabilities(
            cacheable=cacheable, has_endpoint=False, batch_export=False, reads_prompts=False
        )
        self.used: set[str] = set()

    def identity(self) -> dict[str, Json]:
        return dict(self._identity)

    def prepare(self, instances: Sequence[Instance]) -> None:
        return None

    async def complete(self, request: Request, params: Generation) -> Reply:
        key = custom_id(request)
        reply = self._results.get(key)
        if reply is None:
            return Reply.failure(f"batch import: the results file has no answer for {key}")
        self.used.add(key)
        return reply

    async def aclose(self) -> None:
        return None
