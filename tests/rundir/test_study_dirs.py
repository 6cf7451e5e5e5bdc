"""A study directory opens as the run directories its study.json lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rescue_bench.errors import DataError
from rescue_bench.rundir import expand_run_dirs, is_study, study_members


def _study(folder: Path, runs: list[dict[str, object]]) -> Path:
    folder.mkdir(parents=True)
    (folder / "study.json").write_text(json.dumps({"format": 1, "spec": {}, "updated": "t", "runs": runs}))
    return folder


def _run_dir(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "predictions.jsonl").write_text("")
    return path


def test_a_study_expands_to_its_started_runs_in_study_order(tmp_path: Path) -> None:
    study = _study(
        tmp_path / "study",
        [
            {"model": "vllm/b", "dir": "vllm-b", "status": "finished"},
            {"model": "vllm/a", "perturbation": "name-swap", "dir": "vllm-a-swap", "status": "partial"},
            {"model": "vllm/c", "dir": "vllm-c", "status": "pending"},
        ],
    )
    _run_dir(study / "vllm-a-swap")
    _run_dir(study / "vllm-b")
    alone = _run_dir(tmp_path / "alone")
    assert is_study(study) and not is_study(alone)
    assert expand_run_dirs([alone, study]) == [alone, study / "vllm-b", study / "vllm-a-swap"]
    members = study_members(study)
    assert members is not None
    assert [(m.label, m.status) for m, _ in members] == [
        ("vllm/b", "finished"),
        ("vllm/a (name-swap)", "partial"),
        ("vllm/c", "pending"),
    ]
    assert study_members(alone) is None


def test_a_study_with_nothing_to_read_is_a_one_line_error(tmp_path: Path) -> None:
    study = _study(tmp_path / "study", [{"model": "vllm/a", "dir": "vllm-a"}])
    with pytest.raises(DataError, match=r"holds no run with predictions yet"):
        expand_run_dirs([study])


@pytest.mark.parametrize("where", ["../elsewhere", "/etc", ""])
def test_a_run_outside_the_study_is_refused(tmp_path: Path, where: str) -> None:
    study = _study(tmp_path / "study", [{"model": "vllm/a", "dir": where}])
    with pytest.raises(DataError, match=r"study\.json: run 'vllm/a': dir .* is not inside the study"):
        expand_run_dirs([study])


def test_a_broken_study_file_names_the_field(tmp_path: Path) -> None:
    study = _study(tmp_path / "study", [{"dir": "x"}])
    with pytest.raises(DataError, match=r"study\.json: runs\.0\.model: Field required"):
        expand_run_dirs([study])
