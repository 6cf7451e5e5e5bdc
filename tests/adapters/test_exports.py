"""``export --format eee|hf`` and ``publish``: schema-valid records, Parquet details, a card; no network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.rundir import read_jsonl

jsonschema = pytest.importorskip("jsonschema")
pq = pytest.importorskip("pyarrow.parquet", reason="the adapters extra is not installed")
yaml = pytest.importorskip("yaml")

from rescue_bench.adapters.hf import publish  # noqa: E402

SCHEMAS = Path(__file__).parent / "schemas" / "eee"
runner = CliRunner()


def invoke(*args: str) -> Any:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("baseline") / "run"
    invoke("run", "--model", "baseline/random", "--data", "demo", "--tasks", "all", "--out", str(out), "-q")
    invoke("run", "--model", "baseline/random", "--data", "demo", "--tasks", "all", "--out", str(out), "-q")
    return out


def validator(name: str) -> Any:
    schema = json.loads((SCHEMAS / name).read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def test_eee_records_follow_the_published_schemas(run_dir: Path, tmp_path: Path) -> None:
    invoke("export", str(run_dir), "--format", "eee", "--out", str(tmp_path))
    (aggregate_path,) = tmp_path.glob("*.json")
    aggregate = json.loads(aggregate_path.read_text())
    validator("eval.schema.json").validate(aggregate)
    instances = [
        json.loads(line) for line in (tmp_path / f"{aggregate_path.stem}.jsonl").read_text().splitlines()
    ]
    check = validator("instance_level_eval.schema.json")
    for record in instances:
        check.validate(record)
    predictions = list(read_jsonl(run_dir / "predictions.jsonl"))
    assert len(instances) == len(predictions) == aggregate["detailed_evaluation_results"]["total_rows"]
    scores = json.loads((run_dir / "scores.json").read_text())
    by_name = {r["evaluation_name"]: r["score_details"]["score"] for r in aggregate["evaluation_results"]}
    assert by_name["rescue_bench.itp.all.f1"] == scores["itp"]["all"]["f1"]
    assert by_name["rescue_bench.stp.family.mrr"] == scores["stp"]["family"]["mrr"]
    assert "rescue_bench.er.all.s_emo" not in by_name  # never judged: left out, not exported as a number
    correct = [r["evaluation"]["is_correct"] for r in instances if r["evaluation_name"] == "rescue_bench.itp"]
    itp = [p for p in predictions if p["task"] == "itp"]
    assert sum(correct) == sum(p["scores"]["correct"] for p in itp)


def test_eee_fails_the_schema_when_a_required_field_is_missing(run_dir: Path, tmp_path: Path) -> None:
    # The validation above can fail: the schema is enforced, not merely loaded.
    invoke("export", str(run_dir), "--format", "eee", "--out", str(tmp_path))
    (aggregate_path,) = tmp_path.glob("*.json")
    aggregate = json.loads(aggregate_path.read_text())
    del aggregate["model_info"]
    assert not validator("eval.schema.json").is_valid(aggregate)


def test_hf_folder_has_results_parquet_details_and_a_card(run_dir: Path, tmp_path: Path) -> None:
    invoke("export", str(run_dir), "--format", "hf", "--out", str(tmp_path))
    (results_path,) = tmp_path.glob("results_*.json")
    results = json.loads(results_path.read_text())
    scores = json.loads((run_dir / "scores.json").read_text())
    assert results["results"]["rescue_bench|rpp|all"]["macro_f1"] == scores["rpp"]["all"]["macro_f1"]
    table = pq.read_table(tmp_path / "details" / "itp.parquet").to_pylist()
    predictions = [p for p in read_jsonl(run_dir / "predictions.jsonl") if p["task"] == "itp"]
    assert [r["instance_id"] for r in table] == [p["instance_id"] for p in predictions]
    replies = {r["request_key"]: r["reply"]["text"] for r in read_jsonl(run_dir / "requests.jsonl")}
    assert [r["reply"] for r in table] == [replies.get(p["request_key"]) for p in predictions]
    front = (tmp_path / "README.md").read_text().split("---\n")[1]
    meta = yaml.safe_load(front)
    assert {c["config_name"] for c in meta["configs"]} == {"itp", "rpp", "stp", "ssp", "er", "vp"}
    (entry,) = meta["model-index"]
    assert entry["name"] == "baseline/random"
    itp = next(r for r in entry["results"] if r["task"]["name"] == "ITP")
    assert {m["type"]: m["value"] for m in itp["metrics"]}["f1"] == scores["itp"]["all"]["f1"]


def test_hf_redact_leaves_out_replies_and_free_texts(run_dir: Path, tmp_path: Path) -> None:
    invoke("export", str(run_dir), "--format", "hf", "--out", str(tmp_path), "--redact")
    er = pq.read_table(tmp_path / "details" / "er.parquet")
    assert "reply" not in er.column_names
    rows = er.to_pylist()
    assert all(r["gold"] is None and r["prediction"] is None and r["problems"] == [] for r in rows)
    assert all(json.loads(r["scores"]) for r in rows)
    itp = pq.read_table(tmp_path / "details" / "itp.parquet").to_pylist()
    assert all(r["gold"] in ('"yes"', '"no"') for r in itp)


class FakeHub:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def create_repo(self, repo_id: str, **kwargs: Any) -> None:
        self.calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))

    def upload_folder(self, **kwargs: Any) -> Any:
        self.calls.append(("upload_folder", kwargs))
        return type("Commit", (), {"commit_url": "https://hub.example/commit/1"})()


def test_publish_creates_the_dataset_repo_and_uploads_the_folder(run_dir: Path, tmp_path: Path) -> None:
    invoke("export", str(run_dir), "--format", "hf", "--out", str(tmp_path))
    hub = FakeHub()
    url = publish(tmp_path, "org/results", hub, private=True)
    assert url == "https://hub.example/commit/1"
    assert hub.calls[0] == (
        "create_repo",
        {"repo_id": "org/results", "repo_type": "dataset", "private": True, "exist_ok": True},
    )
    name, upload = hub.calls[1]
    assert name == "upload_folder" and upload["folder_path"] == tmp_path and upload["repo_type"] == "dataset"


def test_publish_refuses_a_folder_that_was_not_exported(tmp_path: Path) -> None:
    result = runner.invoke(app, ["publish", str(tmp_path), "--repo", "org/x"])
    assert result.exit_code == 1 and "is not an exported folder" in result.output
