"""lm-eval (``local-chat-completions``) gives the numbers of ``rescue-bench run`` on the same replies."""

from __future__ import annotations

from typing import Any

import pytest
from tests.adapters.conftest import LIMIT, Served, run_cli

from rescue_bench.adapters.lm_eval import include_path

lm_eval = pytest.importorskip("lm_eval")

from lm_eval.tasks import TaskManager  # noqa: E402

CLOSED = ("itp", "rpp", "stp", "ssp")


@pytest.fixture(scope="module")
def closed_run(served: Served, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_cli(tmp_path_factory.mktemp("closed") / "run", served.server.base_url, CLOSED)


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
        log_samples=False,
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
