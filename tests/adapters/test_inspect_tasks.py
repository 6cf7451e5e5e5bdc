"""The inspect tasks are made from the task registry: one per task, its ``-T`` parameters the common settings
and the fields of the task's ``Options`` model, and an outside plugin's task among them."""

from __future__ import annotations

import inspect
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai._eval.registry import task_create
from inspect_ai._util.registry import registry_info
from tests.plugins.test_xtp_plugin import REPO_ROOT, plugin_path  # noqa: F401

from rescue_bench.adapters.inspect.tasks import FACTORIES
from rescue_bench.adapters.plan import TaskArgs, plan, task_args
from rescue_bench.errors import ConfigError
from rescue_bench.tasks import TASK_NAMES, get_task

COMMON = ["data", "mode", "context_size", "batch_size", "limit_samples", "temperature", "seed"]
"""What every task's ``-T`` took before the tasks were made from the registry."""


def parameters(name: str) -> dict[str, object]:
    return {n: p.default for n, p in inspect.signature(FACTORIES[name]).parameters.items()}


def test_every_registered_task_is_an_inspect_task() -> None:
    assert list(FACTORIES) == list(TASK_NAMES)
    for name in TASK_NAMES:
        info = registry_info(FACTORIES[name])
        assert info.name == f"rescue_bench/{name}"
        assert info.metadata["params"] == list(parameters(name))
        assert FACTORIES[name].__doc__ and FACTORIES[name].__doc__.startswith(name.upper())


def test_a_task_with_options_takes_them_with_their_defaults() -> None:
    # The -T names each task's hand-written function took, with its defaults.
    assert parameters("rpp") == {
        **dict.fromkeys(COMMON),
        "data": "demo",
        "mode": "dialogue",
        "temperature": 0.0,
        "gold_field": "auto",
        "include_current_turn": False,
    }
    assert list(parameters("ssp"))[len(COMMON) :] == ["include_target_emotion"]
    assert list(parameters("itp")) == COMMON
    annotation = inspect.signature(FACTORIES["rpp"]).parameters["include_current_turn"].annotation
    assert annotation is bool


def test_a_judged_task_takes_its_checkpoints_and_lists_its_judge() -> None:
    er = parameters("er")
    assert er["checkpoints_per_sample"] == 5 and er["min_dialogue_words"] == 5
    assert list(er)[: len(COMMON)] == COMMON
    assert parameters("vp")["checkpoints_per_sample"] == 5
    rubric = get_task("er").INFO.judge
    assert rubric is not None and rubric.title in str(FACTORIES["er"].__doc__)


def _inputs(task: object) -> list[list[str]]:
    dataset = getattr(task, "dataset")  # noqa: B009 - inspect's Task
    return [[str(m.content) for m in sample.input] for sample in dataset]


def test_options_given_to_inspect_reach_the_prompts() -> None:
    options = {"gold_field": "relation_cycle_state", "include_current_turn": True}
    made = task_create("rescue_bench/rpp", limit_samples=1, **options)
    ours = plan(TaskArgs("rpp", limit_samples=1, options=options)).requests
    assert _inputs(made) == [[str(m["content"]) for m in r.messages] for r in ours]
    default = plan(TaskArgs("rpp", limit_samples=1)).requests
    assert [r.messages for r in ours] != [r.messages for r in default]  # the option changed the prompt
    assert made.metadata is not None
    assert made.metadata["rescue_bench"]["task_args"]["options"] == options


def test_an_unknown_parameter_gets_inspects_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        made = task_create("rescue_bench/itp", limit_samples=1, gold_field="auto")
    assert "param 'gold_field' not used by task 'rescue_bench/itp'" in caplog.text
    assert len(_inputs(made)) > 0


def test_a_bad_option_value_names_the_option() -> None:
    with pytest.raises(ConfigError, match=r"^rpp option gold_field: Input should be 'auto'"):
        FACTORIES["rpp"](gold_field="pattern")
    with pytest.raises(ConfigError, match=r"vp option checkpoints_per_sample: Input should be greater"):
        FACTORIES["vp"](checkpoints_per_sample=0)


def test_flat_options_go_to_each_task_that_has_them() -> None:
    # lm-eval's --metadata may give a task's options flat, by field name.
    flat = {
        "data": "demo",
        "mode": "dialogue",
        "context_size": None,
        "batch_size": None,
        "limit_samples": 6,
        "gold_field": "relation_pattern",
        "include_current_turn": True,
        "include_target_emotion": True,
        "checkpoints_per_sample": 2,
    }
    names = ("itp", "rpp", "ssp", "er", "vp")
    got = {name: dict(task_args({**flat, "task": name}).options) for name in names}
    assert got == {
        "itp": {},
        "rpp": {"gold_field": "relation_pattern", "include_current_turn": True},
        "ssp": {"include_target_emotion": True},
        "er": {"checkpoints_per_sample": 2},
        "vp": {"checkpoints_per_sample": 2},
    }
    assert task_args({**flat, "task": "rpp"}).limit_samples == 6
    with pytest.raises(ConfigError, match="unknown setting 'limit' of task itp"):
        task_args({"task": "itp", "limit": 3})
    with pytest.raises(ConfigError, match="unknown setting 'rpp_gold_field' of task rpp"):
        task_args({"task": "rpp", "rpp_gold_field": "auto"})


PROBE = """
import inspect
from inspect_ai._util.registry import registry_info
from rescue_bench.adapters.inspect.tasks import FACTORIES
factory = FACTORIES["xtp"]
print(registry_info(factory).name.rsplit("/", 1)[-1])
print(",".join(inspect.signature(factory).parameters))
print(len(factory(limit_samples=1).dataset))
"""


@pytest.mark.subprocess
def test_an_outside_plugin_task_is_an_inspect_task(plugin_path: Path) -> None:  # noqa: F811
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_path), str(REPO_ROOT / "src")])}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    name, params, samples = done.stdout.split()
    assert name == "xtp" and params.split(",") == COMMON and int(samples) > 0
