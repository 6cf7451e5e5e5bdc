"""One reader of a chat completion body, two strictnesses: an online reply (as sent), a Batch API result."""

from __future__ import annotations

from typing import Any

import pytest

from rescue_bench.batch.results import BatchLine, result_reply
from rescue_bench.errors import ModerationRefusal, RetryableError
from rescue_bench.models.openai_reply import parse_reply
from rescue_bench.records import Reply, Usage


def body(content: Any = "{}", **usage: Any) -> dict[str, Any]:
    message = {"content": content, "reasoning_content": "thought"}
    return {"choices": [{"message": message, "finish_reason": "stop"}], "usage": usage}


def batch(data: Any) -> Reply:
    return result_reply(BatchLine(custom_id="x", response={"status_code": 200, "body": data}))


def test_a_well_formed_body_reads_the_same_both_ways() -> None:
    data = body(prompt_tokens=7, completion_tokens=3, completion_tokens_details={"reasoning_tokens": 2})
    online, offline = parse_reply(data, 0.0), batch(data)
    assert online == offline
    assert (online.text, online.reasoning, online.finish_reason) == ("{}", "thought", "stop")
    assert online.usage == Usage(7, 3, 2)


def test_content_that_is_not_a_string() -> None:
    assert parse_reply(body({"answer": 1}), 0.0).text == '{"answer": 1}'
    failed = batch(body({"answer": 1}))
    assert not failed.ok and "choice.message.content: Input should be a valid string" in (failed.error or "")


@pytest.mark.parametrize("count", ["12", True, 2.0])
def test_a_token_count_as_sent_online_refused_in_a_batch(count: Any) -> None:
    assert parse_reply(body(prompt_tokens=count), 0.0).usage.prompt_tokens == int(count)
    failed = batch(body(prompt_tokens=count))
    assert not failed.ok
    assert "body.usage.prompt_tokens: Input should be a valid integer" in (failed.error or "")


def test_negative_counts_and_usage_that_is_not_an_object() -> None:
    assert parse_reply(body(prompt_tokens=-1), 0.0).usage.prompt_tokens == -1
    assert "greater than or equal to 0" in (batch(body(prompt_tokens=-1)).error or "")
    odd = {**body(), "usage": "lots"}
    assert parse_reply(odd, 0.0).usage == Usage()
    expected = "body.usage: Input should be a valid dictionary or instance of BatchUsage"
    assert expected in (batch(odd).error or "")


def test_a_body_without_choices() -> None:
    with pytest.raises(RetryableError, match="response without choices"):
        parse_reply({"choices": []}, 0.0)
    assert "body.choices: List should have at least 1 item" in (batch({"choices": []}).error or "")


def test_an_empty_content_filter_answer_is_a_refusal_online_only() -> None:
    data = {"choices": [{"message": {"content": None}, "finish_reason": "content_filter"}]}
    with pytest.raises(ModerationRefusal):
        parse_reply(data, 0.0)
    assert batch(data).ok and batch(data).finish_reason == "content_filter"
