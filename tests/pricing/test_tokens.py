"""Prompt tokens of a request, read through its typed messages."""

from __future__ import annotations

import pytest

from rescue_bench.pricing.tokens import chars_counter
from rescue_bench.records import Request


def request(content: object) -> Request:
    return Request(
        task="t", messages=({"role": "user", "content": content},), response_schema={}, instance_ids=("a",)
    )


def test_text_parts_are_counted_and_media_parts_are_not() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://example.org/" + "x" * 400}}
    parts = [{"type": "text", "text": "a" * 40}, image, {"type": "text", "text": "b" * 39}]
    counter = chars_counter()
    # one line per part, the image's empty: 40 + 1 + 0 + 1 + 39 characters
    assert counter.request_tokens(request(parts)) == counter.request_tokens(request("x" * 81)) == 3 + 4 + 21


def test_a_malformed_part_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"list\[ContentPart\]\n0\.type"):
        chars_counter().request_tokens(request([{"text": "no type"}]))  # it used to count as text
