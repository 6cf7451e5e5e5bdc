"""The spec's values are taken as typed: no string, boolean or float is coerced into another type, and no
value that no request can carry (an infinite temperature, a negative seed, a key the tool sets itself)."""

from __future__ import annotations

from typing import Any

import pytest

from rescue_bench.errors import ConfigError
from rescue_bench.spec import validate_spec

MODEL = {"name": "openai/gpt-4o-mini"}


def refused(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        validate_spec({"model": MODEL, "tasks": ["itp"], **data}, where="--spec s.toml")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("--spec s.toml: ")
    return message


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"engine": {"concurrency": "16"}}, "engine.concurrency"),
        ({"engine": {"concurrency": 16.0}}, "engine.concurrency"),
        ({"engine": {"cache": "yes"}}, "engine.cache"),
        ({"engine": {"cache": 1}}, "engine.cache"),
        ({"engine": {"timeout": "30"}}, "engine.timeout"),
        ({"engine": {"max_retries": True}}, "engine.max_retries"),
        ({"batch": "yes"}, "batch"),
        ({"bertscore": "false"}, "bertscore"),
        ({"repeats": 1e9}, "repeats"),
        ({"limit_samples": "3"}, "limit_samples"),
        ({"model": {**MODEL, "temperature": "0.5"}}, "model.temperature"),
        ({"model": {**MODEL, "temperature": True}}, "model.temperature"),
        ({"model": {**MODEL, "seed": "7"}}, "model.seed"),
        ({"model": {**MODEL, "max_tokens": 100.0}}, "model.max_tokens"),
        ({"model": {**MODEL, "disable_thinking": "true"}}, "model.disable_thinking"),
        ({"budget": {"usd": "5"}}, "budget.usd"),
        ({"video": {"frames": "4"}}, "video.frames"),
        ({"task_options": {"er": {"checkpoints_per_sample": "2"}}, "tasks": ["er"]}, "task_options.er"),
        ({"task_options": {"rpp": {"include_current_turn": "yes"}}, "tasks": ["rpp"]}, "task_options.rpp"),
    ],
)
def test_a_value_of_the_wrong_type_is_named_not_coerced(data: dict[str, Any], field: str) -> None:
    assert refused(data).startswith(f"--spec s.toml: {field}")


def test_numbers_stay_numbers() -> None:
    spec = validate_spec({"model": {**MODEL, "temperature": 1}, "engine": {"timeout": 30, "rpm": 60}})
    assert spec.model.temperature == 1.0 and spec.engine.timeout == 30.0 and spec.engine.rpm == 60.0


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"model": {**MODEL, "temperature": float("inf")}}, "model.temperature: Input should be a finite"),
        ({"engine": {"timeout": float("nan")}}, "engine.timeout: Input should be a finite"),
        ({"budget": {"usd": float("inf")}}, "budget.usd: Input should be a finite"),
        ({"model": {**MODEL, "seed": -1}}, "model.seed: Input should be greater than or equal to 0"),
        ({"model": {**MODEL, "seed": 2**64}}, "model.seed: Input should be less than or equal to"),
        ({"repeats": 1_000_000_000}, "repeats: Input should be less than or equal to 100"),
        ({"judge_repeats": 10**6}, "judge_repeats: Input should be less than or equal to 100"),
    ],
)
def test_values_no_request_can_carry_are_refused(data: dict[str, Any], words: str) -> None:
    assert words in refused(data)


@pytest.mark.parametrize("key", ["model", "messages", "stream", "n", "temperature", "max_tokens", "seed"])
def test_extra_body_cannot_replace_what_the_tool_sets(key: str) -> None:
    message = refused({"model": {**MODEL, "extra_body": {"top_k": 5, key: 1}}})
    assert message.startswith(f"--spec s.toml: model.extra_body: {key!r} is set by ")


def test_extra_body_for_a_judge_is_checked_the_same_way_and_must_be_json() -> None:
    judge = {"name": "openai/gpt-4o", "extra_body": {"messages": []}}
    assert "judges.0.extra_body: 'messages' is set by the task" in refused({"judges": [judge]})
    inf = refused({"model": {**MODEL, "extra_body": {"top_k": float("inf")}}})
    assert inf.endswith("model.extra_body: inf and nan are not JSON: no request can carry them")
    kept = validate_spec({"model": {**MODEL, "extra_body": {"top_k": 20, "chat_template_kwargs": {"x": 1}}}})
    assert kept.model.extra_body == {"top_k": 20, "chat_template_kwargs": {"x": 1}}


def test_a_single_judges_table_is_named() -> None:
    message = refused({"judges": {"name": "openai/gpt-4o"}})
    assert message == (
        "--spec s.toml: judges: one table where a list of tables belongs: write [[judges]] (two brackets)"
    )
