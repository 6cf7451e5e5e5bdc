"""A study's configuration is checked for every model before any model is asked, and two sweeps of one study
directory never meet: the second is refused in one line and the first's record is left as it is."""

from __future__ import annotations

import json
from pathlib import Path

import huggingface_hub.constants
import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.study.lock import study_lock

RUNNER = CliRunner()


def sweep(*args: str) -> tuple[int, str]:
    result = RUNNER.invoke(app, ["sweep", "--quiet", *args], catch_exceptions=False)
    return result.exit_code, result.output


def study_file(tmp_path: Path, models: str, extra: str = "") -> Path:
    out = tmp_path / "study"
    path = tmp_path / "study.toml"
    path.write_text(f'data = "demo"\ntasks = ["itp"]\nlimit_samples = 1\nout = "{out}"\n{extra}\n{models}')
    return path


@pytest.mark.parametrize(
    ("models", "extra", "error"),
    [
        (
            '[[models]]\nname = "baseline/random"\n[[models]]\nname = "nosuch/model"\n',
            "",
            "error: unknown provider 'nosuch' in 'nosuch/model'; known providers: ",
        ),
        (
            '[[models]]\nname = "baseline/random"\n[[models]]\nname = "baseline/majority"\n'
            'base_url = "http://127.0.0.1:9/v1"\n',
            "",
            "error: --base-url and --api-key-env apply to OpenAI-compatible providers, not baseline/",
        ),
        (
            '[[models]]\nname = "baseline/random"\n',
            "batch = true",
            "error: --batch: baseline/random has no Batch API",
        ),
    ],
)
def test_every_model_is_checked_before_any_runs(tmp_path: Path, models: str, extra: str, error: str) -> None:
    code, output = sweep(str(study_file(tmp_path, models, extra)))
    assert code == 2 and output.startswith(error) and output.count("\n") == 1, output
    assert not (tmp_path / "study").exists()  # the good model did not run first


def test_a_second_sweep_of_a_study_in_use_is_refused(tmp_path: Path) -> None:
    path = study_file(
        tmp_path, '[[models]]\nname = "baseline/random"\n[[models]]\nname = "baseline/majority"\n'
    )
    out = tmp_path / "study"
    assert sweep(str(path))[0] == 0
    before = (out / "study.json").read_bytes()
    with study_lock(out):  # a sweep of this study is going on
        code, output = sweep(str(path))
    assert (
        code == 2
        and output == f"error: {out} is in use by another sweep; wait for it to end, or give another --out\n"
    )
    assert (out / "study.json").read_bytes() == before
    assert [r["status"] for r in json.loads(before)["runs"]] == ["finished", "finished"]
    assert sweep(str(path))[0] == 0  # the lock went with the sweep that held it


def test_a_warning_shared_by_every_run_is_said_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No BERTScore backbone here: each of the two ER runs leaves BERTScore out, and the study says why once.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    models = "".join(f'[[models]]\nname = "baseline/{m}"\n' for m in ("random", "majority"))
    path = study_file(tmp_path, models).read_text().replace('tasks = ["itp"]', 'tasks = ["er"]')
    (tmp_path / "study.toml").write_text(path)
    code, output = sweep(str(tmp_path / "study.toml"))
    assert code == 0, output
    assert output.count("BERTScore skipped") == 1, output
