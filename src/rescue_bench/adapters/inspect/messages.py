"""Our rendered requests as inspect chat messages and response schemas."""

from __future__ import annotations

from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser, ResponseSchema
from inspect_ai.util import JSONSchema

from rescue_bench.errors import ConfigError
from rescue_bench.records import Json, Request
from rescue_bench.tasks.context import chat_message


def chat_messages(request: Request) -> list[ChatMessage]:
    """The request's messages, content unchanged (text prompts only: video mode needs the engine)."""
    out: list[ChatMessage] = []
    for message in map(chat_message, request.messages):
        content = message.content
        if not isinstance(content, str):
            raise ConfigError(f"{request.task}: only text prompts can go through inspect_ai")
        if message.role == "system":
            out.append(ChatMessageSystem(content=content))
        else:
            out.append(ChatMessageUser(content=content))
    return out


def response_schema(name: str, schema: dict[str, Json]) -> ResponseSchema:
    """The task's JSON schema as inspect's response schema, not strict (as ``rescue-bench run`` sends it)."""
    return ResponseSchema(name=name, json_schema=JSONSchema.model_validate(schema), strict=False)
