"""Secrets in base URLs (a query key, ``user:password@``) of models and judges reach no file and no terminal.

One run (judged, the judge behind its own URL), one study, the reports of both, both exports and a batch
export go through the CLI against the fake server; then every file under the test's folder and the cache is
read and searched for each secret. A run directory written before ``run.json`` was scrubbed (its spec holding
the raw URL) must not pass the secrets on to a report or an export either.
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, schema_answer
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.redaction import credential_keys, public_url, scrub, url_secrets

KEY = "sk-URLTEST-KEY-0123456789"
MODEL_QUERY = "QUERY-SECRET-model-4815162342"
JUDGE_QUERY = "QUERY-SECRET-judge-2718281828"
PASSWORD = "PASSWORD-SECRET-31415926"
SECRETS = (KEY, MODEL_QUERY, JUDGE_QUERY, PASSWORD)
runner = CliRunner()


def cli(*args: str) -> str:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def contents(path: Path) -> bytes:
    """A file's bytes as a reader sees them: a zip (xlsx) by its members, Parquet by its rows."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            return b"".join(archive.read(name) for name in archive.namelist())
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return json.dumps(pq.read_table(path).to_pylist(), ensure_ascii=False).encode()
    return path.read_bytes()


def leaked(roots: list[Path]) -> list[str]:
    found = []
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                data = contents(path)
                found += [f"{path}: {s}" for s in SECRETS if s.encode() in data]
    return found


def study_file(tmp_path: Path, model_url: str, judge_url: str) -> Path:
    path = tmp_path / "study.toml"
    path.write_text(
        "\n".join(
            [
                'data = "demo"',
                'tasks = ["itp", "er"]',
                "limit_samples = 1",
                "bertscore = false",
                f'out = "{tmp_path / "study"}"',
                "[[judges]]",
                'name = "openai/fake-judge"',
                f'base_url = "{judge_url}"',
                'api_key_env = "URL_TEST_KEY"',
                "[[models]]",
                'name = "openai/fake"',
                f'base_url = "{model_url}"',
                'api_key_env = "URL_TEST_KEY"',
            ]
        )
        + "\n"
    )
    return path


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_no_secret_of_a_base_url_is_written_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyarrow", reason="the adapters extra is not installed")
    monkeypatch.setenv("URL_TEST_KEY", KEY)
    cache = Path(os.environ["RESCUE_BENCH_CACHE_DIR"])
    outputs = []
    with FakeOpenAIServer(schema_answer, require_key=KEY) as server:
        model_url = f"{server.base_url}?api-key={MODEL_QUERY}"
        judge_url = f"{server.base_url}?key={JUDGE_QUERY}"
        run = tmp_path / "run"
        model = ["--model", "openai/fake", "--base-url", model_url, "--api-key-env", "URL_TEST_KEY"]
        judge = ["--judge", "openai/fake-judge", "--judge-base-url", judge_url]
        judge += ["--judge-api-key-env", "URL_TEST_KEY", "--no-bertscore"]
        data = ["--data", "demo", "--tasks", "itp,er", "--limit-samples", "1", "--out", str(run)]
        outputs.append(cli("run", *model, *judge, *data))
        # The URLs were used as given: each query reached the server with the requests it was meant for.
        assert any(MODEL_QUERY in r.path for r in server.requests if r.model == "fake")
        assert any(JUDGE_QUERY in r.path for r in server.requests if r.model == "fake-judge")
        outputs.append(cli("sweep", str(study_file(tmp_path, model_url, judge_url)), "--quiet"))
    assert (run / "judgments.jsonl").stat().st_size > 0
    study = tmp_path / "study"
    assert json.loads((study / "study.json").read_text())["runs"][0]["status"] == "finished"

    # A run directory from before run.json was scrubbed: its spec and identity hold the raw URLs.
    old = tmp_path / "old"
    shutil.copytree(run, old)
    manifest = json.loads((old / "run.json").read_text())
    manifest["spec"]["model"]["base_url"] = f"http://ann:{PASSWORD}@example.org/v1?api-key={MODEL_QUERY}"
    manifest["spec"]["judges"][0]["base_url"] = f"https://gw.example.org/v1?key={JUDGE_QUERY}"
    (old / "run.json").write_text(json.dumps(manifest))

    written = tmp_path / "written"
    for name, source in (("run", run), ("study", study / "openai-fake"), ("old", old)):
        outputs.append(cli("report", str(source), "--out", str(written / f"report-{name}")))
        for fmt in ("eee", "hf"):
            folder = written / f"{fmt}-{name}"
            outputs.append(cli("export", str(source), "--format", fmt, "--out", str(folder)))
    assert {p.suffix for p in (written / "report-old").iterdir()} >= {".md", ".html", ".xlsx", ".csv"}
    # user:password@ is refused before anything is written (it would never be sent), without echoing it.
    url = f"https://ann:{PASSWORD}@example.org/v1?api-key={MODEL_QUERY}"
    files = ["--out", str(tmp_path / "batch.jsonl"), "--run", str(tmp_path / "batch-run")]
    data = ["--data", "demo", "--tasks", "itp", "--limit-samples", "1"]
    args = ["batch", "export", "--model", "openai/fake", "--base-url", url, *data, *files]
    refused = runner.invoke(app, args, catch_exceptions=False)
    assert refused.exit_code == 2 and "holds credentials" in refused.output
    assert not (tmp_path / "batch-run").exists() and not (tmp_path / "batch.jsonl").exists()
    outputs.append(refused.output)

    for text in outputs:
        assert not [s for s in SECRETS if s in text], text
    (old / "run.json").unlink()  # the two files the test itself wrote the secrets into
    (tmp_path / "study.toml").unlink()
    assert leaked([tmp_path, cache]) == []


def test_the_redaction_functions() -> None:
    url = f"https://ann:{PASSWORD}@example.org:8443/v1?api-key={MODEL_QUERY}&api-version=2024-06-01"
    assert public_url(url) == "https://example.org:8443/v1"
    assert set(url_secrets(url)) == {PASSWORD, MODEL_QUERY, "2024-06-01"}
    record = {"stop_reason": f"connection error at {url}.", "urls": [url, "http://h/v1"], url: 1}
    assert scrub(record) == {
        "stop_reason": "connection error at https://example.org:8443/v1",
        "urls": ["https://example.org:8443/v1", "http://h/v1"],
        "https://example.org:8443/v1": 1,
    }


def test_credential_looking_keys_are_redacted_by_every_writer_and_warned() -> None:
    """W40: a key put in ``extra_body`` is sent, but its value reaches no file: scrub (every writer's one
    function) redacts the values of credential-looking keys; counts such as ``max_tokens`` stay."""
    extra = {"api_key": "sk-LEAK", "hf_token": "hf-LEAK", "top_k": 2}
    counts = {"itp": {"max_tokens": 5, "prompt_tokens": 9}}
    record = {"generation": {"extra_body": extra}, "counts": counts, "Authorization": "Bearer x"}
    scrubbed = scrub(record)
    assert "LEAK" not in json.dumps(scrubbed) and scrubbed["Authorization"] == "[redacted]"
    assert scrubbed["counts"] == record["counts"] and scrubbed["generation"]["extra_body"]["top_k"] == 2
    assert credential_keys(record) == ["api_key", "hf_token", "Authorization"]


def test_a_key_in_extra_body_reaches_no_file_of_the_run(tmp_path: Path) -> None:
    secret = "sk-EXTRA-BODY-0123456789"
    out = tmp_path / "run"
    with FakeOpenAIServer(schema_answer) as fake:
        flags = ["--model", "vllm/m", "--data", "demo", "--tasks", "itp", "--limit-samples", "1"]
        flags += ["--no-cache", "--base-url", fake.base_url, "--extra-body", json.dumps({"api_key": secret})]
        result = CliRunner().invoke(app, ["run", *flags, "--out", str(out)])
        sent = [r.body.get("api_key") for r in fake.requests]
    assert result.exit_code == 0, result.output
    assert sent and all(value == secret for value in sent)  # it is sent
    assert "looks like a credential" in result.output and secret not in result.output
    report = CliRunner().invoke(app, ["report", str(out)])
    assert report.exit_code == 0, report.output
    leaked = [p for p in out.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert leaked == []


def test_print_spec_prints_no_base_url_secret() -> None:
    """W39: ``--print-spec`` shows the spec as every writer records it."""
    secret = "qk-PRINT-SPEC-0123456789"
    flags = ["--model", "vllm/m", "--base-url", f"http://h/v1?api-key={secret}"]
    result = CliRunner().invoke(
        app, ["run", *flags, "--extra-body", json.dumps({"token": secret}), "--print-spec"]
    )
    assert result.exit_code == 0, result.output
    assert secret not in result.output and "http://h/v1" in result.output
