"""A ten-model study's rank groups (issue #39.1): through ``sweep`` on the fake server, a model that answers
nonsense stands in its own ITP F1 group, and the leaderboard files, ``compare`` and the viewer give the same
letters; on the six demo conversations the same study gives no groups and says why."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, schema_answer
from tests.study.helpers import leaderboard_csv, study_json
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.data.synth import write_synthetic
from rescue_bench.view.data import read_run
from rescue_bench.view.many import leaderboard, variant_results

RUNNER = CliRunner()
MODELS = [f"vllm/m{i}" for i in range(9)] + ["vllm/nonsense"]


def answer(request: ChatRequest) -> str:
    """``nonsense`` answers what no parser reads; model ``m<i>`` says yes to an item with probability
    1 - i / 20 (a hash of the item, so every run is reproducible): F1s from 0.67 down to 0.52."""
    if request.model.endswith("nonsense"):
        return "The weather is lovely today, thank you for asking."
    share = 1.0 - int(request.model.rsplit("m", 1)[1]) / 20
    answer = json.loads(schema_answer(request))
    for item in answer.get("predictions", []):
        digest = hashlib.sha256(f"{request.model}|{request.text}|{item['id']}".encode()).digest()
        item["should_speak"] = "yes" if digest[0] < 256 * share else "no"
    return json.dumps(answer)


def sweep_study(tmp_path: Path, data: str) -> tuple[Path, int, str]:
    out = tmp_path / "study"
    with FakeOpenAIServer(answer) as server:
        lines = [f'data = "{data}"', 'tasks = ["itp"]', f'out = "{out}"', "bertscore = false"]
        lines += ["[engine]", "concurrency = 8", "max_retries = 0"]
        for name in MODELS:
            lines += ["[[models]]", f'name = "{name}"', f'base_url = "{server.base_url}"']
        path = tmp_path / "study.toml"
        path.write_text("\n".join(lines) + "\n")
        result = RUNNER.invoke(app, ["sweep", str(path), "--quiet"])
    return out, result.exit_code, result.output


def itp_f1_groups(out: Path) -> dict[str, str]:
    rows = leaderboard_csv(out)
    return {
        r["model"]: r["group"]
        for r in rows
        if (r["task"], r["metric"]) == ("itp", "f1") and r["model"] in MODELS
    }


def test_a_model_answering_nonsense_is_in_its_own_itp_f1_group(tmp_path: Path) -> None:
    data = write_synthetic(tmp_path / "synthetic.jsonl", samples=16, seed=3).path
    out, code, output = sweep_study(tmp_path, str(data))
    assert code == 5, output  # the nonsense model's run is degraded; the others finished
    statuses = {r["model"]: r["status"] for r in study_json(out)["runs"]}
    assert statuses == {**dict.fromkeys(MODELS[:9], "finished"), "vllm/nonsense": "degraded"}
    groups = itp_f1_groups(out)
    alone = groups.pop("vllm/nonsense")
    assert alone and all(not set(alone) & set(g) for g in groups.values()), (alone, groups)

    # the same letters in the terminal's table, compare's matrix and the viewer's leaderboard
    assert "Rank groups" in output and "normal approximation" in " ".join(output.split())
    compared = RUNNER.invoke(app, ["compare", str(out), "--json"])
    assert compared.exit_code == 0, compared.output
    result = json.loads(compared.output)
    f1 = next(m for m in result["tasks"][0]["scopes"]["all"]["metrics"] if m["metric"] == "f1")
    dirs = {r["model"]: r["dir"] for r in study_json(out)["runs"]}
    views = [read_run(out / dirs[model], i) for i, model in enumerate(MODELS)]
    page = leaderboard(views, variant_results(views))
    column = page["headers"].index(("itp", "ITP F1"))
    shown = {MODELS[e.view.index]: e.scores[column].group for e in page["entries"]}
    assert shown == {**groups, "vllm/nonsense": alone} == dict(zip(MODELS, f1["groups"], strict=True))
    markdown = " ".join((out / "leaderboard.md").read_text().split())
    assert "45 pairs per metric, so a separation needs p below 0.0011" in markdown


def test_six_conversations_give_no_groups_and_say_so(tmp_path: Path) -> None:
    out, code, output = sweep_study(tmp_path, "demo")
    assert code == 5, output
    assert set(itp_f1_groups(out).values()) == {""}
    markdown = " ".join((out / "leaderboard.md").read_text().split())
    assert "No groups for" in markdown and "cannot give p below" in markdown, markdown
