"""Masking for the moderation retry."""

from __future__ import annotations

import pytest

from rescue_bench.engine.masking import mask_messages, mask_text


def test_whole_words_only_case_insensitive() -> None:
    text, n = mask_text("SHITTY day; Dick said sexual things; the dickens and Essex are fine; raped, porno.")
    assert text == "S***** day; D*** said s***** things; the dickens and Essex are fine; r****, porno."
    assert n == 4


def test_content_parts_are_masked_and_other_parts_kept() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://x/sex.png"}}
    messages = (
        {"role": "system", "content": "Be kind."},
        {"role": "user", "content": [{"type": "text", "text": "what the fuck"}, image]},
    )
    masked, n = mask_messages(messages)
    assert n == 1
    assert masked[0] == messages[0]
    assert masked[1]["content"] == [{"type": "text", "text": "what the f***"}, image]
    assert messages[1]["content"][0]["text"] == "what the fuck"  # the original is untouched


def test_a_part_that_is_not_a_typed_content_part_is_an_error_naming_it() -> None:
    for part in ("what the fuck", {"text": "what the fuck"}, {"type": "text", "text": 7}):
        messages = ({"role": "user", "content": [{"type": "text", "text": "hi"}, part]},)
        with pytest.raises(ValueError, match=r"^1 validation error for list\[ContentPart\]\n1\b"):
            mask_messages(messages)  # it used to be sent on unmasked, its words and all
