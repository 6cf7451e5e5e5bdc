"""What each provider prefix declares, read before a provider is built: built-ins and plugins alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.models.test_registry import PLUGIN, install_plugin

from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Capabilities
from rescue_bench.models.factories import LOCAL_CAPABILITIES, OTHERS, find_other
from rescue_bench.models.presets import PRESETS, reasoning_problem
from rescue_bench.models.registry import PROVIDERS, declared_capabilities, get_model

DECLARING = (
    PLUGIN
    + """

class Thoughtless(EchoProvider):
    capabilities = Capabilities(has_endpoint=False, settings=frozenset({"temperature"}), billed=True)


def odd(model, options):
    return EchoProvider(model, options)


odd.capabilities = "billed"
"""
)


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entries = "echo = echo_plugin:make\nthoughtless = echo_plugin:Thoughtless\nodd = echo_plugin:odd"
    install_plugin(tmp_path, entries, module=DECLARING)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_built_ins_declare_what_their_providers_have(tmp_path: Path) -> None:
    assert get_model("baseline/random").capabilities == declared_capabilities("baseline/random")
    assert get_model("vllm/q").capabilities == declared_capabilities("vllm/q")
    assert set(PROVIDERS) == {*PRESETS, *OTHERS}
    assert declared_capabilities("local/gemma-3-270m") == LOCAL_CAPABILITIES
    try:
        from rescue_bench.models.local import LocalProvider
    except ModuleNotFoundError:  # pragma: no cover - the local extra is not installed
        return
    assert LocalProvider.capabilities == LOCAL_CAPABILITIES


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_is_billed_and_takes_an_effort(name: str) -> None:
    declared = declared_capabilities(f"{name}/m")
    assert declared.billed and declared.has_endpoint and "reasoning_effort" in declared.settings


@pytest.mark.parametrize("prefix", sorted(OTHERS))
def test_local_baseline_and_replay_are_free_and_have_no_switch(prefix: str) -> None:
    declared = declared_capabilities(f"{prefix}/m")
    assert not declared.billed and not declared.has_endpoint
    assert "reasoning_effort" not in declared.settings
    assert reasoning_problem(prefix, "low") == f"{prefix}/ models have no reasoning switch; use none"


@pytest.mark.usefixtures("plugins")
def test_a_plugin_declares_on_its_factory() -> None:
    assert declared_capabilities("echo/x") == Capabilities()  # a plain function declares nothing
    thoughtless = declared_capabilities("thoughtless/x")
    assert thoughtless.billed and "reasoning_effort" not in thoughtless.settings
    assert (
        reasoning_problem("thoughtless", "high") == "thoughtless/ models have no reasoning switch; use none"
    )
    assert reasoning_problem("echo", "high") is None and reasoning_problem("thoughtless", "none") is None
    with pytest.raises(ConfigError, match=r"provider plugin 'odd' .* capabilities attribute is not"):
        declared_capabilities("odd/x")


def test_an_unknown_prefix_declares_nothing() -> None:
    assert find_other("nope") is None and reasoning_problem("nope", "low") is None
    with pytest.raises(ConfigError, match="unknown provider 'nope'"):
        declared_capabilities("nope/x")
