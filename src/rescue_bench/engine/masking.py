"""Masking of sensitive words for the one retry after a content-moderation refusal.

Some endpoints (DashScope's ``data_inspection_failed``) refuse prompts that contain explicit words, which
therapy transcripts sometimes do. The reference scripts retried such prompts with the words masked (protocol
section 1.5); the engine does the same, once, over the whole prompt, and records that it did.
"""

from __future__ import annotations

import re
from typing import Any

from rescue_bench.records import ContentPart, Json, chat_message

SENSITIVE_WORD_PATTERNS: tuple[str, ...] = (
    r"fuck(ing|ed|ers?)?",
    r"shit(ty)?",
    r"bitch(es)?",
    r"asshole(s)?",
    r"dick",
    r"pussy",
    r"sex(ual)?",
    r"penis",
    r"vagina",
    r"rape(d|s)?",
    r"porn(ography|ographic)?",
)
"""The reference scripts' word list (``mask_sensitive_terms``), matched case-insensitively as whole words."""

_PATTERN = re.compile(
    r"\b(?:" + "|".join(f"(?:{p})" for p in SENSITIVE_WORD_PATTERNS) + r")\b", re.IGNORECASE
)


def mask_text(text: str) -> tuple[str, int]:
    """Replace each sensitive word by its first letter and stars; return the text and how many were masked.

    >>> mask_text("What the fuck, he said. Sexual? Sextant is fine.")
    ('What the f***, he said. S*****? Sextant is fine.', 2)
    """
    count = 0

    def _star(match: re.Match[str]) -> str:
        nonlocal count
        count += 1
        word = match.group(0)
        return word[0] + "*" * (len(word) - 1)

    return _PATTERN.sub(_star, text), count


def mask_messages(messages: tuple[dict[str, Json], ...]) -> tuple[tuple[dict[str, Json], ...], int]:
    """Mask every text in chat messages (string contents and ``text`` content parts).

    >>> masked, n = mask_messages(({"role": "user", "content": "no porn here"},))
    >>> masked[0]["content"], n
    ('no p*** here', 1)
    """
    total = 0
    out: list[dict[str, Json]] = []
    for message in messages:
        typed = chat_message(message)
        content, parts = typed.content, typed.parts()
        if isinstance(content, str):
            content, n = mask_text(content)
            total += n
        elif parts is not None:
            content, n = _mask_parts(content, parts)
            total += n
        out.append({**message, "content": content})
    return tuple(out), total


def _mask_parts(written: list[Any], parts: list[ContentPart]) -> tuple[list[Any], int]:
    """The parts as written, with the text of each text part masked."""
    total = 0
    masked: list[Any] = []
    for raw, part in zip(written, parts, strict=True):
        if part.text is not None:
            text, n = mask_text(part.text)
            total += n
            raw = {**raw, "text": text}
        masked.append(raw)
    return masked, total
