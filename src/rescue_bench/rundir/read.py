"""Reading a run directory (docs/design.md) for judging, reporting and review.

Later lines win: ``predictions.jsonl`` and ``judgments.jsonl`` are append-only, so a re-judged or re-run
instance simply has a newer line. A torn last line is skipped; any other bad line, or a line with an unknown
or mistyped field, is an error naming the file, the line and the field.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from rescue_bench.errors import DataError
from rescue_bench.records import Json
from rescue_bench.rundir.files import (
    JUDGING_FILE,
    JUDGMENTS_FILE,
    PREDICTIONS_FILE,
    REQUESTS_FILE,
    RUN_FILE,
    SCORES_FILE,
    numbered_jsonl,
    read_json_object,
)
from rescue_bench.rundir.judging import Judging
from rescue_bench.rundir.lines import JudgmentLine, PredictionLine, RequestLine, typed_lines
from rescue_bench.rundir.manifest import Manifest, judging_of
from rescue_bench.rundir.scores import Scores

T = TypeVar("T")


def latest(records: Iterable[T], key: Callable[[T], Hashable]) -> list[T]:
    """The last record per key, in first-seen order.

    >>> latest([(1, "a"), (2, "b"), (1, "c")], key=lambda r: r[0])
    [(1, 'c'), (2, 'b')]
    """
    last: dict[Hashable, T] = {}
    for record in records:
        last[key(record)] = record
    return list(last.values())


@dataclass(frozen=True, slots=True)
class RunData:
    """Everything a run directory holds, with append-only files reduced to their latest lines."""

    path: Path
    manifest: Manifest
    prediction_lines: tuple[PredictionLine, ...]
    judgment_lines: tuple[JudgmentLine, ...] = ()
    request_lines: tuple[RequestLine, ...] = ()
    score_record: Scores | None = None
    judging: Judging = field(default_factory=Judging)

    @property
    def repeats(self) -> int:
        """How often the run asked its instances: 1 + the highest repeat of its prediction lines."""
        return 1 + max((line.repeat for line in self.prediction_lines), default=0)

    @classmethod
    def of(
        cls,
        path: Path,
        run: Mapping[str, Json],
        predictions: Sequence[Mapping[str, Json]],
        *,
        judgments: Sequence[Mapping[str, Json]] = (),
        scores: dict[str, Json] | None = None,
    ) -> RunData:
        """A run from JSON objects (tests, doctests), typed as :func:`load_run` types a directory."""
        manifest = Manifest.from_json(run, str(path / RUN_FILE))
        return cls(
            path,
            manifest,
            tuple(PredictionLine.from_json(p) for p in predictions),
            tuple(JudgmentLine.from_json(j) for j in judgments),
            score_record=None if scores is None else Scores.of(scores),
            judging=judging_of(None, manifest),
        )

    @property
    def name(self) -> str:
        """A display name: the run's model (``provider/model``), else the directory name."""
        return self.manifest.candidate or self.path.name

    @property
    def tasks(self) -> list[str]:
        return list(dict.fromkeys(p.task for p in self.prediction_lines))

    # JSON views, for readers that still take dicts (metrics, the report tables).
    @property
    def run(self) -> dict[str, Json]:
        return self.manifest.to_json()

    @property
    def predictions(self) -> list[dict[str, Json]]:
        return [p.to_json() for p in self.prediction_lines]

    @property
    def judgments(self) -> list[dict[str, Json]]:
        return [j.to_json() for j in self.judgment_lines]

    @property
    def scores(self) -> dict[str, Json] | None:
        return None if self.score_record is None else self.score_record.to_json()


def check_run_dir(root: Path) -> Path:
    """``root`` when it is a run directory (it holds ``predictions.jsonl``); else a :class:`DataError` that
    says what it is instead: missing, a file, or a folder of run directories (naming them)."""
    if root.is_file():
        raise DataError(
            f"{root} is a file, not a run directory: give the directory that holds it ({root.parent})"
        )
    if not root.is_dir():
        raise DataError(f"run directory {root} does not exist")
    if (root / PREDICTIONS_FILE).exists():
        return root
    inner = sorted(c.name for c in root.iterdir() if (c / PREDICTIONS_FILE).is_file())
    if inner:
        shown = ", ".join(inner[:3]) + (", ..." if len(inner) > 3 else "")
        raise DataError(
            f"{root} is a folder of {len(inner)} run directories ({shown}), not a run: give the runs to use "
            f"(e.g. {root / inner[0]}), or a study directory (`rescue-bench sweep` makes one)"
        )
    raise DataError(f"{root} is not a run directory: {PREDICTIONS_FILE} is missing")


def load_run(path: str | Path) -> RunData:
    """Read a run directory.

    Raises:
        DataError: the directory or its ``predictions.jsonl`` is missing.
        RunDirError: a file is unreadable, or a record has an unknown or mistyped field.
    """
    root = check_run_dir(Path(path))
    manifest = Manifest.from_json(read_json_object(root / RUN_FILE) or {}, str(root / RUN_FILE))
    scores = read_json_object(root / SCORES_FILE)
    return RunData(
        path=root,
        manifest=manifest,
        prediction_lines=tuple(latest(read_predictions(root), key=lambda p: p.key)),
        judgment_lines=tuple(latest(read_judgments(root), key=lambda j: (j.key, j.judge, j.judge_repeat))),
        request_lines=tuple(read_requests(root)),
        score_record=None if scores is None else Scores.of(scores, str(root / SCORES_FILE)),
        judging=load_judging(root, manifest),
    )


def read_predictions(root: Path) -> list[PredictionLine]:
    """Every line of ``predictions.jsonl``, typed (several per instance before compaction)."""
    path = root / PREDICTIONS_FILE
    return typed_lines(numbered_jsonl(path), PredictionLine, path)


def read_judgments(root: Path) -> list[JudgmentLine]:
    path = root / JUDGMENTS_FILE
    return typed_lines(numbered_jsonl(path), JudgmentLine, path)


def read_requests(root: Path) -> list[RequestLine]:
    path = root / REQUESTS_FILE
    return typed_lines(numbered_jsonl(path), RequestLine, path)


def load_judging(root: Path, manifest: Manifest | None = None) -> Judging:
    """``judging.json``, else the judge keys of an older ``run.json`` (:func:`judging_of`)."""
    path = root / JUDGING_FILE
    data = read_json_object(path)
    judging = None if data is None else Judging.from_json(data, str(path))
    if manifest is None:
        manifest = Manifest.from_json(read_json_object(root / RUN_FILE) or {}, str(root / RUN_FILE))
    return judging_of(judging, manifest)
