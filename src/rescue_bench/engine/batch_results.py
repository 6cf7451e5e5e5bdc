"""The lines of an OpenAI / vLLM Batch API output file, typed, and each one's :class:`Reply`.

The format is a third party's, so these models ignore keys they do not use (``extra="ignore"``); what they
use is checked strictly (a token count is a non-negative integer, content a string), and a line whose result
does not fit becomes a failed reply naming the field, recorded for its request like any failure.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from rescue_bench.records import Json, Reply, Usage

TokenCount = Annotated[int, Field(strict=True, ge=0)]


class Open(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


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


class TokenDetails(Open):
    reasoning_tokens: TokenCount | None = None


class BatchUsage(Open):
    prompt_tokens: TokenCount | None = None
    completion_tokens: TokenCount | None = None
    completion_tokens_details: TokenDetails | None = None


class BatchMessage(Open):
    content: StrictStr | None = None
    reasoning_content: Json = None
    reasoning: Json = None


class BatchChoice(Open):
    message: BatchMessage
    finish_reason: Json = None


class BatchBody(Open):
    choices: Annotated[list[Json], Field(min_length=1)]
    usage: BatchUsage | None = None


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
    message, usage = choice.message, body.usage or BatchUsage()
    reasoning = message.reasoning_content or message.reasoning
    details = usage.completion_tokens_details or TokenDetails()
    return Reply(
        text=message.content or "",
        reasoning=reasoning if isinstance(reasoning, str) else None,
        usage=Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0, details.reasoning_tokens or 0),
        finish_reason=choice.finish_reason if isinstance(choice.finish_reason, str) else None,
    )


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
