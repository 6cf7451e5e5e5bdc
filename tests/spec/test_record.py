"""Batch sizes of task plans: the reference sizes, ``--batch-size``, and the prompt-prefix exception."""

from __future__ import annotations

import pytest

from rescue_bench.data.load import load_samples
from rescue_bench.engine.plans import build_plans, select_samples
from rescue_bench.models.base import Capabilities
from rescue_bench.models.baselines import make_baseline
from rescue_bench.spec import RunSpec
from rescue_bench.spec.record import build_manifest
from rescue_bench.tasks import TASKS

REMOTE = Capabilities()
IN_PROCESS = Capabilities(has_endpoint=False, batch_export=False, reuses_prompt_prefix=True)
"""What the local model declares (``LocalProvider.capabilities``), without loading it."""

REFERENCE = {"itp": 4, "rpp": 3, "stp": 3, "ssp": 3, "er": 5, "vp": 5}


def sizes(config: RunSpec, capabilities: Capabilities = REMOTE) -> dict[str, tuple[int | None, int]]:
    """Task -> (configured batch size, largest batch actually built)."""
    plans = build_plans(select_samples(load_samples("demo"), config), config, capabilities=capabilities)
    return {p.name: (p.cfg.batch_size, max(len(b) for b in p.batches)) for p in plans}


@pytest.mark.parametrize("model", ["openai/gpt-4o", "deepseek/deepseek-chat", "baseline/random"])
def test_remote_models_and_baselines_get_the_reference_batch_sizes(model: str) -> None:
    capabilities = make_baseline("random", 0).capabilities if model.startswith("baseline/") else REMOTE
    assert sizes(RunSpec(model=model), capabilities) == {task: (n, n) for task, n in REFERENCE.items()}


def test_the_local_model_asks_full_history_items_one_per_request() -> None:
    got = sizes(RunSpec(model="local/gemma-3-270m"), IN_PROCESS)
    assert got == {**{task: (n, n) for task, n in REFERENCE.items()}, "rpp": (1, 1)}


def test_a_full_history_context_for_any_task_makes_local_requests_single() -> None:
    got = sizes(RunSpec(model="local/gemma-3-270m", context_size=-1), IN_PROCESS)
    assert all(size == (1, 1) for size in got.values())
    remote = sizes(RunSpec(model="openai/gpt-4o", context_size=-1))
    assert remote == {task: (n, n) for task, n in REFERENCE.items()}


def test_batch_size_flag_overrides_every_default() -> None:
    for capabilities in (IN_PROCESS, REMOTE):
        assert set(sizes(RunSpec(model="local/gemma-3-270m", batch_size=2), capabilities).values()) == {
            (2, 2)
        }


def test_run_json_records_the_batch_size_each_task_used() -> None:
    config = RunSpec(model="local/gemma-3-270m", tasks=("itp", "rpp"))
    samples = select_samples(load_samples("demo"), config)
    plans = build_plans(samples, config, capabilities=IN_PROCESS)
    manifest = build_manifest(config, samples, plans, {"provider": "local"})
    assert manifest["batch_sizes"] == {"itp": TASKS["itp"].INFO.default_batch_size, "rpp": 1}
