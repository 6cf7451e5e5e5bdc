"""The generation settings in run.json's compared config (added only when not at their defaults, so old runs
resume) and on the command line (--reasoning-effort, --top-p, --max-tokens, --extra-body)."""

from __future__ import annotations

import json
import tomllib

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.engine.manifest import config_record
from rescue_bench.rundir import PROTOCOL, describe_changes
from rescue_bench.spec import RunSpec

RUNNER = CliRunner()
# config_record of these specs as the code before the new settings (main at 3af0954) computed it, plus the
# protocol version every run records since (an older protocol's directory is refused on its own, by version).
OLD_DEFAULT = {
    "protocol": PROTOCOL,
    "batch_size": None,
    "context_size": None,
    "disable_thinking": False,
    "limit_samples": None,
    "mode": "dialogue",
    "model": "openai/m",
    "response_format": "json_schema",
    "sample_ids": None,
    "seed": None,
    "task_options": {},
    "tasks": ["itp"],
    "temperature": 0.0,
    "video": None,
}
OLD_SET = {
    **OLD_DEFAULT,
    "disable_thinking": True,
    "model": "vllm/q",
    "seed": 4,
    "temperature": 0.5,
    "tasks": ["rpp", "er"],
    "task_options": {
        "er": {"checkpoints_per_sample": 5, "min_dialogue_words": 5},
        "rpp": {"gold_field": "auto", "include_current_turn": False},
    },
}


def test_default_settings_keep_the_config_of_before() -> None:
    assert config_record(RunSpec(model="openai/m", tasks=["itp"])) == OLD_DEFAULT
    spec = RunSpec(
        model={"name": "vllm/q", "seed": 4, "temperature": 0.5, "disable_thinking": True}, tasks=["rpp", "er"]
    )
    assert config_record(spec) == OLD_SET
    # A JSON round trip (what run.json holds) compares equal: an old directory resumes.
    assert (
        describe_changes({"config": json.loads(json.dumps(OLD_SET))}, {"config": config_record(spec)}) == []
    )


@pytest.mark.parametrize(
    ("setting", "key", "value"),
    [
        ({"top_p": 0.9}, "top_p", 0.9),
        ({"max_tokens": 6000}, "max_tokens", 6000),
        ({"reasoning_effort": "high"}, "reasoning_effort", "high"),
        ({"extra_body": {"top_k": 20}}, "extra_body", {"top_k": 20}),
    ],
)
def test_a_new_setting_adds_only_its_key_and_refuses_the_old_directory(
    setting: dict[str, object], key: str, value: object
) -> None:
    new = config_record(RunSpec(model={"name": "vllm/q", **setting}, tasks=["itp"]))
    old = {**OLD_DEFAULT, "model": "vllm/q"}
    assert new == {**old, key: value}
    assert describe_changes({"config": old}, {"config": new}) == [f"{key}: None -> {value!r}"]
    # concurrency is how the run goes, not what it asks: never in the config
    assert config_record(RunSpec(model={"name": "vllm/q", "concurrency": 3}, tasks=["itp"])) == old


def test_flags_set_the_model_settings() -> None:
    args = ["run", "--model", "vllm/q", "--tasks", "itp", "--reasoning-effort", "high", "--top-p", "0.9"]
    args += ["--max-tokens", "5000", "--extra-body", '{"top_k": 20, "min_p": 0.1}', "--print-spec"]
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, result.output
    model = tomllib.loads(result.output)["model"]
    assert model["reasoning_effort"] == "high" and model["top_p"] == 0.9 and model["max_tokens"] == 5000
    assert model["extra_body"] == {"top_k": 20, "min_p": 0.1}


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--extra-body", "{top_k: 20}", "--extra-body: not valid JSON"),
        ("--extra-body", "[1, 2]", "--extra-body: give a JSON object"),
        ("--reasoning-effort", "extreme", "--reasoning-effort"),
        ("--top-p", "1.5", "--top-p"),
        ("--max-tokens", "0", "--max-tokens"),
    ],
)
def test_bad_flag_values_are_one_line_errors(flag: str, value: str, message: str) -> None:
    result = RUNNER.invoke(app, ["run", "--model", "vllm/q", flag, value, "--print-spec"])
    assert result.exit_code != 0
    text = result.output.strip()
    assert message in text and len(text.splitlines()) == 1 and "Traceback" not in text
