"""rescue-bench: evaluate models on RESCUE-Bench and build relation-aware data.

The Python API, in a few lines::

    import rescue_bench

    spec = rescue_bench.RunSpec(model="baseline/random", data="demo", tasks=["itp"])
    outcome = rescue_bench.run(spec, out="runs/x")
    print(outcome.status, outcome.counts["itp"].valid, outcome.scores.entry("itp").metric("f1"))

``outcome.counts`` holds each task's :class:`~rescue_bench.rundir.Counts` (instances, valid answers, failures,
requests, tokens); ``outcome.scores`` is ``scores.json`` typed (:class:`~rescue_bench.rundir.Scores`; ``None``
when the run is not finished), whose ``entry(task, scope)`` is a :class:`~rescue_bench.rundir.ScoreEntry`.

``run`` is the operation behind ``rescue-bench run`` and each run of ``sweep``: the same checks, engine, judge
pass and statuses (``finished``, ``degraded``, ``incomplete``, ``stopped``).

Names are loaded on first use, so ``import rescue_bench`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rescue_bench.data.load import load_samples
    from rescue_bench.evaluation.run import RunOutcome, run
    from rescue_bench.models.registry import get_model
    from rescue_bench.records import Instance, Prediction, Reply, Request, Score
    from rescue_bench.spec import JudgeSpec, ModelSpec, RunSpec
    from rescue_bench.tasks import get_task
    from rescue_bench.tasks.base import TaskConfig, TaskInfo
    from rescue_bench.version import __version__ as __version__

__all__ = [
    "Instance",
    "JudgeSpec",
    "ModelSpec",
    "Prediction",
    "Reply",
    "Request",
    "RunOutcome",
    "RunSpec",
    "Score",
    "TaskConfig",
    "TaskInfo",
    "get_model",
    "get_task",
    "load_samples",
    "run",
]
_HOMES = {
    "Instance": "rescue_bench.records",
    "JudgeSpec": "rescue_bench.spec",
    "ModelSpec": "rescue_bench.spec",
    "Prediction": "rescue_bench.records",
    "Reply": "rescue_bench.records",
    "Request": "rescue_bench.records",
    "RunOutcome": "rescue_bench.evaluation.run",
    "RunSpec": "rescue_bench.spec",
    "Score": "rescue_bench.records",
    "TaskConfig": "rescue_bench.tasks.base",
    "TaskInfo": "rescue_bench.tasks.base",
    "get_model": "rescue_bench.models.registry",
    "get_task": "rescue_bench.tasks",
    "load_samples": "rescue_bench.data.load",
    "run": "rescue_bench.evaluation.run",
    "__version__": "rescue_bench.version",
}
"""Where each public name lives; it is imported from there on first use."""


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'rescue_bench' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups find it without coming here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
