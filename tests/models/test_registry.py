"""Model names to providers: presets, endpoint flags, keys from the environment or .env, special prefixes."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from rescue_bench.errors import ConfigError
from rescue_bench.models.env import load_dotenv
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import LOCAL_PLACEHOLDER_KEY, PRESETS
from rescue_bench.models.registry import get_model

ALL_KEY_VARS = {var for preset in PRESETS.values() for var in (*preset.key_envs, *preset.base_url_envs)}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ALL_KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray ./.env


def key_of(provider: object) -> str:
    assert isinstance(provider, OpenAICompatProvider)
    return str(provider.endpoint.client.api_key)  # the key the SDK client sends


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_routes_to_its_endpoint(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    preset = PRESETS[name]
    monkeypatch.setenv(preset.key_envs[0], "sk-from-env")
    provider = get_model(f"{name}/some-model")
    assert isinstance(provider, OpenAICompatProvider)
    assert provider.identity() == {"provider": name, "model": "some-model", "base_url": preset.base_url}
    assert key_of(provider) == "sk-from-env"


def test_missing_key_for_a_cloud_service_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="no API key for deepseek: set DEEPSEEK_API_KEY"):
        get_model("deepseek/deepseek-chat")


def test_local_servers_need_no_key() -> None:
    assert key_of(get_model("vllm/qwen")) == LOCAL_PLACEHOLDER_KEY
    assert key_of(get_model("openai/any", base_url="http://127.0.0.1:9/v1")) == LOCAL_PLACEHOLDER_KEY


def test_base_url_and_key_env_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_GATEWAY_KEY", "sk-gateway")
    provider = get_model("openai/gpt-x", base_url="http://gateway.local:8080", api_key_env="MY_GATEWAY_KEY")
    assert isinstance(provider, OpenAICompatProvider)
    assert provider.identity()["base_url"] == "http://gateway.local:8080/v1"
    assert key_of(provider) == "sk-gateway"
    with pytest.raises(ConfigError, match="set NOT_SET_ANYWHERE"):
        get_model("openai/gpt-x", base_url="http://gateway.local", api_key_env="NOT_SET_ANYWHERE")


def test_base_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_BASE_URL", "http://gpu-box:8000/v1/")
    assert get_model("vllm/llama").identity()["base_url"] == "http://gpu-box:8000/v1"


def test_dotenv_file_supplies_keys_and_the_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_text('# keys\nexport DASHSCOPE_API_KEY="sk-dotenv"\nOPENAI_API_KEY=sk-file\n')
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert key_of(get_model("dashscope/qwen-plus")) == "sk-dotenv"
    assert key_of(get_model("openai/gpt-x")) == "sk-env"
    assert load_dotenv() == {"DASHSCOPE_API_KEY": "sk-dotenv", "OPENAI_API_KEY": "sk-file"}


def test_unknown_and_malformed_names() -> None:
    with pytest.raises(ConfigError, match="unknown provider 'nope'"):
        get_model("nope/model")
    with pytest.raises(ConfigError, match="provider/model"):
        get_model("gpt-4o")
    with pytest.raises(ConfigError, match="not an http"):
        get_model("openai/x", base_url="ftp://x")


def test_special_prefixes_route_to_their_modules(tmp_path: Path) -> None:
    from rescue_bench.models.baselines import MajorityBaseline, RandomBaseline

    assert isinstance(get_model("baseline/random", seed=3), RandomBaseline)
    assert isinstance(get_model("baseline/majority"), MajorityBaseline)
    with pytest.raises(ConfigError, match="--base-url and --api-key-env apply to OpenAI-compatible"):
        get_model("baseline/random", base_url="http://x")
    with pytest.raises(ConfigError, match="replay"):
        get_model(f"replay/{tmp_path / 'no-such-run'}")


def test_local_prefix_routes_to_the_local_provider() -> None:
    try:
        from rescue_bench.models import local
    except ModuleNotFoundError:
        pytest.skip("rescue_bench.models.local is not in this tree yet")
    provider = get_model("local/gemma-3-270m")
    assert isinstance(provider, local.LocalProvider)


PLUGIN = '''
from rescue_bench.models.base import Capabilities
from rescue_bench.models.registry import ProviderOptions
from rescue_bench.records import Reply


class EchoProvider:
    """Answers every request with its last message, upper-cased."""

    capabilities = Capabilities(cacheable=False, has_endpoint=False, batch_export=False)

    def prepare(self, instances):
        pass

    def __init__(self, model, options):
        self.name = f"echo/{model}"
        self.timeout = options.timeout

    def identity(self):
        return {"provider": "echo", "model": self.name}

    async def complete(self, request, params):
        return Reply(text=request.messages[-1]["content"].upper())

    async def aclose(self):
        pass


def make(model, options: ProviderOptions):
    return EchoProvider(model, options)
'''


def install_plugin(root: Path, entry_points: str, module: str = PLUGIN) -> None:
    """An installed outside package: a module and its dist-info (with entry points) on ``sys.path``."""
    sys.modules.pop("echo_plugin", None)  # a fresh import of this test's module
    importlib.invalidate_caches()
    (root / "echo_plugin.py").write_text(module)
    info = root / "echo_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[rescue_bench.providers]\n{entry_points}\n")


def test_a_provider_from_an_installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from rescue_bench.models.base import Generation, Provider
    from rescue_bench.records import Request

    install_plugin(tmp_path, "echo = echo_plugin:make")
    monkeypatch.syspath_prepend(str(tmp_path))
    provider = get_model("echo/loud", timeout=7.0)
    assert isinstance(provider, Provider) and provider.name == "echo/loud"
    assert provider.timeout == 7.0  # type: ignore[attr-defined]
    request = Request("itp", ({"role": "user", "content": "hello"},), {}, ("i",))
    assert asyncio.run(provider.complete(request, Generation())).text == "HELLO"
    with pytest.raises(ConfigError, match=r"known providers: openai, .*replay, echo$"):
        get_model("nope/x")


def test_a_broken_plugin_is_a_clear_error_naming_its_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugin(
        tmp_path, "echo = echo_plugin:make\nbroken = no_such_module:make\nodd = echo_plugin:PLUGIN_TEXT"
    )
    (tmp_path / "echo_plugin.py").write_text(PLUGIN + "\nPLUGIN_TEXT = 'not a factory'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        ConfigError,
        match=r"provider plugin 'broken' \(entry point broken = no_such_module:make in"
        r" group rescue_bench.providers\) cannot be loaded: ModuleNotFoundError",
    ):
        get_model("broken/x")
    with pytest.raises(ConfigError, match=r"provider plugin 'odd' .* is not callable"):
        get_model("odd/x")


def test_a_plugin_cannot_take_a_built_in_prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(tmp_path, "baseline = echo_plugin:make")
    monkeypatch.syspath_prepend(str(tmp_path))
    from rescue_bench.models.baselines import RandomBaseline

    assert isinstance(get_model("baseline/random"), RandomBaseline)


def test_unknown_options_for_an_openai_compatible_provider() -> None:
    with pytest.raises(ConfigError, match="vllm/ takes no option n_ctx"):
        get_model("vllm/x", n_ctx=4)
    provider = get_model("vllm/x", concurrency=8, max_reply_bytes=1000)
    assert isinstance(provider, OpenAICompatProvider) and provider.max_reply_bytes == 1000
