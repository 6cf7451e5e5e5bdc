"""A Batch API results file read for ``batch import`` and ``run --batch``: one answer per request, and the
size cap of an online reply applied to every result line."""

from __future__ import annotations

import json

import pytest

from rescue_bench.batch.results import parse_results
from rescue_bench.errors import DataError


def line(cid: str, content: str) -> bytes:
    body = {"choices": [{"message": {"content": content}}], "usage": {"prompt_tokens": 3}}
    return (json.dumps({"custom_id": cid, "response": {"status_code": 200, "body": body}}) + "\n").encode()


def test_a_request_answered_twice_is_refused_naming_both_lines() -> None:
    same = parse_results(line("a", "{}") + line("b", "{}") + line("a", "{}"), "results.jsonl")
    assert sorted(same) == ["a", "b"]  # the same line twice says nothing new
    with pytest.raises(DataError) as caught:
        parse_results(line("a", '{"x": 1}') + line("b", "{}") + line("a", '{"x": 2}'), "results.jsonl")
    assert str(caught.value) == (
        "results.jsonl:3: custom_id 'a' is answered twice (first at line 1); results must answer each "
        "request once"
    )


def test_a_result_over_the_reply_cap_is_a_failure_not_a_reply() -> None:
    big = line("a", "x" * 5_000_000)
    replies = parse_results(big + line("b", "{}"), "results.jsonl")
    assert replies["a"].text == "" and replies["a"].error is not None
    assert (
        replies["a"].error.startswith("batch result of 5,000,1")
        and "max_reply_bytes=4,194,304" in replies["a"].error
    )
    assert replies["b"].ok and replies["b"].text == "{}"
    assert parse_results(big, "r", max_reply_bytes=10_000_000)["a"].ok
