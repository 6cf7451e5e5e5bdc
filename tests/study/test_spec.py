"""The study file: the issue's example as written, runs derived from the run spec, errors naming the key
and the file."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.errors import ConfigError
from rescue_bench.spec import RunSpec
from rescue_bench.study import validate_study

ISSUE_EXAMPLE = """
data = "data/benchmark_191.jsonl"
tasks = ["all"]
out = "studies/table5"
repeats = 1
[[models]]
name = "openai/gpt-4o-mini"      # provider/model, as on the command line
base_url = "..."                 # optional, as --base-url
api_key_env = "OPENAI_API_KEY"   # optional
temperature = 0.0
top_p = 1.0
seed = 0
max_tokens = 4000                # optional override of every task's output cap
reasoning_effort = "high"        # none | minimal | low | medium | high | max
extra_body = { }                 # passed to the request as is
concurrency = 32
[[judges]]
name = "openai/gpt-4.1"          # same keys as a model
"""


def test_the_issue_example_works_as_written() -> None:
    study = validate_study(tomllib.loads(ISSUE_EXAMPLE), where="study.toml")
    (run,) = study.runs()
    assert isinstance(run.spec, RunSpec)
    assert run.out == Path("studies/table5/openai-gpt-4o-mini")
    assert run.spec.model.reasoning_effort == "high" and run.spec.model.concurrency == 32
    assert run.spec.judges[0].name == "openai/gpt-4.1" and run.spec.repeats == 1
    # every other key of the run spec is the study's: derived, not copied
    assert run.spec.model_dump(exclude={"model", "out"}) == study.base.model_dump(exclude={"model", "out"})


def test_perturbations_and_the_context_curve() -> None:
    table = {
        "models": [{"name": "baseline/random"}, {"name": "baseline/majority"}],
        "perturb": ["", "name-swap, context:3", "context-curve"],
        "out": "s",
    }
    runs = validate_study(table).runs()
    assert len(runs) == 2 * 7
    first = runs[:7]
    assert [r.perturbation for r in first] == [
        "",
        "name-swap,context:3",
        "context:0",
        "context:1",
        "context:3",
        "context:5",
        "context:all",
    ]
    assert first[0].out == Path("s/baseline-random") and first[0].spec.perturb == ()
    assert first[1].out == Path("s/baseline-random/name-swap+context-3")
    assert first[1].spec.perturb == ("name-swap", "context:3")
    flagged = validate_study({"models": ["baseline/random"], "context_curve": True}).variants()
    assert flagged == ("", "context:0", "context:1", "context:3", "context:5", "context:all")


def test_two_models_of_one_name_get_distinct_directories() -> None:
    runs = validate_study({"models": [{"name": "vllm/x"}, {"name": "vllm/x", "temperature": 0.7}]}).runs()
    assert runs[0].out != runs[1].out and runs[0].out.name.startswith("vllm-x_")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"models": ["a/b"], "contxt_size": 3}, "study.toml: contxt_size: unknown key"),
        ({"models": [{"name": "a/b", "temprature": 1}]}, "study.toml: models.0.temprature: unknown key"),
        ({"models": ["a/b", {"name": "c/d", "colour": 1}]}, "study.toml: models.1.colour: unknown key"),
        ({"tasks": ["itp"]}, "study.toml: models: a study needs at least one"),
        ({"models": ["a/b"], "model": "c/d"}, "study.toml: model: a study lists its models"),
        ({"model": "c/d"}, "study.toml: model: a study lists its models"),
        ({"models": ["a/b"], "perturb": ["nope"]}, "study.toml: perturb"),
        ({"models": ["a/b"], "engine": {"concurency": 2}}, "study.toml: engine.concurency: unknown key"),
        (
            {"models": {"name": "a/b"}},
            "study.toml: models: one table where a list of tables belongs: write [[models]]",
        ),
        (
            {"models": ["a/b"], "context_curve": "yes"},
            "study.toml: context_curve: Input should be a valid boolean",
        ),
        (
            {"models": [{"name": "a/b", "seed": "3"}]},
            "study.toml: models.0.seed: Input should be a valid integer",
        ),
    ],
)
def test_bad_keys_are_named_with_the_file(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        validate_study(table, where="study.toml")
    assert str(caught.value).startswith(message), str(caught.value)
    assert "\n" not in str(caught.value)


def test_print_spec_round_trips_and_flags_override(tmp_path: Path) -> None:
    path = tmp_path / "study.toml"
    path.write_text(ISSUE_EXAMPLE)
    result = CliRunner().invoke(
        app, ["sweep", str(path), "--print-spec", "--concurrency", "3", "--seed", "7"]
    )
    assert result.exit_code == 0, result.output
    printed = tomllib.loads(result.output)
    assert printed["engine"]["concurrency"] == 3
    assert [m["seed"] for m in printed["models"]] == [7]
    again = tmp_path / "again.toml"
    again.write_text(result.output)
    assert validate_study(tomllib.loads(again.read_text())) == validate_study(printed)
    simple = CliRunner().invoke(
        app, ["sweep", "--model", "baseline/random", "-m", "baseline/majority", "--print-spec"]
    )
    assert simple.exit_code == 0, simple.output
    assert [m["name"] for m in tomllib.loads(simple.output)["models"]] == [
        "baseline/random",
        "baseline/majority",
    ]
    bad = CliRunner().invoke(app, ["sweep", str(path), "--concurrency", "0"])
    assert bad.exit_code == 2 and "--concurrency" in bad.output
    assert not (tmp_path / "studies").exists()


def test_print_spec_refuses_a_null_in_a_models_extra_body() -> None:
    result = CliRunner().invoke(
        app, ["sweep", "--model", "openai/gpt-4o", "--extra-body", '{"stop": null}', "--print-spec"]
    )
    assert result.exit_code == 2
    assert result.output.startswith("error: models.0.extra_body.stop is null, which a TOML spec cannot hold")
