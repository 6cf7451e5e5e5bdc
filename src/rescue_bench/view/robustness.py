"""The viewer's robustness pages: the robustness table of the perturbed runs against a base run
(:mod:`rescue_bench.report.robustness`), each cell linking to the instances whose top-1 answer flipped.

Renamed runs (``name-swap``, ``anonymize``) are compared after their answers are mapped back to the original
names, as in the report, so a flipped instance is one whose answer really changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from rescue_bench.metrics.plan import top1
from rescue_bench.report.build import perturbed_variants
from rescue_bench.report.robustness import (
    RobustnessRow,
    flipped_pairs,
    robustness_rows,
    robustness_table,
    run_lines,
)
from rescue_bench.report.tables import Table
from rescue_bench.view.data import RunView
from rescue_bench.view.filters import BadQuery

Context = dict[str, object]


def robustness_url(base: int) -> str:
    return f"/robustness?base={base}"


def flipped_url(base: int, run: int, task: str) -> str:
    return "/flipped?" + urlencode({"base": base, "run": run, "task": task})


def variants_of(views: Sequence[RunView], base: int) -> list[RunView]:
    """The views perturbed otherwise than the base (:func:`rescue_bench.report.build.perturbed_variants`)."""
    if not 0 <= base < len(views):
        raise BadQuery(f"bad query: base={base}; the viewer has runs 0 to {len(views) - 1}")
    others = [v for v in views if v.index != base]
    _, chosen = perturbed_variants([views[base].data, *(v.data for v in others)])
    ids = {id(run) for run in chosen}
    return [v for v in others if id(v.data) in ids]


@dataclass(frozen=True, slots=True)
class LinkedRow:
    """A robustness row with the view index of its perturbed run and the link to its flipped instances."""

    row: RobustnessRow
    run: int
    flipped_link: str | None


def robustness_page(views: Sequence[RunView], base: int, resamples: int = 1000) -> Context:
    """The robustness table of every perturbed run against ``views[base]``.

    Raises:
        BadQuery: no such base.
        ConfigError: a perturbed run does not share the base's data, model or tasks.
    """
    variants = variants_of(views, base)
    rows = robustness_rows(views[base].data, [v.data for v in variants], n_resamples=resamples)
    table: Table = robustness_table(views[base].data, [v.data for v in variants], rows=rows)
    linked = [
        LinkedRow(
            r,
            variants[r.variant].index,
            None if r.flipped is None else flipped_url(base, variants[r.variant].index, r.task),
        )
        for r in rows
    ]
    return {
        "title": f"Robustness of {views[base].name}",
        "base": views[base],
        "variants": variants,
        "table": table,
        "linked": list(zip(linked, table.rows, strict=True)),
    }


@dataclass(frozen=True, slots=True)
class Flip:
    instance_id: str
    repeat: int
    """The repeat whose answers differ (0 in a run without repeats)."""
    base_answer: str
    answer: str
    """The perturbed run's top-1 answer, renamed answers mapped back to the original names."""
    gold: str

    @property
    def opens(self) -> dict[str, str]:
        """The instance-page filters that open this repeat (none for repeat 0, the page's default)."""
        return {"at": str(self.repeat)} if self.repeat else {}


def flipped_page(views: Sequence[RunView], base: int, run: int, task: str) -> Context:
    """The instances of ``task`` whose top-1 answer differs between ``views[run]`` and ``views[base]``."""
    variants = {v.index: v for v in variants_of(views, base)}
    if run not in variants:
        raise BadQuery(f"bad query: run={run} is not a perturbed run of base {base}")
    base_lines = run_lines(views[base].data).get(task, [])
    lines = run_lines(views[run].data).get(task, [])
    if not base_lines or not lines:
        raise BadQuery(f"bad query: task={task!r} is not in both runs")
    pairs, shared = flipped_pairs(task, base_lines, lines)
    flips = [Flip(v.instance_id, v.repeat, top1(b), top1(v), str(b.gold)) for b, v in pairs]
    return {
        "title": f"{task.upper()}: answers that flipped under {views[run].name} (run {run})",
        "base": views[base],
        "run": views[run],
        "task": task,
        "flips": flips,
        "shared": shared,
        "repeated": any(r.repeat for r in lines),
        "back": robustness_url(base),
    }
