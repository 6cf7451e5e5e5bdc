"""The published JSON Schemas of ``run.json`` and ``scores.json``, generated from the typed records.

The records (:class:`~rescue_bench.rundir.manifest.Manifest`, :class:`~rescue_bench.rundir.manifest.Scores`)
are the one place the files' shapes are stated; the schemas are derived from them and shipped in the package
(``rescue_bench/rundir/schemas/*.schema.json``) for readers who check a run directory without Python. A test
keeps the shipped files equal to what this module generates (``python -m rescue_bench.rundir.jsonschemas``
rewrites them), and validates every ``run.json`` and ``scores.json`` the test suite writes against them.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from rescue_bench.rundir.manifest import Manifest
from rescue_bench.rundir.scores import ScoresMeta

SCHEMA_FILES = {"run.json": "run.schema.json", "scores.json": "scores.schema.json"}
"""Run-directory file -> its schema's file name in ``rescue_bench/rundir/schemas``."""
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def run_schema() -> dict[str, Any]:
    """The schema of ``run.json`` (:class:`Manifest`, the keys as written)."""
    schema = Manifest.model_json_schema()
    return {"$schema": DIALECT, "$id": "rescue-bench/run.schema.json", **schema}


def scores_schema() -> dict[str, Any]:
    """The schema of ``scores.json``: task entries (task -> scope -> metrics, ``n`` and ``ci``) beside
    ``_meta`` (:class:`ScoresMeta`) and ``_relational``."""
    meta = ScoresMeta.model_json_schema()
    defs = meta.pop("$defs", {})
    scope = {
        "type": "object",
        "description": "One scope's metrics (numbers or null), n, and 'ci': metric -> [low, high].",
    }
    return {
        "$schema": DIALECT,
        "$id": "rescue-bench/scores.schema.json",
        "title": "scores.json",
        "type": "object",
        "properties": {
            "_meta": {"$ref": "#/$defs/ScoresMeta"},
            "_relational": {"anyOf": [{"type": "object"}, {"type": "null"}]},
        },
        "required": ["_meta"],
        "additionalProperties": {
            "type": "object",
            "description": "A task: scope (couple, family, all) -> its entry.",
            "additionalProperties": scope,
        },
        "$defs": {**defs, "ScoresMeta": meta},
    }


GENERATORS = {"run.json": run_schema, "scores.json": scores_schema}


def schema_text(name: str) -> str:
    """The schema file's text for run-directory file ``name`` (as generated)."""
    return json.dumps(GENERATORS[name](), indent=2, sort_keys=True) + "\n"


def shipped(name: str) -> dict[str, Any]:
    """The schema shipped in the package for run-directory file ``name`` (``run.json``, ``scores.json``)."""
    text = resources.files("rescue_bench.rundir").joinpath("schemas", SCHEMA_FILES[name]).read_text()
    found: dict[str, Any] = json.loads(text)
    return found


if __name__ == "__main__":  # rewrite the shipped files from the records
    folder = resources.files("rescue_bench.rundir").joinpath("schemas")
    for file_name, schema_file in SCHEMA_FILES.items():
        with resources.as_file(folder.joinpath(schema_file)) as path:
            path.write_text(schema_text(file_name))
