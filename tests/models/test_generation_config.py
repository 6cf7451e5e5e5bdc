"""A generation setting is one field of ``Generation``: from it alone, ``run`` has its flag, the
response-cache key and run.json's compared config hold it when it is set (and only then), and the spec's
table takes it."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.cli.run_flags import FLAGS
from rescue_bench.models.base import Generation
from rescue_bench.records import Request
from rescue_bench.rundir import describe_changes
from rescue_bench.rundir.cache import cache_key
from rescue_bench.spec import RunSpec
from rescue_bench.spec.record import config_record

RUNNER = CliRunner()
SETTINGS = list(Generation.model_fields)
IDENTITY = {"provider": "vllm", "base_url": "http://localhost:8000/v1", "model": "q"}
REQUEST = Request("itp", ({"role": "user", "content": "hi"},), {}, ("a",), max_tokens=300)


def other_value(name: str) -> Any:
    """A valid value of the setting ``name`` that is not its default, found from the field's JSON schema."""
    schema = Generation.model_json_schema()["properties"][name]
    kinds = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    default = Generation.model_fields[name].get_default(call_default_factory=True)
    if "enum" in kinds[0]:
        return next(v for v in kinds[0]["enum"] if v != default)
    return {"boolean": not default, "integer": 3, "number": 0.5, "object": {"top_k": 20}}[kinds[0]["type"]]


def config(**settings: Any) -> dict[str, Any]:
    return config_record(RunSpec(model={"name": "vllm/q", **settings}, tasks=["itp"]))


def test_a_default_config_and_key_hold_no_setting() -> None:
    assert not set(config()) & set(SETTINGS)
    assert Generation().settings() == {}
    # concurrency is how the run goes, not what it asks: never in the config
    assert config(concurrency=3) == config()


@pytest.mark.parametrize("name", SETTINGS)
def test_a_setting_given_at_its_default_changes_nothing(name: str) -> None:
    default = Generation.model_fields[name].get_default(call_default_factory=True)
    assert config(**{name: default}) == config()
    given = Generation.model_validate({name: default})
    assert cache_key(IDENTITY, REQUEST, given) == cache_key(IDENTITY, REQUEST, Generation())


@pytest.mark.parametrize("name", SETTINGS)
def test_a_set_setting_is_in_the_config_and_the_cache_key(name: str) -> None:
    value = other_value(name)
    new, old = config(**{name: value}), config()
    assert new == {**old, name: value}
    # A JSON round trip (what run.json holds) compares equal, and the old directory is refused by name.
    assert describe_changes({"config": json.loads(json.dumps(new))}, {"config": new}) == []
    assert describe_changes({"config": old}, {"config": new}) == [f"{name}: None -> {value!r}"]
    given = Generation.model_validate({name: value})
    assert cache_key(IDENTITY, REQUEST, given) != cache_key(IDENTITY, REQUEST, Generation())


@pytest.mark.parametrize("name", SETTINGS)
def test_every_setting_has_a_run_flag_that_sets_it(name: str) -> None:
    (flag,) = [f for f in FLAGS if f.paths == (("model", name),)]
    value = other_value(name)
    text = [] if isinstance(value, bool) else [json.dumps(value) if isinstance(value, dict) else str(value)]
    result = RUNNER.invoke(app, ["run", "--model", "vllm/q", flag.decls[0], *text, "--print-spec"])
    assert result.exit_code == 0, result.output
    assert tomllib.loads(result.output)["model"][name] == value
    assert flag.help == Generation.model_fields[name].description or flag.help.startswith(
        str(Generation.model_fields[name].description)
    )


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--extra-body", "{top_k: 20}", "--extra-body: not valid JSON"),
        ("--extra-body", "[1, 2]", "--extra-body: give a JSON object"),
        ("--reasoning-effort", "extreme", "--reasoning-effort"),
        ("--top-p", "1.5", "--top-p"),
        ("--max-tokens", "0", "--max-tokens"),
        ("--temperature", "-1", "--temperature"),
    ],
)
def test_bad_flag_values_are_one_line_errors(flag: str, value: str, message: str) -> None:
    result = RUNNER.invoke(app, ["run", "--model", "vllm/q", flag, value, "--print-spec"])
    assert result.exit_code != 0
    text = result.output.strip()
    assert message in text and len(text.splitlines()) == 1 and "Traceback" not in text
