"""``--spec FILE.toml`` and ``--print-spec`` for run, estimate and batch export; a run.json of another
format."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.rundir import PROTOCOL

runner = CliRunner()
BASE = ("--model", "baseline/random", "--data", "demo", "--tasks", "rpp,er", "--limit-samples", "1")
OPTIONS = ("--rpp-current-turn", "--checkpoints-per-sample", "2", "-q")


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


def manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / "run.json").read_text())


def test_a_printed_spec_runs_the_same_run_and_resumes_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = invoke("run", *BASE, *OPTIONS, "--out", str(out))
    assert first.exit_code == 0, first.output
    printed = invoke("run", *BASE, *OPTIONS, "--out", str(out), "--print-spec")
    assert printed.exit_code == 0 and not (tmp_path / "s.toml").exists()
    (tmp_path / "s.toml").write_text(printed.stdout)
    again = invoke("run", "--spec", str(tmp_path / "s.toml"), "-q")
    assert again.exit_code == 0, again.output
    recorded = manifest(out)
    assert recorded["timings"]["sessions"] == 2 and recorded["format"] == 2
    assert recorded["config"]["task_options"]["rpp"]["include_current_turn"] is True
    assert recorded["config"]["task_options"]["er"]["checkpoints_per_sample"] == 2
    assert recorded["spec"]["out"] == str(out)
    # The printed spec is a fixed point: printing it again from the file gives the same text.
    assert invoke("run", "--spec", str(tmp_path / "s.toml"), "--print-spec").stdout == printed.stdout


def test_flags_beside_a_spec_override_it_and_unknown_keys_are_named(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(
        'data = "demo"\ntasks = ["itp"]\n\n[model]\nname = "baseline/random"\n\n[engine]\nconcurrency = 2\n'
    )
    printed = invoke("estimate", "--spec", str(spec), "--concurrency", "5", "--tasks", "stp", "--print-spec")
    assert printed.exit_code == 0, printed.output
    assert "concurrency = 5" in printed.stdout and 'tasks = ["stp"]' in printed.stdout
    spec.write_text(spec.read_text() + "concurency = 3\n")
    bad = invoke("run", "--spec", str(spec))
    assert bad.exit_code == 2
    assert bad.output.strip() == f"error: --spec {spec}: engine.concurency: unknown key"
    bad = invoke("run", "--spec", str(spec), "--concurrency", "0")
    assert bad.exit_code == 2 and bad.output.startswith("error: ")  # the first problem found, on one line


def test_values_are_checked_before_anything_is_written(tmp_path: Path) -> None:
    out = tmp_path / "run"
    for flag, value in (("--concurrency", "0"), ("--timeout", "0"), ("--rpm", "-1"), ("--batch-size", "0")):
        result = invoke("run", *BASE, flag, value, "--out", str(out))
        assert result.exit_code == 2 and result.output.startswith(f"error: {flag}: "), result.output
    assert not out.exists()


def rewrite(out: Path, **changes: Any) -> dict[str, Any]:
    """Rewrite the run's ``run.json`` with ``changes`` (``config`` without ``protocol`` when not given)."""
    recorded = manifest(out)
    config = {k: v for k, v in recorded["config"].items() if k != "protocol"}
    written = {**recorded, "config": config, **changes}
    (out / "run.json").write_text(json.dumps(written))
    return written


def test_a_run_of_an_older_protocol_is_never_resumed(tmp_path: Path) -> None:
    """A run recorded without config.protocol is protocol 1: its prompts, judge inputs and scoring are not
    today's, so it is refused in one line before anything is asked."""
    out = tmp_path / "run"
    assert invoke("run", *BASE, *OPTIONS, "--out", str(out)).exit_code == 0
    assert manifest(out)["config"]["protocol"] == PROTOCOL
    changed = invoke("run", *BASE, "--rpp-current-turn", "--checkpoints-per-sample", "3", "--out", str(out))
    assert (
        changed.exit_code == 2
        and "task_options:" in changed.output
        and "another configuration" in changed.output
    )
    rewrite(out)
    before = (out / "predictions.jsonl").read_bytes()
    refused = invoke("run", *BASE, *OPTIONS, "--out", str(out))
    assert refused.exit_code == 2
    assert refused.output.strip().count("\n") == 0 and "protocol version 1" in refused.output, refused.output
    assert (out / "predictions.jsonl").read_bytes() == before


def test_a_run_json_of_another_format_is_refused_naming_it_and_its_writer(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert invoke("run", *BASE, *OPTIONS, "--out", str(out)).exit_code == 0
    written = rewrite(out, format=1, package_version="0.0.7")
    before = (out / "predictions.jsonl").read_bytes()
    refused = invoke("run", *BASE, *OPTIONS, "--out", str(out))
    assert refused.exit_code == 2 and refused.output.strip().count("\n") == 0, refused.output
    assert f"{out / 'run.json'}: format 1, written by rescue-bench 0.0.7" in refused.output
    assert (out / "predictions.jsonl").read_bytes() == before and manifest(out) == written


def test_a_run_whose_config_lists_default_settings_is_refused_by_its_version(tmp_path: Path) -> None:
    """Protocol 2 recorded every generation setting of the first format, defaults included: such a directory
    is refused in one line naming its version, not with a list of settings that seem to have changed."""
    out = tmp_path / "run"
    assert invoke("run", *BASE, *OPTIONS, "--out", str(out)).exit_code == 0
    recorded = manifest(out)
    defaults = {"seed": None, "temperature": 0.0, "response_format": "json_schema", "disable_thinking": False}
    recorded["config"] = {**recorded["config"], **defaults, "protocol": 2}
    (out / "run.json").write_text(json.dumps(recorded))
    refused = invoke("run", *BASE, *OPTIONS, "--out", str(out))
    assert refused.exit_code == 2 and refused.output.strip().count("\n") == 0, refused.output
    assert "protocol version 2" in refused.output and f"runs version {PROTOCOL}" in refused.output


def test_batch_import_refuses_an_export_of_another_format(tmp_path: Path) -> None:
    """Answers to the exported requests of a run.json of another format are not imported into it."""
    run_dir, requests = tmp_path / "run", tmp_path / "requests.jsonl"
    args = ("--model", "openai/gpt-x", "--data", "demo", "--tasks", "ssp", "--ssp-target-emotion")
    exported = invoke(
        "batch", "export", *args, "--limit-samples", "1", "--out", str(requests), "--run", str(run_dir)
    )
    assert exported.exit_code == 0, exported.output
    rewrite(run_dir, format=1)
    (tmp_path / "empty.jsonl").write_text("")
    imported = invoke("batch", "import", str(tmp_path / "empty.jsonl"), "--run", str(run_dir), "-q")
    assert imported.exit_code == 2 and "format 1, written by" in imported.output, imported.output


def test_run_estimate_and_batch_export_take_the_same_flags() -> None:
    import typer

    from rescue_bench.cli.run_flags import all_flags

    root = typer.main.get_command(app)
    commands = [root.commands["run"], root.commands["estimate"], root.commands["batch"].commands["export"]]  # type: ignore[attr-defined]
    declared = {name for flag in all_flags() for decl in flag.decls for name in decl.split("/")}
    assert {"--rpp-current-turn", "--ssp-target-emotion", "--checkpoints-per-sample", "--model"} <= declared
    for command in commands:
        names = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
        assert declared | {"--spec", "--print-spec"} <= names, command.name
        assert "--install-completion" not in names


def test_judge_endpoint_flags_fill_in_only_the_judges_of_a_spec_that_name_none(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(
        'model = "baseline/random"\ndata = "demo"\n'
        '[[judges]]\nname = "vllm/j1"\nbase_url = "http://own:1/v1"\n'
        '[[judges]]\nname = "vllm/j2"\n'
    )
    flags = ("--judge-base-url", "http://flag:2/v1", "--judge-api-key-env", "JUDGE_KEY")
    printed = invoke("run", "--spec", str(spec), *flags, "--print-spec")
    assert printed.exit_code == 0, printed.output
    tables = tomllib.loads(printed.stdout)["judges"]
    assert [(j["name"], j["base_url"], j["api_key_env"]) for j in tables] == [
        ("vllm/j1", "http://own:1/v1", "JUDGE_KEY"),
        ("vllm/j2", "http://flag:2/v1", "JUDGE_KEY"),
    ]
    named = invoke("run", "--spec", str(spec), "--judge", "vllm/j3", *flags, "--print-spec")
    assert tomllib.loads(named.stdout)["judges"] == [{**tables[1], "name": "vllm/j3"}], (
        "--judge replaces the file's judges, and they take the flags' endpoint"
    )


def test_a_judge_endpoint_flag_beside_a_study_file_keeps_its_judges(tmp_path: Path) -> None:
    study = tmp_path / "study.toml"
    study.write_text('data = "demo"\n[[judges]]\nname = "vllm/j1"\n[[models]]\nname = "vllm/a"\n')
    printed = invoke("sweep", str(study), "--judge-base-url", "http://flag:2/v1", "--print-spec")
    assert printed.exit_code == 0, printed.output
    assert [j["name"] for j in tomllib.loads(printed.stdout)["judges"]] == ["vllm/j1"]
