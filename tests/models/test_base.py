"""What every provider shares (``models.base``): the settings it declares it honours, and the refusal, before
anything is sent, of a setting it would ignore."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Capabilities, Generation, check_settings
from rescue_bench.models.baselines import CAPABILITIES as BASELINES
from rescue_bench.models.local import LocalProvider
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.replay import ReplayProvider


@dataclass
class Stub:
    name: str
    capabilities: Capabilities


@pytest.mark.parametrize(
    "capabilities",
    [OpenAICompatProvider.capabilities, LocalProvider.capabilities, BASELINES, ReplayProvider.capabilities],
)
def test_a_provider_names_settings_that_exist(capabilities: Capabilities) -> None:
    assert capabilities.settings and capabilities.settings <= set(Generation.model_fields)


def test_an_endpoint_honours_every_setting() -> None:
    assert OpenAICompatProvider.capabilities.settings == set(Generation.model_fields)


@pytest.mark.parametrize(
    ("name", "capabilities", "given", "refused"),
    [
        ("local/gemma-3-270m", LocalProvider.capabilities, {"top_p": 0.9}, "top_p"),
        ("local/gemma-3-270m", LocalProvider.capabilities, {"extra_body": {"top_k": 2}}, "extra_body"),
        ("baseline/random", BASELINES, {"temperature": 0.7, "seed": 3}, "temperature"),
        ("replay/runs/a", ReplayProvider.capabilities, {"response_format": "text"}, "response_format"),
    ],
)
def test_a_setting_the_provider_would_ignore_is_refused(
    name: str, capabilities: Capabilities, given: dict[str, object], refused: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        check_settings(Stub(name, capabilities), Generation.model_validate(given))  # type: ignore[arg-type]
    text = str(caught.value)
    assert f"{name} does not honour {refused}" in text and "\n" not in text


def test_settings_at_their_defaults_and_honoured_ones_pass() -> None:
    check_settings(Stub("baseline/random", BASELINES), Generation(seed=3, temperature=0.0))  # type: ignore[arg-type]
    local = Generation(temperature=0.5, seed=1, max_tokens=50, response_format="text")
    check_settings(Stub("local/m", LocalProvider.capabilities), local)  # type: ignore[arg-type]


def test_run_refuses_an_ignored_setting_before_the_run_starts(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["run", "--model", "baseline/random", "--tasks", "itp", "--temperature", "0.7", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "baseline/random does not honour temperature" in result.output
    assert len(result.output.strip().splitlines()) == 1 and not out.exists()
