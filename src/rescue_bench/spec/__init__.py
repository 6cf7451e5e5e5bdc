"""The run spec: everything that decides what a run asks, whom, and how (one typed, validated record).

A :class:`RunSpec` is built from command-line flags, from a ``--spec FILE.toml`` (flags given beside it win),
or in Python (``rescue_bench.run(RunSpec(model="baseline/random", tasks=["itp"]))``). Every value is checked
here, so nothing is written before the options are known to be valid; :func:`load_spec` and
:func:`validate_spec` turn pydantic's errors into one-line :class:`~rescue_bench.errors.ConfigError`\\ s that
name the field (and the file). ``run.json`` stores ``spec.model_dump(mode="json")``; it holds names of
environment variables, never a key.

The field descriptions are the help texts of the command-line flags (:mod:`rescue_bench.cli.run_flags`).
"""

from rescue_bench.spec.run import (
    TASKS_CONTEXT,
    VIDEO_BATCH_SIZE,
    RunSpec,
    default_out,
    known_tasks,
    named_entries,
    options_model,
)
from rescue_bench.spec.settings import BudgetSpec, EngineSpec, JudgeSpec, ModelSpec, VideoSpec
from rescue_bench.spec.toml_text import to_toml
from rescue_bench.spec.validate import load_spec, validate_spec, validate_table

__all__ = [
    "TASKS_CONTEXT",
    "VIDEO_BATCH_SIZE",
    "BudgetSpec",
    "EngineSpec",
    "JudgeSpec",
    "ModelSpec",
    "RunSpec",
    "VideoSpec",
    "default_out",
    "known_tasks",
    "load_spec",
    "named_entries",
    "options_model",
    "to_toml",
    "validate_spec",
    "validate_table",
]
