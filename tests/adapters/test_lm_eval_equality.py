"""lm-eval (``local-chat-completions``) gives the numbers of ``rescue-bench run`` on the same replies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.adapters.conftest import LIMIT, Served, run_cli

from rescue_bench.adapters.lm_eval import include_path

lm_eval = pytest.importorskip("lm_eval")

from lm_eval.tasks import TaskManager  # noqa: E402

pytestmark = pytest.mark.subprocess  # lm-eval's evaluator runs `pip list` for the environment it records

CLOSED = ("itp", "rpp", "stp", "ssp")


@pytest.fixture(scope="module")
def closed_dir(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("closed") / "run"
    run_cli(out, served.server.base_url, CLOSED)
    return out


@pytest.fixture(scope="module")
def closed_run(closed_dir: Path) -> dict[str, Any]:
    scores: dict[str, Any] = json.loads((closed_dir / "scores.json").read_text())
    return scores


@pytest.fixture(scope="module")
def lm_eval_results(served: Served) -> dict[str, Any]:
    served.handler.unknown.clear()
    manager = TaskManager(include_path=str(include_path()), metadata={"limit_samples": LIMIT})
    results: dict[str, Any] = lm_eval.simple_evaluate(
        model="local-chat-completions",
        model_args={
            "model": "fake",
            "base_url": f"{served.server.base_url}/chat/completions",
            "num_concurrent": 1,
            "max_retries": 1,
            "tokenized_requests": False,
            "tokenizer_backend": None,
        },
        tasks=[f"rescue_bench_{t}" for t in CLOSED],
        task_manager=manager,
        apply_chat_template=True,
        log_samples=True,
    )
    return results


@pytest.mark.parametrize("task", CLOSED)
def test_lm_eval_gives_the_run_numbers(
    task: str, lm_eval_results: dict[str, Any], closed_run: dict[str, Any], served: Served
) -> None:
    assert served.handler.unknown == []  # every prompt lm-eval sent was one of ours, byte for byte
    got = lm_eval_results["results"][f"rescue_bench_{task}"]
    want = {f"{m}_{scope}": e[m] for scope, e in closed_run[task].items() for m in e["ci"]}
    assert {"all", "couple", "family"} <= set(closed_run[task]), "both scenarios must be measured"
    assert {name: got[f"{name},none"] for name in want} == want


@pytest.mark.parametrize("task", CLOSED)
def test_lm_eval_gives_the_run_standard_errors_and_one_copy_of_each_record(
    task: str, lm_eval_results: dict[str, Any], closed_dir: Path
) -> None:
    from rescue_bench.adapters.plan import corpus_errors
    from rescue_bench.rundir import load_run
    from rescue_bench.tasks import get_task

    got = lm_eval_results["results"][f"rescue_bench_{task}"]
    records = [p for p in load_run(closed_dir).prediction_lines if p.task == task]
    errors = {
        f"{metric}_{scope}": value
        for key, value in corpus_errors(get_task(task), records).items()
        for scope, _, metric in [key.partition("_")]
    }
    assert errors and all(isinstance(v, float) and v > 0 for v in errors.values())
    assert {name: got[f"{name}_stderr,none"] for name in errors} == errors
    assert got["instances,none"] == len(records)
    json.dumps(lm_eval_results["results"], allow_nan=False)  # strict JSON: no NaN anywhere
    for sample in lm_eval_results["samples"][f"rescue_bench_{task}"]:
        text = json.dumps(sample)
        ids = [r["instance_id"] for r in sample["instances"]]
        assert ids and all(text.count(f'"{i}"') == 1 for i in ids)  # each record once, not once per metric


def test_a_scope_without_instances_is_null_and_its_error_is_not_available() -> None:
    import importlib.util

    from rescue_bench.adapters.lm_eval import include_path

    spec = importlib.util.spec_from_file_location("rb_utils", include_path() / "rescue_bench" / "utils.py")
    assert spec is not None and spec.loader is not None
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    doc = utils.itp_dataset(limit_samples=1)["test"][0]  # the first demo conversation: a couple
    result = utils.process_results(doc, ['{"answers": []}'])
    refs = [result["f1_family"]]
    assert utils.f1_family(refs) is None and utils.f1_family_stderr(refs) == "N/A"
    assert utils.f1_all_stderr(refs) == "N/A"  # one conversation: no spread to measure
    assert isinstance(utils.f1_all(refs), float)
    assert json.dumps({"f1_family": utils.f1_family(refs)}, allow_nan=False) == '{"f1_family": null}'
