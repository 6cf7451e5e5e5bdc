"""The run configuration, shown once: the settings that differ between runs, then the settings they share.

``run.json`` holds the whole run spec (format 2) beside ``config`` and ``options``, which repeat parts of it,
and the counts and timings of how the run went (the other tables show those): each fact is listed once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rescue_bench.data.sources import public_name
from rescue_bench.redaction import scrub
from rescue_bench.report.tables import Table, display_names
from rescue_bench.rundir import RunData


def flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Nested config as dotted ``key = value`` pairs.

    >>> flatten({"a": {"b": 1, "c": [1, 2]}, "d": None})
    [('a.b', '1'), ('a.c', '[1, 2]'), ('d', 'None')]
    """
    if isinstance(value, Mapping):
        out: list[tuple[str, str]] = []
        for key, item in value.items():
            out += flatten(item, f"{prefix}.{key}" if prefix else str(key))
        return out
    return [(prefix, str(value))]


VOLATILE = ("status", "counts", "judge_counts", "timings", "stop_reason")
"""run.json keys that record how a run went, not how it was set up (the other tables show them)."""


def settings(run: RunData) -> dict[str, str]:
    """A run's recorded setup as dotted ``key: value`` pairs, each fact once: the whole spec (format 2) stands
    for ``config`` and ``options``, which repeat parts of it. Every URL is without user info or query (a
    directory written before ``run.json`` was scrubbed may still hold them), and every local path by its last
    part only: a report is shared, and where a file sat on one machine is not what it holds (the data's hash
    is listed beside it).

    >>> from pathlib import Path
    >>> settings(RunData.of(Path("r"), {"dataset": {"source": "/home/ana/release.jsonl"}}, []))
    {'dataset.source': 'release.jsonl'}
    """
    left_out = (*VOLATILE, "config", "options") if run.manifest.spec is not None else VOLATILE
    record = {k: v for k, v in run.run.items() if k not in left_out}
    return {key: _public(value) for key, value in flatten(scrub(record))}


def _public(value: str) -> str:
    """A local absolute path (``/...``, ``~/...``) by its last part; any other value as it is."""
    return public_name(value) if value.startswith(("/", "~")) else value


def config(runs: Sequence[RunData]) -> tuple[Table, Table]:
    """The configuration once: the settings that differ between the runs (a column per run), then the
    settings they share (one value each)."""
    names = display_names(runs)
    each = [settings(run) for run in runs]
    keys = list(dict.fromkeys(key for found in each for key in found))
    differ = [k for k in keys if len({found.get(k) for found in each}) > 1]
    shared = [k for k in keys if k not in differ]
    note = (
        "Settings recorded in run.json that differ between the runs; the settings they share are in the next "
        "table."
        if len(runs) > 1
        else "A single run: every setting is in the next table."
    )
    return (
        Table(
            "config",
            "Run configuration: what differs between the runs",
            ("Setting", *names),
            tuple((key, *(found.get(key, "–") for found in each)) for key in differ),
            note,
        ),
        Table(
            "config_shared",
            "Run configuration: settings every run shares" if len(runs) > 1 else "Run configuration",
            ("Setting", "Value"),
            tuple((key, each[0][key]) for key in shared),
            "From run.json; the spec stands for its copies (config, options).",
        ),
    )
