"""Which providers ``run --batch`` asks through: decided by their declared capability, never by class."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from tests.engine.conftest import tiny_config

from rescue_bench.batch.plan import batch_line, batchable, check_batchable
from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Capabilities, Generation, ResponseFormat
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import get_preset
from rescue_bench.records import Instance, Json, Reply, Request


@dataclass
class Plugin:
    """A provider plugin: the Provider protocol and, when ``lines``, a Batch line's body."""

    capabilities: Capabilities = field(default_factory=Capabilities)
    name: str = "plug/m"

    def identity(self) -> dict[str, Json]:
        return {"provider": "plug", "model": "m"}

    def prepare(self, instances: Sequence[Instance]) -> None:
        return None

    async def complete(self, request: Request, params: Generation) -> Reply:
        return Reply.failure("not asked")

    async def aclose(self) -> None:
        return None


@dataclass
class LinePlugin(Plugin):
    def body(self, request: Request, params: Generation, fmt: ResponseFormat) -> dict[str, object]:
        return {"model": "m", "messages": [dict(m) for m in request.messages]}

    def effective_format(self, params: Generation) -> ResponseFormat:
        return "text"


def test_a_provider_declaring_no_batch_api_is_refused() -> None:
    with pytest.raises(ConfigError, match="has no Batch API"):
        check_batchable(LinePlugin(Capabilities(batch_export=False)))


def test_a_provider_declaring_one_without_batch_lines_is_refused() -> None:
    with pytest.raises(ConfigError, match="has no Batch API"):
        check_batchable(Plugin())


def test_a_plugin_that_declares_it_and_writes_lines_is_taken_and_its_body_sent() -> None:
    plugin = LinePlugin()
    assert check_batchable(plugin) is plugin
    request = Request("echo", ({"role": "user", "content": "hi"},), {}, ("a",), 50)
    line = batch_line(plugin, request, Generation())
    assert line["body"] == plugin.body(request, Generation(), "text") and line["method"] == "POST"


def test_an_openai_compatible_provider_is_taken_without_building_its_client() -> None:
    provider = OpenAICompatProvider("m", preset=get_preset("vllm"), base_url="http://x/v1", api_key="sk-t")
    assert batchable(tiny_config(batch=True), provider) is provider
    assert provider._endpoint is None  # the SDK (a second to import) is not touched by the check
