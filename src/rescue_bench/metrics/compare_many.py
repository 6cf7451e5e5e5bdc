"""Many-way paired comparison of runs: every pair's difference on the instances all runs share, adjusted
p-values, and the rank groups of each metric.

Per task, the runs are aligned on the instance ids they all have (so every pair is compared on the same
instances). Per scope and headline metric, one set of cluster-bootstrap resamples (conversations, within
scenario, seeded as :func:`~rescue_bench.metrics.bootstrap.paired_cluster_bootstrap_cis`) is shared by all
runs: each pair gets the percentile CI of A - B and a two-sided p-value from the standard error of the
resampled differences (:func:`~rescue_bench.metrics.separation.normal_p`: no floor from the number of
resamples, never below the floor of the conversations, :mod:`rescue_bench.metrics.separation` says why). With
two runs the CI is exactly that of ``compare A B``. The p-values of one metric and scope (all pairs: one
family) are adjusted together (:func:`~rescue_bench.metrics.multiplicity.adjust`, Holm by default), and
models whose adjusted p-value is not below the level cannot be told apart
(:func:`~rescue_bench.metrics.multiplicity.rank_groups`). Where the conversations cannot support a single
separation (:class:`~rescue_bench.metrics.separation.Resolution`), a metric gets no groups. McNemar's exact
test on top-1 correctness is added for the tasks that have it, adjusted the same way.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from itertools import combinations

from pydantic import BaseModel, ConfigDict

from rescue_bench.errors import ConfigError
from rescue_bench.metrics.aggregate import LineInput, scope_labels, scope_records, spec_of, typed_records
from rescue_bench.metrics.bootstrap import percentile_interval
from rescue_bench.metrics.compare import (
    first_repeat,
    mcnemar,
    paired_draws,
    repeat_count,
    repeat_mean_values,
    shared_instances,
)
from rescue_bench.metrics.multiplicity import Adjustment, adjust, rank_groups
from rescue_bench.metrics.plan import correct_top1, metric_plan
from rescue_bench.metrics.separation import (
    Resolution,
    floored,
    method_legend,
    normal_p,
    resolution_legend,
)
from rescue_bench.metrics.spec import MetricSpec
from rescue_bench.rundir import PredictionLine


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PairDiff(_Record):
    """Run ``a`` minus run ``b`` (indices into the compared runs) on one metric."""

    a: int
    b: int
    diff: float | None
    ci: tuple[float, float] | None
    p: float | None
    p_adjusted: float | None


class MetricMatrix(_Record):
    """One headline metric of one scope: each run's value, every pair's difference, the rank groups."""

    metric: str
    values: tuple[float | None, ...]
    pairs: tuple[PairDiff, ...]
    groups: tuple[str, ...]
    """Per run, the letters of its rank groups (``a`` = best); runs sharing a letter cannot be told apart.
    All empty when the data cannot separate any pair (``resolution``)."""
    resolution: Resolution
    """How fine a separation the conversations allow; :meth:`Resolution.reason`: why there are no groups."""


class McNemarPair(_Record):
    a: int
    b: int
    a_only: int
    b_only: int
    p: float
    p_adjusted: float


class ScopeMatrix(_Record):
    n: int
    clusters: int
    """Conversations the instances come from (the bootstrap's units)."""
    metrics: tuple[MetricMatrix, ...]
    mcnemar: tuple[McNemarPair, ...] = ()


class TaskMatrix(_Record):
    task: str
    n_shared: int
    only: tuple[int, ...]
    """Per run, its instances that some other run lacks (left out of the comparison)."""
    scopes: dict[str, ScopeMatrix]


class ManyComparison(_Record):
    """The whole comparison; ``runs`` are the display names, in the order given."""

    runs: tuple[str, ...]
    adjust: Adjustment
    level: float
    n_resamples: int
    seed: int
    tasks: tuple[TaskMatrix, ...]
    tasks_left_out: tuple[str, ...]
    """Tasks that not every run has."""

    def task(self, name: str) -> TaskMatrix | None:
        return next((t for t in self.tasks if t.task == name), None)

    def resolutions(
        self, scope: str = "all", shown: Collection[tuple[str, str]] | None = None
    ) -> list[tuple[str, Resolution]]:
        """``("ITP f1", resolution)`` of each metric of ``scope`` (those ``(task, metric)`` in ``shown``)."""
        return [
            (f"{task.task.upper()} {matrix.metric}", matrix.resolution)
            for task in self.tasks
            if scope in task.scopes
            for matrix in task.scopes[scope].metrics
            if shown is None or (task.task, matrix.metric) in shown
        ]

    def legend(self, scope: str = "all", shown: Collection[tuple[str, str]] | None = None) -> str:
        """The rank groups' legend: what they mean and how they are made, the resolution of the metrics
        shown, and each of them without groups with the reason (:mod:`rescue_bench.metrics.separation`)."""
        found = resolution_legend(self.resolutions(scope, shown))
        return method_legend(self.adjust, self.level) + (f" {found}" if found else "")


def aligned_records(
    task: str, runs: Sequence[Sequence[PredictionLine]]
) -> tuple[list[list[PredictionLine]], tuple[int, ...]]:
    """Each run's records on the instance ids all runs share (sorted), and how many each run has beyond them.

    Raises:
        ConfigError: a shared instance has another gold answer or scenario in some run.
    """
    shared = set.intersection(*({r.instance_id for r in run} for run in runs))
    out = []
    for run in runs:
        kept = [r for r in run if r.instance_id in shared]
        shared_instances(task, runs[0], kept)  # the gold check, against the first run
        out.append(sorted(kept, key=lambda r: r.key))
    return out, tuple(len({r.instance_id for r in run}) - len(shared) for run in runs)


def compare_scope_many(
    spec: MetricSpec,
    runs: Sequence[Sequence[PredictionLine]],
    labels: Sequence[str],
    *,
    method: Adjustment,
    level: float,
    n_resamples: int,
    seed: int,
) -> ScopeMatrix:
    """The matrices of one scope (every run's records aligned on the same instances)."""
    draws = paired_draws(metric_plan(spec, labels), runs, n_resamples, seed)
    points = [repeat_mean_values(spec, run, labels) for run in runs]
    pairs = list(combinations(range(len(runs)), 2))
    clusters = len({r.sample_id for r in runs[0]})
    metrics = []
    for name in spec.headline:
        values = tuple(p[name] for p in points)
        raw: list[tuple[float | None, tuple[float, float] | None, float]] = []
        for a, b in pairs:
            va, vb = values[a], values[b]
            d = draws[a][name] - draws[b][name]
            if va is None or vb is None:
                raw.append((None, None, 1.0))
            else:
                raw.append((va - vb, percentile_interval(d), floored(normal_p(va - vb, d), clusters)))
        resolution = Resolution.of(clusters, sum(r[0] is not None for r in raw), level, method)
        metrics.append(_matrix(name, values, pairs, raw, method, level, resolution))
    tests: tuple[McNemarPair, ...] = ()
    if spec.mcnemar:
        hits = [[correct_top1(spec.kind, r) for r in first_repeat(run)] for run in runs]
        found = [mcnemar(hits[a], hits[b]) for a, b in pairs]
        adjusted = adjust([float(f["p_exact"]) for f in found], method)
        tests = tuple(
            McNemarPair(a=a, b=b, a_only=f["a_only"], b_only=f["b_only"], p=f["p_exact"], p_adjusted=q)
            for (a, b), f, q in zip(pairs, found, adjusted, strict=True)
        )
    n = len({r.instance_id for r in runs[0]})
    return ScopeMatrix(n=n, clusters=clusters, metrics=tuple(metrics), mcnemar=tests)


def _matrix(
    name: str,
    values: tuple[float | None, ...],
    pairs: Sequence[tuple[int, int]],
    raw: Sequence[tuple[float | None, tuple[float, float] | None, float]],
    method: Adjustment,
    level: float,
    resolution: Resolution,
) -> MetricMatrix:
    tested = [i for i, (diff, _, _) in enumerate(raw) if diff is not None]
    adjusted = dict(zip(tested, adjust([raw[i][2] for i in tested], method), strict=True))
    different = [[False] * len(values) for _ in values]
    out = []
    for i, ((a, b), (diff, ci, p)) in enumerate(zip(pairs, raw, strict=True)):
        q = adjusted.get(i)
        different[a][b] = different[b][a] = q is not None and q < level
        out.append(PairDiff(a=a, b=b, diff=diff, ci=ci, p=p if diff is not None else None, p_adjusted=q))
    groups = tuple(rank_groups(values, different)) if resolution.supported else ("",) * len(values)
    return MetricMatrix(metric=name, values=values, pairs=tuple(out), groups=groups, resolution=resolution)


def _same_repeats(task: str, runs: Sequence[Sequence[PredictionLine]], names: Sequence[str]) -> None:
    counts = [repeat_count(run) for run in runs]
    if len(set(counts)) > 1:
        listed = ", ".join(f"{name} {k}" for name, k in zip(names, counts, strict=True))
        raise ConfigError(
            f"compare {task}: the runs have different repeats ({listed}); compare runs with the same repeats"
        )


def compare_many(
    records: Sequence[Mapping[str, Sequence[LineInput]]],
    names: Sequence[str],
    specs: Mapping[str, MetricSpec],
    *,
    labels_by_scenario: Mapping[str, Sequence[str]] | None = None,
    method: Adjustment = "holm",
    level: float = 0.05,
    n_resamples: int = 1000,
    seed: int = 0,
) -> ManyComparison:
    """Compare every pair of runs on every task they all have (``records``: per run, task -> records).

    Raises:
        ConfigError: fewer than two runs, a level outside (0, 1), or runs that disagree on a gold answer.
    """
    if len(records) < 2 or len(names) != len(records):
        raise ConfigError("compare needs at least two runs")
    if not 0.0 < level < 1.0:
        raise ConfigError(f"--level must lie in (0, 1) (got {level})")
    common = [t for t in records[0] if all(t in r for r in records[1:])]
    tasks = []
    for task in common:
        spec = spec_of(task, specs)
        lines = [typed_records(task, run[task], spec) for run in records]
        _same_repeats(task, lines, names)
        aligned, only = aligned_records(task, lines)
        scoped = [scope_records(run) for run in aligned]
        scopes = {}
        for scope, members in scoped[0].items():
            if not members:
                continue
            labels = scope_labels(members, labels_by_scenario) if spec.kind == "multiclass" else ()
            runs = [s[scope] for s in scoped]
            scopes[scope] = compare_scope_many(
                spec, runs, labels, method=method, level=level, n_resamples=n_resamples, seed=seed
            )
        tasks.append(TaskMatrix(task=task, n_shared=len(aligned[0]), only=only, scopes=scopes))
    left_out = sorted({t for r in records for t in r} - set(common))
    return ManyComparison(
        runs=tuple(names),
        adjust=method,
        level=level,
        n_resamples=n_resamples,
        seed=seed,
        tasks=tuple(tasks),
        tasks_left_out=tuple(left_out),
    )
