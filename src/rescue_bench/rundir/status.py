"""How a run ended: the statuses of ``run.json`` and ``study.json``, and what each means to a reader.

Two kinds of failure are kept apart everywhere (docs/reliability.md, "Statuses"):

* *no answer* (connection refused, timeout, 5xx or 429 after the retries, a reply over the size cap): the
  work is not done. Its instances are recorded (``request_failed: ...``) so the failure can be read, but the
  run ends ``incomplete`` and a plain re-run asks them again;
* *an answer that fails* (it does not parse, a label outside the set, a refusal): the model's answer, scored
  as a miss and counted. A run whose share of such answers passes the threshold ends ``degraded``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final, Literal

from rescue_bench.errors import UnfinishedWork
from rescue_bench.rundir.counts import Counts
from rescue_bench.rundir.manifest import Manifest

RunStatus = Literal["running", "finished", "degraded", "incomplete", "stopped"]
"""``running``: a session is asking (or died asking); ``finished``: every instance has an answer;
``degraded``: finished, but too many answers failed; ``incomplete``: instances or verdicts got no answer;
``stopped``: the budget or an interrupt stopped it."""

FINAL: Final = frozenset({"finished", "degraded"})
"""Statuses whose ``scores.json`` covers every planned instance."""

DEGRADED_SHARE: Final = 0.5
"""Default share of invalid answers at which a finished run is ``degraded`` (``RunSpec.degraded_share``)."""


def is_final(status: str | None) -> bool:
    """Whether a run with this status has every instance answered (its numbers are complete).

    >>> is_final("finished"), is_final("degraded"), is_final("incomplete"), is_final(None)
    (True, True, False, False)
    """
    return status in FINAL


def mark(status: str | None) -> str:
    """The mark a table puts beside a run of this status: empty for ``finished``.

    >>> mark("finished"), mark("degraded"), mark("incomplete"), mark("stopped")
    ('', 'DEGRADED', 'PARTIAL', 'PARTIAL')
    """
    if status == "finished":
        return ""
    return "DEGRADED" if status == "degraded" else "PARTIAL"


def no_answer_count(counts: Mapping[str, Counts]) -> int:
    """Instances that got no answer, from ``run.json``'s per-task counts (``request_failures``).

    >>> no_answer_count({"itp": Counts(request_failures=2), "er": Counts(request_failures=1)})
    3
    """
    return sum(entry.request_failures for entry in counts.values())


def engine_unfinished(status: str | None, counts: Mapping[str, Counts]) -> bool:
    """Whether the model's own work of a run is unfinished: stopped, killed, or instances without an answer
    (a run ``incomplete`` only for want of judge verdicts is not: a judge pass finishes it).

    >>> engine_unfinished("incomplete", {"itp": Counts(request_failures=3)})
    True
    >>> engine_unfinished("finished", {})
    False
    >>> engine_unfinished("incomplete", {"er": Counts(request_failures=0)})
    False
    """
    return not (is_final(status) or (status == "incomplete" and not no_answer_count(counts)))


def check_scorable(run_dir: Path, manifest: Manifest | None) -> None:
    """Refuse to score (judge and write ``scores.json`` for) a run whose instances did not all get an answer:
    its unanswered requests would become parse failures, and the scores a number.

    Raises:
        UnfinishedWork: one line with the counts and the way out; the CLI exits 4, as ``run`` does.
    """
    if manifest is None or not engine_unfinished(manifest.status, manifest.counts):
        return
    status, missing = manifest.status, no_answer_count(manifest.counts)
    why = f"{missing} instances got no answer" if missing else "not every instance was asked"
    raise UnfinishedWork(
        f"{run_dir}: the run is {status} ({why}); `score` judges only a run whose every instance has an "
        "answer: re-run the same `rescue-bench run` command to finish it, then score it"
    )


def judge_degraded(tallies: Iterable[tuple[str, int, int]], share: float) -> str | None:
    """The reason a run is ``degraded`` by its judges: a judge whose share of unscored verdicts (prose, a
    score off the scale, ``{}``) reached ``share``, as a model's failed answers do; ``None`` when none did.
    ``tallies`` holds (judge, valid verdicts, unscored verdicts).

    >>> judge_degraded([("openai/j", 0, 15)], 0.5)
    'judge openai/j: 15 of 15 verdicts unscored: check the judge model and its endpoint'
    >>> judge_degraded([("openai/j", 14, 1)], 0.5) is None
    True
    """
    for name, valid, unscored in tallies:
        if unscored and unscored >= share * (valid + unscored):
            return (
                f"judge {name}: {unscored} of {valid + unscored} verdicts unscored: "
                "check the judge model and its endpoint"
            )
    return None
