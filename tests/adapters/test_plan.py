"""An adapter's settings (inspect ``-T``, lm-eval ``metadata``): every form of a task's options is read, and a
settings object of the wrong shape is a one-line error naming the key."""

from __future__ import annotations

import pytest

from rescue_bench.adapters.plan import task_args
from rescue_bench.errors import ConfigError


def test_options_are_read_flat_nested_by_task_and_as_options() -> None:
    given = {
        "task": "rpp",
        "gold_field": "relation_pattern",
        "task_options": {"rpp": {"include_current_turn": True}, "ssp": 3},
        "options": {"gold_field": "relation_cycle"},
        "limit_samples": 2,
    }
    args = task_args(given)
    assert dict(args.options) == {"gold_field": "relation_cycle", "include_current_turn": True}
    assert args.task == "rpp" and args.limit_samples == 2
    assert task_args({"gold_field": "relation_pattern"}, "rpp").options == {"gold_field": "relation_pattern"}


@pytest.mark.parametrize(
    ("given", "task", "message"),
    [
        ({"limit_samples": 2}, None, "settings without a task name: ['limit_samples']"),
        ({"task": 5}, None, "settings without a task name: ['task']"),
        ({"task": 5}, "rpp", "settings of task 5 given for task 'rpp'"),
        ({"task": "itp"}, "rpp", "settings of task 'itp' given for task 'rpp'"),
        ({"task": "rpp", "options": [1]}, None, "options: expected an object of options, not list"),
        ({"task": "rpp", "task_options": "x"}, None, "task_options: expected an object of options, not str"),
        (
            {"task": "rpp", "task_options": {"rpp": 3}},
            None,
            "task_options.rpp: expected an object of options, not int",
        ),
        ({"task": "rpp", "colour": 1}, None, "unknown setting 'colour' of task rpp"),
    ],
)
def test_settings_of_the_wrong_shape_are_named(
    given: dict[str, object], task: str | None, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        task_args(given, task)
    assert str(caught.value).startswith(message), str(caught.value)
