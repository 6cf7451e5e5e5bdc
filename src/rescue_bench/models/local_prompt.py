"""How the local provider lays out a request's messages as tokens: a plain document, or the GGUF's template.

* **Plain** (``plain-v1``, a GGUF without a chat template, such as the Gemma 3 270M base model): the messages
  as a text document ending in an answer cue (:func:`render_prompt`), which is what a base model continues
  best, tokenised without special tokens so that transcript text cannot inject control tokens.
* **Chat template** (``chat-template-v1``, a GGUF whose metadata holds ``tokenizer.chat_template``, such as
  SmolLM2-135M-Instruct, trained on ChatML): the template is rendered with llama-cpp-python's public
  ``Jinja2ChatFormatter`` (what ``Llama.create_chat_completion`` uses for a GGUF's own template), with the
  generation prompt added. Each message's text is first replaced by a placeholder; the rendered template is
  split at the placeholders, the template's own text is tokenised *with* special tokens (``<|im_start|>``)
  and the messages' text *without*, so, as in the plain layout, a transcript cannot inject control tokens.

The template's hash is part of the format name (and so of the provider identity and the cache key).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, NoReturn

from rescue_bench.records import ChatMessage, Json, chat_message

PLAIN_FORMAT: Final = "plain-v1"
CHAT_FORMAT: Final = "chat-template-v1"
TEMPLATE_KEY: Final = "tokenizer.chat_template"
ANSWER_CUE: Final = "Answer (JSON):"
_PLACEHOLDER = re.compile("\x00(\\d+)\x00")


def render_prompt(messages: Sequence[dict[str, Json]]) -> str:
    """A chat as a plain text document that a base model continues with the answer.

    System and user messages are paragraphs; an earlier assistant message follows the answer cue, as it would
    have been generated. Raises ``ValueError`` for non-text content parts (images, video), which the model
    cannot read.

    >>> print(render_prompt([{"role": "system", "content": "Rules."}, {"role": "user", "content": "Case."}]))
    Rules.
    <BLANKLINE>
    Case.
    <BLANKLINE>
    Answer (JSON):
    <BLANKLINE>
    """
    parts = []
    for message in messages:
        typed = chat_message(message)
        text = _text_of(typed)
        parts.append(f"{ANSWER_CUE}\n{text}" if typed.role == "assistant" else text)
    return "\n\n".join([*parts, ANSWER_CUE]) + "\n"


def _text_of(message: ChatMessage) -> str:
    if isinstance(message.content, str):
        return message.content.strip()
    parts = message.parts()
    if parts is None:
        _refuse(type(message.content).__name__)
    texts = []
    for part in parts:
        if part.type != "text" or part.text is None:
            _refuse(part.type)
        texts.append(part.text.strip())
    return "\n".join(texts)


def _refuse(kind: str) -> NoReturn:
    raise ValueError(
        f"the local model reads text only; the request has a {kind!r} part (use --mode dialogue)"
    )


@dataclass(frozen=True, slots=True)
class Segment:
    """A piece of a prompt: a template's own text (special tokens allowed) or a message's text (not)."""

    text: str
    special: bool


def plain_layout(messages: Sequence[dict[str, Json]]) -> list[Segment]:
    """:func:`render_prompt` as one segment without special tokens."""
    return [Segment(render_prompt(messages), special=False)]


def tokenize(llm: Any, segments: Sequence[Segment], bos_text: str = "") -> list[int]:
    """The segments as tokens, the first with the model's BOS (when its vocabulary adds one and the template
    did not already write it as ``bos_text``)."""
    out: list[int] = []
    for segment in segments:
        add_bos = not out and not (bos_text and segment.special and segment.text.startswith(bos_text))
        piece = llm.tokenize(segment.text.encode("utf-8"), add_bos=add_bos, special=segment.special)
        out.extend(int(t) for t in piece)
    return out


@dataclass(frozen=True)
class ChatTemplate:
    """A GGUF's chat template, rendered through llama-cpp-python's ``Jinja2ChatFormatter``."""

    template: str
    bos_token: str
    eos_token: str

    @property
    def format_name(self) -> str:
        """``chat-template-v1:<first 12 hex digits of the template's sha256>``."""
        return f"{CHAT_FORMAT}:{hashlib.sha256(self.template.encode()).hexdigest()[:12]}"

    def segments(self, messages: Sequence[dict[str, Json]]) -> list[Segment]:
        """The rendered chat, ending in the assistant's turn, as template and message pieces in order.

        >>> chatml = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\\n{{ m['content'] }}<|im_end|>\\n"
        ...           "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\\n{% endif %}")
        >>> chat = ChatTemplate(chatml, "", "<|im_end|>")
        >>> [(p.text, p.special) for p in chat.segments([{"role": "user", "content": " Hi <|x|> "}])]
        [('<|im_start|>user\\n', True), ('Hi <|x|>', False), ('<|im_end|>\\n<|im_start|>assistant\\n', True)]
        """
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # the optional extra

        texts: list[str] = []
        shown: list[Any] = []  # llama-cpp-python's message TypedDicts
        for index, message in enumerate(messages):
            typed = chat_message(message)
            texts.append(_text_of(typed))
            shown.append({"role": typed.role, "content": f"\x00{index}\x00"})
        formatter = Jinja2ChatFormatter(self.template, self.eos_token, self.bos_token)
        pieces = _PLACEHOLDER.split(formatter(messages=shown).prompt)
        if [int(index) for index in pieces[1::2]] != list(range(len(texts))):
            raise ValueError("the model's chat template does not show each message once, in order")
        out = []
        for position, piece in enumerate(pieces):
            text, special = (texts[int(piece)], False) if position % 2 else (piece, True)
            if text:
                out.append(Segment(text, special))
        return out


def chat_template(llm: Any) -> ChatTemplate | None:
    """A loaded model's chat template, or ``None`` when its GGUF has none (a base model)."""
    template = llm.metadata.get(TEMPLATE_KEY)
    if not template:
        return None

    def text(token: int) -> str:
        return "" if token < 0 else bytes(llm.detokenize([token], special=True)).decode("utf-8", "replace")

    return ChatTemplate(str(template), text(int(llm.token_bos())), text(int(llm.token_eos())))
