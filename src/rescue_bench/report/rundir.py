"""Reading a run directory (docs/design.md) for judging and reporting.

Later lines win: ``predictions.jsonl`` and ``judgments.jsonl`` are append-only, so a re-judged or re-run
instance simply has a newer line. Lines are read with :func:`rescue_bench.engine.store.read_jsonl` (a torn
last line is skipped; any other bad line is an error naming the file and line).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rescue_bench.engine.store import read_jsonl
from rescue_bench.errors import DataError

Record = dict[str, Any]
JUDGMENTS_FILE = "judgments.jsonl"


def _read_json(path: Path) -> Any:
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not valid JSON ({exc})") from None


def latest(records: Sequence[Record], *keys: str) -> list[Record]:
    """The last record per key tuple, in first-seen order.

    >>> latest([{"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 1, "v": "c"}], "id")
    [{'id': 1, 'v': 'c'}, {'id': 2, 'v': 'b'}]
    """
    last: dict[tuple[Any, ...], Record] = {}
    for record in records:
        last[tuple(record.get(k) for k in keys)] = record
    return list(last.values())


@dataclass(frozen=True, slots=True)
class RunData:
    """Everything a run directory holds, with append-only files reduced to their latest lines."""

    path: Path
    run: Record
    predictions: list[Record]
    judgments: list[Record] = field(default_factory=list)
    requests: list[Record] = field(default_factory=list)
    scores: Record | None = None

    @property
    def name(self) -> str:
        """A display name: the run's model (``provider/model``), else the directory name."""
        return candidate_name(self.run) or self.path.name

    @property
    def tasks(self) -> list[str]:
        return list(dict.fromkeys(str(r.get("task")) for r in self.predictions))


def candidate_name(run: Mapping[str, Any]) -> str | None:
    """``provider/model`` of the run's candidate model, from ``run.json``.

    >>> candidate_name({"model": {"provider": "openai", "model": "gpt-4o", "base_url": "x"}})
    'openai/gpt-4o'
    >>> candidate_name({"model": {"name": "baseline/random"}}), candidate_name({})
    ('baseline/random', None)
    """
    model = run.get("model")
    if isinstance(model, str):
        return model
    if not isinstance(model, Mapping):
        config = run.get("config")
        value = config.get("model") if isinstance(config, Mapping) else None
        return value if isinstance(value, str) else None
    if isinstance(model.get("name"), str):
        return str(model["name"])
    if model.get("provider") and model.get("model"):
        return f"{model['provider']}/{model['model']}"
    return None


def load_run(path: str | Path) -> RunData:
    """Read a run directory.

    Raises:
        DataError: the directory or its ``predictions.jsonl`` is missing, or a file is unreadable.
    """
    root = Path(path)
    if not root.is_dir():
        raise DataError(f"run directory {root} does not exist")
    if not (root / "predictions.jsonl").exists():
        raise DataError(f"{root} is not a run directory: predictions.jsonl is missing")
    run = _read_json(root / "run.json") or {}
    if not isinstance(run, dict):
        raise DataError(f"{root / 'run.json'}: expected a JSON object")
    scores = _read_json(root / "scores.json")
    return RunData(
        path=root,
        run=run,
        predictions=latest(list(read_jsonl(root / "predictions.jsonl")), "instance_id"),
        judgments=latest(list(read_jsonl(root / JUDGMENTS_FILE)), "instance_id", "judge"),
        requests=list(read_jsonl(root / "requests.jsonl")),
        scores=scores if isinstance(scores, dict) else None,
    )
