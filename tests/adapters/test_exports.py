"""``export --format eee|hf`` and ``publish``: schema-valid records, Parquet details, a card; no network."""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, schema_answer
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.rundir import RunDirError, read_jsonl

jsonschema = pytest.importorskip("jsonschema")
pq = pytest.importorskip("pyarrow.parquet", reason="the adapters extra is not installed")
yaml = pytest.importorskip("yaml")

from huggingface_hub import CommitOperationAdd, HfApi  # noqa: E402

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
    meta = front_matter(tmp_path / "README.md")
    assert {c["config_name"] for c in meta["configs"]} == {"itp", "rpp", "stp", "ssp", "er", "vp"}


def front_matter(card: Path) -> dict[str, Any]:
    return dict(yaml.safe_load(card.read_text().split("---\n")[1]))


def official_copy(run_dir: Path, tmp_path: Path, data: str = "hf", **config: Any) -> Path:
    """The run as if made on the official release (``--data hf``): what the exports read of its data."""
    copy = tmp_path / "official"
    shutil.copytree(run_dir, copy)
    manifest = json.loads((copy / "run.json").read_text())
    manifest["selection"]["data"] = manifest["dataset"]["source"] = data
    manifest["config"].update(config)
    (copy / "run.json").write_text(json.dumps(manifest))
    return copy


def test_a_demo_run_never_names_the_release_as_its_dataset(run_dir: Path, tmp_path: Path) -> None:
    invoke("export", str(run_dir), "--format", "hf", "--out", str(tmp_path / "hf"))
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "model-index" not in front_matter(tmp_path / "hf" / "README.md")
    assert "tomhu/relation_therapy" not in card and "fictional demo data" in card
    (results,) = (tmp_path / "hf").glob("results_*.json")
    used = json.loads(results.read_text())["config_general"]["data_used"]
    assert used["official_release"] is False and "fictional demo data" in used["description"]
    invoke("export", str(run_dir), "--format", "eee", "--out", str(tmp_path / "eee"))
    (aggregate_path,) = (tmp_path / "eee").glob("*.json")
    sources = [r["source_data"] for r in json.loads(aggregate_path.read_text())["evaluation_results"]]
    assert all(s["source_type"] == "other" and "hf_repo" not in s for s in sources)
    assert all("fictional demo data" in s["dataset_name"] for s in sources)


def test_a_run_on_the_whole_release_gets_its_model_index(run_dir: Path, tmp_path: Path) -> None:
    official = official_copy(run_dir, tmp_path)
    invoke("export", str(official), "--format", "hf", "--out", str(tmp_path / "hf"))
    (entry,) = front_matter(tmp_path / "hf" / "README.md")["model-index"]
    assert entry["name"] == "baseline/random"
    itp = next(r for r in entry["results"] if r["task"]["name"] == "ITP")
    assert itp["dataset"]["type"] == "tomhu/relation_therapy"
    scores = json.loads((run_dir / "scores.json").read_text())
    assert {m["type"]: m["value"] for m in itp["metrics"]}["f1"] == scores["itp"]["all"]["f1"]
    invoke("export", str(official), "--format", "eee", "--out", str(tmp_path / "eee"))
    (aggregate_path,) = (tmp_path / "eee").glob("*.json")
    first = json.loads(aggregate_path.read_text())["evaluation_results"][0]["source_data"]
    assert first["hf_repo"] == "tomhu/relation_therapy" and first["source_type"] == "hf_dataset"
    # A subset of the release is not a result on it.
    subset = official_copy(run_dir, tmp_path / "subset", limit_samples=2)
    invoke("export", str(subset), "--format", "hf", "--out", str(tmp_path / "hf-subset"))
    assert "model-index" not in front_matter(tmp_path / "hf-subset" / "README.md")


def test_a_run_on_the_release_from_data_get_is_the_official_release(run_dir: Path, tmp_path: Path) -> None:
    official = official_copy(run_dir, tmp_path, data="rescue")
    invoke("export", str(official), "--format", "eee", "--out", str(tmp_path / "eee"))
    (aggregate_path,) = (tmp_path / "eee").glob("*.json")
    aggregate = json.loads(aggregate_path.read_text())
    first = aggregate["evaluation_results"][0]["source_data"]
    assert first["source_type"] == "url" and first["url"][0].endswith("/data/benchmark_191.jsonl")
    validator("eval.schema.json").validate(aggregate)
    invoke("export", str(official), "--format", "hf", "--out", str(tmp_path / "hf"))
    (entry,) = front_matter(tmp_path / "hf" / "README.md")["model-index"]
    assert entry["results"][0]["dataset"]["type"] == "tomhu/relation_therapy"


def test_hf_redact_leaves_out_replies_and_free_texts(run_dir: Path, tmp_path: Path) -> None:
    invoke("export", str(run_dir), "--format", "hf", "--out", str(tmp_path), "--redact")
    er = pq.read_table(tmp_path / "details" / "er.parquet")
    assert "reply" not in er.column_names
    rows = er.to_pylist()
    assert all(r["gold"] is None and r["prediction"] is None and r["problems"] == [] for r in rows)
    assert all(json.loads(r["scores"]) for r in rows)
    itp = pq.read_table(tmp_path / "details" / "itp.parquet").to_pylist()
    assert all(r["gold"] in ('"yes"', '"no"') for r in itp)


class HubCalls:
    """``huggingface_hub.HfApi``'s repository and commit calls, intercepted: what would go to the Hub."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.repos: list[dict[str, Any]] = []
        self.uploaded: dict[str, bytes] = {}
        monkeypatch.setattr(HfApi, "create_repo", self.create_repo)
        monkeypatch.setattr(HfApi, "create_commit", self.create_commit)
        monkeypatch.setattr(HfApi, "preupload_lfs_files", self.refuse)

    def create_repo(self, repo_id: str, **kwargs: Any) -> Any:
        self.repos.append({"repo_id": repo_id, **kwargs})
        return f"https://hub.example/datasets/{repo_id}"

    def create_commit(self, repo_id: str, operations: Any, **kwargs: Any) -> Any:
        assert kwargs["repo_type"] == "dataset"
        for op in operations:
            assert isinstance(op, CommitOperationAdd)
            content = op.path_or_fileobj
            data = content if isinstance(content, bytes) else Path(str(content)).read_bytes()
            self.uploaded[op.path_in_repo] = data
        return type("Commit", (), {"commit_url": "https://hub.example/commit/1"})()

    def refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no network in tests")


def publish_cli(folder: Path) -> Any:
    return runner.invoke(app, ["publish", str(folder), "--repo", "org/results", "--private"])


def test_publish_uploads_exactly_the_files_the_export_wrote(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = HubCalls(monkeypatch)
    folder = tmp_path / "hf"
    invoke("export", str(run_dir), "--format", "hf", "--out", str(folder))
    written = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    (folder / ".env").write_text("HF_TOKEN=hf_secret_token_123\n")
    (folder / "notes.txt").write_text("mine\n")
    (folder / "details" / "extra.parquet").write_bytes(b"not the export's")
    result = publish_cli(folder)
    assert result.exit_code == 0, result.output
    assert "https://hub.example/commit/1" in result.output
    assert hub.repos == [
        {"repo_id": "org/results", "repo_type": "dataset", "private": True, "exist_ok": True}
    ]
    assert set(hub.uploaded) == written - {".rescue-bench-export"}
    assert all(hub.uploaded[name] == (folder / name).read_bytes() for name in hub.uploaded)
    assert not any(b"hf_secret_token_123" in data for data in hub.uploaded.values())


def test_publish_refuses_a_changed_export_and_a_folder_that_was_not_exported(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = HubCalls(monkeypatch)
    result = publish_cli(tmp_path)
    assert result.exit_code == 1 and "is not a folder written by `rescue-bench export" in result.output
    folder = tmp_path / "hf"
    invoke("export", str(run_dir), "--format", "hf", "--out", str(folder))
    (folder / "README.md").write_text("edited after the export\n")
    result = publish_cli(folder)
    assert result.exit_code == 1 and "README.md changed after the export" in result.output
    assert len(result.output.strip().splitlines()) == 1 and hub.repos == [] and hub.uploaded == {}


@pytest.mark.parametrize("fmt", ["eee", "hf"])
def test_an_export_never_writes_into_a_folder_holding_other_files(
    run_dir: Path, tmp_path: Path, fmt: str
) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / ".env").write_text("KEY=value\n")
    (folder / "empty").mkdir()
    before = sorted(p.name for p in folder.iterdir())
    result = runner.invoke(app, ["export", str(run_dir), "--format", fmt, "--out", str(folder)])
    assert result.exit_code == 2 and "files this tool did not write ('.env')" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert sorted(p.name for p in folder.iterdir()) == before
    result = runner.invoke(app, ["export", str(run_dir), "--format", fmt, "--out", str(run_dir)])
    assert result.exit_code == 2 and "give a new or empty folder" in result.output


def test_an_export_replaces_only_an_earlier_export_of_its_own(run_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "out"
    invoke("export", str(run_dir), "--format", "hf", "--out", str(folder))
    other = tmp_path / "other"
    invoke(
        "run", "--model", "baseline/majority", "--data", "demo", "--tasks", "itp", "--out", str(other), "-q"
    )
    invoke("export", str(other), "--format", "hf", "--out", str(folder))
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert files == sorted(
        [
            ".rescue-bench-export",
            "README.md",
            "details/itp.parquet",
            *(p.name for p in folder.glob("results_*")),
        ]
    )
    assert (
        len(list(folder.glob("results_*.json"))) == 1
        and "baseline/majority" in (folder / "README.md").read_text()
    )
    invoke(
        "export", str(other), "--format", "eee", "--out", str(folder)
    )  # another format of its own: replaced
    assert not (folder / "details").exists() and len(list(folder.glob("*.jsonl"))) == 1
    (folder / "added.txt").write_text("a user's file\n")
    result = runner.invoke(app, ["export", str(other), "--format", "hf", "--out", str(folder)])
    assert result.exit_code == 2 and "an earlier export and other files ('added.txt')" in result.output


@pytest.fixture(scope="module")
def answered_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of ER, VP and ITP whose replies are text a fake endpoint wrote (a baseline has none)."""
    out = tmp_path_factory.mktemp("answered") / "run"
    with FakeOpenAIServer(schema_answer) as server:
        invoke(
            "run", "--model", "vllm/fake", "--base-url", server.base_url, "--data", "demo",
            "--tasks", "itp,er,vp", "--limit-samples", "1", "--out", str(out), "--no-cache", "-q",
        )  # fmt: skip
    return out


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def exported_text(folder: Path) -> str:
    """Every file of an export as text (Parquet tables as their rows)."""
    parts = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.suffix == ".parquet":
            parts.append(json.dumps(pq.read_table(path).to_pylist(), ensure_ascii=False))
        else:
            parts.append(path.read_text(encoding="utf-8"))
    return "\n".join(parts)


@pytest.mark.parametrize("fmt", ["eee", "hf"])
def test_redact_leaves_out_replies_and_free_texts_in_every_format(
    answered_run: Path, tmp_path: Path, fmt: str
) -> None:
    replies = [r["reply"]["text"] for r in read_jsonl(answered_run / "requests.jsonl")]
    free = [p for p in read_jsonl(answered_run / "predictions.jsonl") if p["task"] in ("er", "vp")]
    texts = [s for p in free for s in strings([p["gold"], p["prediction"]]) if len(s) >= 12]
    assert replies and texts
    invoke("export", str(answered_run), "--format", fmt, "--out", str(tmp_path / "plain"))
    plain = exported_text(tmp_path / "plain")
    assert any(json.dumps(t)[1:-1] in plain or t in plain for t in texts)  # the check below can fail
    invoke("export", str(answered_run), "--format", fmt, "--out", str(tmp_path / "redacted"), "--redact")
    redacted = exported_text(tmp_path / "redacted")
    for text in [*texts, *(r for r in replies if r)]:
        assert text not in redacted and json.dumps(text)[1:-1] not in redacted, text[:60]


def test_an_export_that_failed_midway_is_replaced_and_never_published(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rescue_bench.adapters import hf

    hub = HubCalls(monkeypatch)
    folder = tmp_path / "hf"
    with monkeypatch.context() as broken:
        full = OSError(errno.ENOSPC, "No space left on device")
        broken.setattr(hf, "card", lambda *a, **k: (_ for _ in ()).throw(full))
        with pytest.raises(RunDirError, match=r"cannot write \(No space left on device\).*free some space"):
            hf.export_hf(run_dir, folder)  # W42: one line with the advice, not a traceback
    assert (folder / "details" / "itp.parquet").is_file() and not (folder / "README.md").exists()
    result = publish_cli(folder)
    assert result.exit_code == 1 and "did not finish" in result.output and hub.uploaded == {}
    invoke("export", str(run_dir), "--format", "hf", "--out", str(folder))
    assert publish_cli(folder).exit_code == 0 and "README.md" in hub.uploaded


def test_the_hub_card_states_what_a_reader_needs_to_check_the_numbers(run_dir: Path, tmp_path: Path) -> None:
    invoke("export", str(run_dir), "--format", "hf", "--out", str(tmp_path))
    card = (tmp_path / "README.md").read_text()
    manifest = json.loads((run_dir / "run.json").read_text())
    scores = json.loads((run_dir / "scores.json").read_text())
    assert "| Task | Scope | n | Metric | Value | 95% CI |" in card
    itp = scores["itp"]["all"]
    low, high = itp["ci"]["f1"]
    assert f"| ITP | all | {itp['n']} | f1 | {itp['f1']:.4f} | [{low:.4f}, {high:.4f}] |" in card
    assert "- Judge: not judged" in card and "- BERTScore backbone: none" in card
    assert f"- Protocol version: {manifest['config']['protocol']}" in card
    assert f"- Data SHA-256: {manifest['dataset']['hash']}" in card and "- Data source: demo" in card
    assert (
        "## Licence" in card and "research-only" in card and front_matter(tmp_path / "README.md")["license"]
    )
    # The citation is CITATION.cff's preferred one.
    cff = yaml.safe_load((Path(__file__).resolve().parents[2] / "CITATION.cff").read_text())
    cited = cff["preferred-citation"]
    assert cited["title"].split(":")[1].strip() in card
    assert all(f"{a['family-names']}, {a['given-names']}" in card for a in cited["authors"])


def test_no_export_or_heading_carries_the_local_data_path(run_dir: Path, tmp_path: Path) -> None:
    from rescue_bench.report import measured
    from rescue_bench.rundir import load_run

    where = "/home/ana/private/release.jsonl"
    copy = official_copy(run_dir, tmp_path, data=where)
    for fmt in ("hf", "eee"):
        invoke("export", str(copy), "--format", fmt, "--out", str(tmp_path / fmt))
        for path in (tmp_path / fmt).rglob("*.json*"):
            assert "/home/ana" not in path.read_text(), path
        assert "/home/ana" not in "".join(p.read_text() for p in (tmp_path / fmt).rglob("*.md"))
    (results,) = (tmp_path / "hf").glob("results_*.json")
    dataset = json.loads(results.read_text())["config_general"]["dataset"]
    assert dataset["source"] == "release.jsonl" and len(dataset["hash"]) == 64
    heading = measured.heading([load_run(copy)])
    assert "/home/ana" not in heading and f"release.jsonl (sha256 {dataset['hash'][:12]})" in heading
    # The report's configuration tables, which list what run.json records, name the file only too.
    invoke("report", str(copy), "--out", str(tmp_path / "report"))
    shared = "".join(p.read_text() for p in (tmp_path / "report").rglob("*") if p.suffix in (".md", ".html"))
    assert "release.jsonl" in shared and "/home/ana" not in shared


def test_an_export_of_a_degraded_run_is_marked_degraded(tmp_path: Path) -> None:
    """W32: a run whose answers mostly failed is exported marked DEGRADED, with its counts, in both formats,
    and claims no model-index."""
    out = tmp_path / "run"
    with FakeOpenAIServer(lambda _: {}) as fake:  # every reply fails to parse
        flags = [
            "--model",
            "vllm/m",
            "--data",
            "demo",
            "--tasks",
            "itp",
            "--limit-samples",
            "1",
            "--no-cache",
        ]
        made = runner.invoke(app, ["run", *flags, "-q", "--base-url", fake.base_url, "--out", str(out)])
    assert made.exit_code == 5, made.output
    invoke("export", str(out), "--format", "hf", "--out", str(tmp_path / "hf"))
    results = json.loads(next((tmp_path / "hf").glob("results_*.json")).read_text())
    assert results["config_general"]["completeness"]["mark"] == "DEGRADED"
    assert "**DEGRADED (status degraded): itp " in (tmp_path / "hf" / "README.md").read_text()
    invoke("export", str(out), "--format", "eee", "--out", str(tmp_path / "eee"))
    record = json.loads(next(p for p in (tmp_path / "eee").glob("*.json")).read_text())
    details = [r["metric_config"]["additional_details"] for r in record["evaluation_results"]]
    assert details and all(d["completeness"].startswith("DEGRADED (status degraded)") for d in details)
