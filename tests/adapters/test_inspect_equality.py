"""inspect_ai gives the numbers of ``rescue-bench run`` on the same replies, to the last digit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

inspect_ai = pytest.importorskip("inspect_ai")

from inspect_ai.log import EvalLog  # noqa: E402
from inspect_ai.model import get_model  # noqa: E402
from tests.adapters.conftest import ALL, LIMIT, Served  # noqa: E402

from rescue_bench.adapters.inspect import tasks as inspect_tasks  # noqa: E402
from rescue_bench.adapters.plan import TaskArgs, plan  # noqa: E402

pytestmark = pytest.mark.slow  # inspect_ai's own eval of every task: seconds per module


def inspect_logs(served: Served, log_dir: Path, names: tuple[str, ...]) -> list[EvalLog]:
    base = served.server.base_url
    grader = get_model("openai/judge", base_url=base, api_key="sk-fake", responses_api=False)
    logs = inspect_ai.eval(
        [inspect_tasks.FACTORIES[name](limit_samples=LIMIT) for name in names],
        model="openai/fake",
        model_base_url=base,
        model_args={"api_key": "sk-fake", "responses_api": False},
        model_roles={"grader": grader},
        log_dir=str(log_dir),
        display="none",
        max_retries=1,
        timeout=30,
    )
    assert all(log.status == "success" for log in logs), [log.error for log in logs]
    return list(logs)


@pytest.fixture(scope="module")
def logs(served: Served, tmp_path_factory: pytest.TempPathFactory) -> list[EvalLog]:
    return inspect_logs(served, tmp_path_factory.mktemp("logs"), ALL)


def metrics_of(log: EvalLog) -> dict[str, float]:
    assert log.results is not None
    (score,) = log.results.scores
    return {name: m.value for name, m in score.metrics.items()}


def expected(scores: dict[str, Any], task: str) -> dict[str, float]:
    out = {}
    for scope, entry in scores[task].items():
        for name, ci in entry["ci"].items():
            if entry[name] is not None and ci is not None:
                out[f"{scope}_{name}"] = entry[name]
    return out


@pytest.mark.parametrize("task", ALL)
def test_inspect_gives_the_run_numbers(task: str, logs: list[EvalLog], run_scores: dict[str, Any]) -> None:
    log = next(lg for lg in logs if lg.eval.task.endswith(task))
    assert {"all", "couple", "family"} <= set(run_scores[task]), "both scenarios must be measured"
    want = expected(run_scores, task)
    assert metrics_of(log) == want


@pytest.mark.parametrize("task", ALL)
def test_the_headline_metric_pools_both_scenarios(task: str, logs: list[EvalLog]) -> None:
    # inspect shows a score's first metric as its headline (the log list): the pooled one, as in the paper.
    log = next(lg for lg in logs if lg.eval.task.endswith(task))
    first = next(iter(metrics_of(log)))
    assert first.startswith("all_"), list(metrics_of(log))


def test_replies_were_mixed_and_every_prompt_was_ours(
    served: Served, logs: list[EvalLog], run_scores: dict[str, Any]
) -> None:
    # The equality above means something only if the replies held failures, misses and hits alike.
    assert served.handler.unknown == []
    entries = [run_scores[task]["all"] for task in ALL]
    assert sum(e["parse_failures"] for e in entries) > 0 and sum(e["invalid_labels"] for e in entries) > 0
    assert 0 < run_scores["itp"]["all"]["f1"] < 1 and 0 < run_scores["stp"]["all"]["mrr"] < 1
    assert run_scores["er"]["all"]["s_emo"] is not None  # judged, not floors only


def test_one_sample_per_request_batch_with_our_prompts(logs: list[EvalLog]) -> None:
    log = next(lg for lg in logs if lg.eval.task.endswith("ssp"))
    ours = plan(TaskArgs("ssp", limit_samples=LIMIT)).requests
    assert log.samples is not None and len(log.samples) == len(ours)
    for sample, request in zip(log.samples, ours, strict=True):
        sent = [m.content for m in sample.input] if isinstance(sample.input, list) else [sample.input]
        assert sent == [m["content"] for m in request.messages]


def test_the_tasks_are_registered_under_the_package_name() -> None:
    from inspect_ai._util.registry import registry_info

    assert registry_info(inspect_tasks.FACTORIES["itp"]).name == "rescue_bench/itp"


def test_an_imported_log_is_the_run_directory_of_the_same_replies(
    logs: list[EvalLog], run_scores: dict[str, Any], tmp_path: Path
) -> None:
    from rescue_bench.adapters.inspect.logs import import_logs
    from rescue_bench.rundir import load_run

    out = tmp_path / "imported"
    scores = import_logs([Path(log.location) for log in logs], out)
    # Same records, same seed, same bootstrap: the CIs agree as well as the point values.
    for task in ALL:
        assert scores[task] == run_scores[task], task
    data = load_run(out)
    assert data.name == "openai/fake" and set(data.tasks) == set(ALL)
    assert data.run["judges"] == ["openai/judge"]
    assert data.manifest.format == 2 and data.manifest.spec is not None


def test_score_and_view_read_an_imported_run(logs: list[EvalLog], tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from rescue_bench.adapters.inspect.logs import import_logs
    from rescue_bench.cli.main import app
    from rescue_bench.rundir import load_run
    from rescue_bench.view.data import read_source

    out = tmp_path / "imported"
    imported = import_logs([Path(log.location) for log in logs], out)
    score = CliRunner().invoke(app, ["score", str(out), "--bertscore-model", "none"], catch_exceptions=False)
    assert score.exit_code == 0, score.output
    rescored = json.loads((out / "scores.json").read_text())
    assert {task: rescored[task] for task in ALL} == {task: imported[task] for task in ALL}
    # The viewer rebuilds instances from the recorded spec: the data and the settings must read back.
    source = read_source(load_run(out).manifest, out)
    assert source.problem is None and len(source.samples) == LIMIT


def test_import_inspect_cli_then_report_and_compare(logs: list[EvalLog], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from rescue_bench.cli.main import app

    runner = CliRunner()
    out = tmp_path / "imported"
    args = ["import", "inspect", *(str(Path(log.location)) for log in logs[:2]), "--out", str(out)]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0 and f"run directory: {out}" in result.output, result.output
    report = runner.invoke(
        app, ["report", str(out), "--out", str(tmp_path / "report")], catch_exceptions=False
    )
    assert report.exit_code == 0, report.output
    assert "ITP" in (tmp_path / "report" / "report.md").read_text()
    compare = runner.invoke(app, ["compare", str(out), str(out)], catch_exceptions=False)
    assert compare.exit_code == 0, compare.output
    again = runner.invoke(app, args)
    assert again.exit_code == 2 and "already holds a run" in again.output


def test_import_refuses_a_log_of_another_task(tmp_path: Path) -> None:
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.log import write_eval_log

    from rescue_bench.adapters.inspect.logs import import_logs
    from rescue_bench.errors import DataError

    (log,) = inspect_ai.eval(Task(dataset=[Sample(input="hi")], name="other"), model="mockllm/model",
                             log_dir=str(tmp_path), display="none")  # fmt: skip
    path = tmp_path / "other.eval"
    write_eval_log(log, str(path))
    with pytest.raises(DataError, match="is not a RESCUE-Bench task"):
        import_logs([path], tmp_path / "run")


def test_a_sample_without_a_score_is_unanswered_work_not_a_miss(
    logs: list[EvalLog], run_scores: dict[str, Any], tmp_path: Path
) -> None:
    """An errored sample is recorded (request_failed) and kept out of the metrics: their n is over the
    answered instances, and the unanswered ones are counted beside it, never scored as misses."""
    from inspect_ai.log import write_eval_log

    from rescue_bench.adapters.inspect.logs import import_logs
    from rescue_bench.rundir import load_run

    log = next(lg for lg in logs if lg.eval.task.endswith("stp")).model_copy(deep=True)
    assert log.samples is not None
    dropped = log.samples.pop(1)  # as if it had errored: inspect leaves an errored sample unscored
    path = tmp_path / "stp.eval"
    write_eval_log(log, str(path))
    scores = import_logs([path], tmp_path / "run")
    predictions = load_run(tmp_path / "run").predictions
    failed = [p for p in predictions if p["request_key"] == dropped.id]
    assert failed and all(p["problems"][0].startswith("request_failed") for p in failed)
    assert scores["stp"]["all"]["n"] == run_scores["stp"]["all"]["n"] - len(failed)
    assert scores["stp"]["all"]["unanswered"] == len(failed)
    assert [p["request_key"] for p in predictions] == sorted(p["request_key"] for p in predictions)


def test_a_log_with_settings_of_another_shape_is_refused_naming_the_setting(
    logs: list[EvalLog], tmp_path: Path
) -> None:
    from inspect_ai.log import write_eval_log

    from rescue_bench.adapters.inspect.logs import import_logs
    from rescue_bench.errors import DataError

    log = next(lg for lg in logs if lg.eval.task.endswith("rpp")).model_copy(deep=True)
    flat = {"task": "rpp", "data": "demo", "limit_samples": LIMIT, "rpp_gold_field": "auto"}
    log.eval.metadata = {"rescue_bench": {"task_args": flat, "temperature": 0.0, "seed": None}}
    path = tmp_path / "rpp.eval"
    write_eval_log(log, str(path))
    with pytest.raises(DataError, match="unknown setting 'rpp_gold_field' of task rpp"):
        import_logs([path], tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_each_sample_shows_its_instances_scores_as_the_run_has_them(
    logs: list[EvalLog], served_run: Path, tmp_path: Path
) -> None:
    from rescue_bench.adapters.inspect.logs import import_logs
    from rescue_bench.adapters.inspect.scoring import item_means
    from rescue_bench.judge.merge import judged_lines
    from rescue_bench.rundir import load_run

    run = load_run(served_run)
    by_id = {r.instance_id: r for r in judged_lines(run.prediction_lines, run.judgment_lines)}
    for log in logs:
        assert log.samples is not None
        for sample in log.samples:
            ids = sample.metadata["instance_ids"]
            (score,) = (sample.scores or {}).values()
            # The sample's score is the mean of each per-instance score over the run's own records.
            assert score.value == item_means([by_id[i] for i in ids]), sample.id
            lines = (score.explanation or "").splitlines()
            assert [line.split("`")[1] for line in lines] == ids
            assert [t.partition(": ")[0] for t in sample.target] == ids  # the gold of each instance
    imported = tmp_path / "imported"
    import_logs([Path(log.location) for log in logs], imported)
    again = load_run(imported)
    per_item = {r.instance_id: r.scores for r in judged_lines(again.prediction_lines, again.judgment_lines)}
    assert per_item == {i: r.scores for i, r in by_id.items()}
