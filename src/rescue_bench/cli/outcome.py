"""How ``run`` and ``sweep`` end: one summary line per run, the reasons of unfinished work, and exit codes.

Both commands print the same lines and use the same statuses (:mod:`rescue_bench.rundir.status`) and exit
codes, so a script treats a run the same whichever command made it:

====  ==========================================================================================
0     finished: every instance has an answer (failed answers are scored as misses and counted)
1     an error (a study run failed: bad key, unknown model; see ``study.json``)
2     a usage error (a flag, a spec file, a path)
3     stopped by ``--budget``: re-run the same command to continue
4     incomplete: instances or judge verdicts got no answer; re-run the same command to ask them again
5     degraded: finished, but the share of failed answers reached ``--degraded-share`` (default 50%)
130   interrupted (Ctrl-C, SIGTERM): re-run the same command to resume
====  ==========================================================================================
"""

from __future__ import annotations

import shlex
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Final
from urllib.parse import urlsplit

import typer

from rescue_bench.engine.ending import summarise
from rescue_bench.printable import echo
from rescue_bench.problems import one_line
from rescue_bench.rundir import Counts
from rescue_bench.rundir.counts import total

EXIT_FAILED: Final = 1
EXIT_STOPPED: Final = 3
EXIT_INCOMPLETE: Final = 4
EXIT_DEGRADED: Final = 5
EXIT_CODES: Final[Mapping[str, int]] = {
    "finished": 0,
    "failed": EXIT_FAILED,
    "stopped": EXIT_STOPPED,
    "running": EXIT_STOPPED,
    "pending": EXIT_STOPPED,
    "incomplete": EXIT_INCOMPLETE,
    "degraded": EXIT_DEGRADED,
}
"""Status -> exit code; a sweep exits with the code of its most serious run (:func:`worst`)."""
_SEVERITY: Final = ("failed", "stopped", "running", "pending", "incomplete", "degraded", "finished")


def worst(statuses: Sequence[str]) -> str:
    """The most serious status of several runs (an error first, then unfinished work, then degraded).

    >>> worst(["finished", "degraded", "incomplete"]), worst([])
    ('incomplete', 'finished')
    """
    ranked = [s for s in _SEVERITY if s in statuses]
    return ranked[0] if ranked else "finished"


def resume_command() -> str:
    """The command line as given, to re-run; a URL holding credentials or a query is not repeated.

    >>> import sys; sys.argv = ["/x/bin/rescue-bench", "run", "--data", "my file.jsonl"]
    >>> resume_command()
    "rescue-bench run --data 'my file.jsonl'"
    """
    args = sys.argv[1:]
    if any(_secret_url(a) for a in args):
        return "the same command again (with the same --base-url)"
    return shlex.join(["rescue-bench", *args])


def _secret_url(arg: str) -> bool:
    if "://" not in arg:
        return False
    parts = urlsplit(arg)
    return bool(parts.username or parts.password or parts.query)


def validity(counts: Mapping[str, Counts]) -> tuple[int, int]:
    """Valid answers and planned instances over every task of a run's counts."""
    return total(counts.values(), "valid"), total(counts.values(), "instances")


def summary_line(label: str, status: str, valid: int, planned: int) -> str:
    """``label: status, valid V/N (P%)``: the one line every run gets at the end of ``run`` and ``sweep``.

    >>> summary_line("openai/m", "incomplete", 0, 24)
    'openai/m: INCOMPLETE, valid 0/24 (0.0%)'
    """
    share = f" ({100 * valid / planned:.1f}%)" if planned else ""
    shown = status if status == "finished" else status.upper()
    return f"{one_line(label)}: {shown}, valid {valid}/{planned}{share}"


def unfinished_lines(unanswered: Mapping[str, Counter[str]], counts: Mapping[str, Counts]) -> list[str]:
    """One line per task with instances (or judge verdicts) that got no answer: how many, the reasons."""
    lines = []
    for task, reasons in unanswered.items():
        found = counts.get(task)
        of = f" of {found.instances}" if found is not None and found.has("instances") else ""
        lines.append(f"  {task}: {sum(reasons.values())}{of} got no answer: {one_line(summarise(reasons))}")
    return lines


def echo_ending(
    status: str,
    reason: str | None,
    unanswered: Mapping[str, Counter[str]],
    counts: Mapping[str, Counts],
    dominant: tuple[str, str | None] | None,
) -> None:
    """The last lines of an unfinished or degraded run (stderr), with the command that goes on."""
    if status == "incomplete":
        echo(f"incomplete: {one_line(reason or 'instances got no answer')}", err=True)
        for line in unfinished_lines(unanswered, counts):
            echo(line, err=True)
        echo(f"resume (asks only what got no answer): {resume_command()}", err=True)
    elif status == "degraded" and dominant is not None:
        failed, hint = dominant
        fix = f"; likely fix: {hint}" if hint else ""
        echo(f"degraded: most answers failed; main reason: {one_line(failed)}{fix}", err=True)
    elif status in ("stopped", "running"):
        echo(f"stopped: {one_line(reason or 'not finished')}", err=True)
        echo(f"resume: {resume_command()}", err=True)


def exit_with(status: str) -> None:
    """Leave with the status's exit code (nothing for ``finished``)."""
    code = EXIT_CODES.get(status, EXIT_FAILED)
    if code:
        raise typer.Exit(code)
