"""How a run ended: the statuses of ``run.json`` and ``study.json``, and what each means to a reader.

Two kinds of failure are kept apart everywhere (docs/reliability.md, "Statuses"):

* *no answer* (connection refused, timeout, 5xx or 429 after the retries, a reply over the size cap): the
  work is not done. Its instances are recorded (``request_failed: ...``) so the failure can be read, but the
  run ends ``incomplete`` and a plain re-run asks them again;
* *an answer that fails* (it does not parse, a label outside the set, a refusal): the model's answer, scored
  as a miss and counted. A run whose share of such answers passes the threshold ends ``degraded``.
"""

from __future__ import annotations

from typing import Final, Literal

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
