"""What a run measured and how far it got: the facts every heading and leaderboard row states.

* :func:`progress`: the run's status and done/planned instances per task;
* :func:`state`: the short status a leaderboard row shows (``finished``, ``degraded``, ``PARTIAL 40/120``);
* :func:`validity`: the share of instances with a valid answer, from ``run.json``'s counts;
* :func:`measured`: one line naming the data (source, samples, scenario split, instances), the judge, the
  BERTScore model and a response format other than json_schema, and :func:`heading` the same for several runs;
* :data:`PUBLISHED` and :func:`published_caveat`: what the paper's published rows measured, and the word of
  warning when the runs beside them measured something else.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rescue_bench.data.sources import public_name
from rescue_bench.engine.ending import unanswered
from rescue_bench.errors import DataError
from rescue_bench.rundir import RunData
from rescue_bench.rundir.counts import total
from rescue_bench.rundir.status import FINAL
from rescue_bench.tasks import task_infos

PARTIAL = "PARTIAL"
DEGRADED = "degraded"
COMPLETE = FINAL
"""Statuses (run.json ``status``) of a run whose every instance has an answer; any other is unfinished."""
PAPER_SAMPLES = 191
PUBLISHED = (
    "published: 191 conversations of the official release (174 couple, 17 family), judge GPT-5.4, "
    "BERTScore backbone not stated"
)
"""What the paper's Table 5 rows measured (docs/paper.md)."""


@dataclass(frozen=True, slots=True)
class Progress:
    """How far one run got: its status and, per planned task, instances done and planned."""

    run: str
    status: str
    tasks: tuple[tuple[str, int, int], ...]
    """(task, done, planned)"""

    @property
    def finished(self) -> bool:
        """Every planned instance has an answer (a ``degraded`` run too: it is shown marked, not refused)."""
        return self.status in COMPLETE and all(done >= planned for _, done, planned in self.tasks)

    @property
    def done(self) -> int:
        return sum(done for _, done, _ in self.tasks)

    @property
    def planned(self) -> int:
        return sum(planned for _, _, planned in self.tasks)

    def describe(self) -> str:
        """``runs/x (status stopped): itp 40/120, rpp 98/98 instances done``"""
        counts = ", ".join(f"{task} {done}/{planned}" for task, done, planned in self.tasks)
        return f"{self.run} (status {self.status}): {counts or 'no counts'} instances done"


def progress(run: RunData) -> Progress:
    """The run's status and done/planned counts: planned from ``run.json``, done from the predictions that
    got an answer (valid or not).

    Raises:
        DataError: the run holds no predictions.
    """
    if not run.prediction_lines:
        raise DataError(f"{run.path} holds no predictions: there is nothing to report")
    # A request that got no answer is unfinished work, not a done instance: its line records the failure.
    done = Counter(p.task for p in run.prediction_lines if not unanswered(p))
    planned = {task: count.instances for task, count in run.manifest.counts.items() if count.has("instances")}
    # A directory written before counts were recorded has only its status to go by.
    tasks = tuple((task, min(done[task], n), n) for task, n in planned.items())
    return Progress(str(run.path), run.manifest.status, tasks)


def state(run: RunData) -> str:
    """The short status of a leaderboard row: ``finished``, ``degraded`` or ``PARTIAL done/planned``.

    >>> from pathlib import Path
    >>> line = {"instance_id": "i", "sample_id": "s", "task": "itp", "scenario": "couple"}
    >>> state(RunData.of(Path("r"), {"status": "stopped", "counts": {"itp": {"instances": 4}}}, [line]))
    'PARTIAL 1/4'
    """
    status = run.manifest.status
    if run.prediction_lines:
        found = progress(run)
        complete, done, planned = found.finished, found.done, found.planned
    else:  # the counts run.json recorded (a summary read without the predictions)
        done = _total(run, "done") - _total(run, "request_failures")
        planned = _total(run, "instances")
        complete = status in COMPLETE and done >= planned
    if not complete:
        return f"{PARTIAL} {done}/{planned}"
    return DEGRADED if status == DEGRADED else "finished"


def _total(run: RunData, key: str) -> int:
    return total(run.manifest.counts.values(), key)


def validity(run: RunData) -> float | None:
    """The share of instances with a valid answer: sum of ``valid`` over sum of ``instances`` in run.json.

    ``None`` when the run records no valid counts (a directory written before they were counted).

    >>> from pathlib import Path
    >>> counts = {"itp": {"instances": 3, "valid": 3}, "rpp": {"instances": 1, "valid": 0}}
    >>> validity(RunData.of(Path("r"), {"counts": counts}, []))
    0.75
    """
    counts = run.manifest.counts.values()
    if not counts or not all(c.has("valid") for c in counts):
        return None
    instances = _total(run, "instances")
    return _total(run, "valid") / instances if instances else None


def data_line(run: RunData) -> str:
    """The data a run was asked on: source, samples with their scenario split, instances.

    >>> from pathlib import Path
    >>> info = {"source": "demo", "samples": 6, "couple": 3, "family": 3}
    >>> data_line(RunData.of(Path("r"), {"dataset": info, "counts": {"itp": {"instances": 24}}}, []))
    'demo data (fictional): 6 samples (3 couple, 3 family), 24 instances'
    """
    info = run.manifest.dataset
    source = "demo data (fictional)" if info.source == "demo" else _named(info.source, info.hash)
    parts = [f"{n} {kind}" for n, kind in ((info.couple, "couple"), (info.family, "family")) if n]
    split = f" ({', '.join(parts)})" if parts else ""
    samples = f"{_count(info.samples, 'sample')}{split}" if info.samples is not None else "samples unrecorded"
    selected = run.manifest.selection.sample_ids
    chosen = f", {len(selected)} chosen by id" if selected else ""
    return f"{source}: {samples}{chosen}, {_count(_total(run, 'instances'), 'instance')}"


def _count(n: int, noun: str) -> str:
    """``1 sample``, ``6 samples``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _named(source: str | None, digest: str | None) -> str:
    """A data source by its public name and content hash, never a local path.

    >>> _named("/home/ana/x/release.jsonl", "ab" * 32)
    'release.jsonl (sha256 abababababab)'
    """
    if source is None:
        return "unrecorded data"
    return public_name(source) + (f" (sha256 {digest[:12]})" if digest else "")


def judge_line(run: RunData) -> str:
    """The judge(s) and the BERTScore model of a run (``not judged``, ``no BERTScore`` when absent), and a
    task's readings when they are not the defaults (VP's ``--vp-bert``, ``--vp-judge-scale``)."""
    meta = run.score_record.meta if run.score_record is not None else None
    judges = list(run.judging.judges) or (meta.judges if meta is not None else [])
    bert = run.judging.bertscore or (meta.bertscore if meta is not None else None)
    judged = f"judge {', '.join(judges)}" if judges else "not judged"
    config = run.manifest.config
    labels = [found.label for info in task_infos() if info.judge and (found := info.judge.read(config)).label]
    readings = ", ".join(labels)
    bert_text = f"BERTScore {bert.model}" if bert is not None else "no BERTScore"
    return f"{judged}; {bert_text}" + (f"; {readings}" if readings else "")


def format_part(run: RunData) -> str:
    """``; answers asked as <formats>`` when some were not asked as ``json_schema`` (a step-down, a preset's
    own format, ``--response-format``), from run.json's per-task ``response_formats``; else nothing.

    >>> from pathlib import Path
    >>> format_part(RunData.of(Path("r"), {"counts": {"itp": {"response_formats": {"json_object": 2}}}}, []))
    '; answers asked as json_object'
    """
    labels = {k for c in run.manifest.counts.values() for k in c.response_formats}
    return f"; answers asked as {', '.join(sorted(labels))}" if labels - {"json_schema"} else ""


def served_part(run: RunData) -> str:
    """``; served by <models>`` when the endpoint named another model than the one asked for, or several
    (an alias that moved to a new snapshot), from run.json's per-task ``served_models``; else nothing.

    >>> from pathlib import Path
    >>> counts = {"itp": {"served_models": {"gpt-4o-2024-08-06": 2}}}
    >>> served_part(RunData.of(Path("r"), {"model": {"model": "gpt-4o"}, "counts": counts}, []))
    '; served by gpt-4o-2024-08-06'
    """
    names = {k for c in run.manifest.counts.values() for k in c.served_models}
    model, identity = run.manifest.model, run.manifest.identity
    asked = model if isinstance(model, str) else identity.model if identity is not None else None
    return f"; served by {', '.join(sorted(names))}" if names and names != {asked} else ""


def measured(run: RunData) -> str:
    """One line: the data, the judge and the BERTScore model of a run (and its answers' format when not
    json_schema, the model that answered when not the one asked for)."""
    return f"{data_line(run)}; {judge_line(run)}{format_part(run)}{served_part(run)}"


def heading(runs: Sequence[RunData]) -> str:
    """What the runs measured (:func:`measured_heading`), then the runs that are PARTIAL or degraded."""
    marked = [f"{run.name} {shown}" for run in runs if (shown := state(run)) != "finished"]
    return measured_heading(runs) + (f". Marked: {', '.join(marked)}" if marked else "")


def measured_heading(runs: Sequence[RunData]) -> str:
    """What the runs measured, for a heading: the shared line once; when the runs differ, the line most of
    them share, then only the runs that differ with theirs.

    >>> from pathlib import Path
    >>> info = {"source": "demo", "samples": 1, "couple": 1, "family": 0}
    >>> runs = [RunData.of(Path(n), {"dataset": info, "counts": {"itp": {"instances": 4}}}, []) for n in "ab"]
    >>> measured_heading(runs)
    'Measured: demo data (fictional): 1 sample (1 couple), 4 instances; not judged; no BERTScore'
    """
    lines = [measured(run) for run in runs]
    counted = Counter(lines)
    if len(counted) == 1:
        text = f"Measured: {lines[0]}"
    else:
        common, count = counted.most_common(1)[0]
        shared = common if count > 1 else None
        named = "; ".join(
            f"{run.name}: {line}" for run, line in zip(runs, lines, strict=True) if line != shared
        )
        text = "Measured (runs differ): " + (
            f"{count} of {len(runs)} runs {common}; the others: {named}" if shared else named
        )
    return text


def official_size(run: RunData) -> bool:
    """Whether the run was asked on data of the official release's size and not on the demo data."""
    info = run.manifest.dataset
    return info.source != "demo" and info.samples == PAPER_SAMPLES and not run.manifest.selection.sample_ids


def published_heading(runs: Sequence[RunData]) -> str:
    """The heading's line for published rows: what they measured, and whether the runs beside them compare."""
    other = any(not official_size(run) for run in runs)
    return f"Rows marked (published) are the paper's, {PUBLISHED}" + (
        "; not comparable with the runs here, asked on other data" if other else ""
    )


def published_caveat(runs: Sequence[RunData]) -> str:
    """The note beside published rows: what they measured, and a warning when a run measured other data."""
    other = [run for run in runs if not official_size(run)]
    if not other:
        return f"Rows marked (published) are the paper's numbers ({PUBLISHED}), not results of this toolkit."
    where = "; ".join(dict.fromkeys(data_line(run) for run in other))
    return (
        f"Rows marked (published) are the paper's numbers ({PUBLISHED}), not results of this toolkit. "
        f"Not comparable: the runs above were asked on other data ({where})."
    )
