"""A run's plans: one config for its tasks (their rendered rows shared), each task's sizes resolved once."""

from __future__ import annotations

from rescue_bench.data.load import load_samples
from rescue_bench.engine.plans import build_plans, select_samples
from rescue_bench.records import Instance
from rescue_bench.spec import RunSpec
from rescue_bench.tasks import TASKS


def row_ids(instances: tuple[Instance, ...]) -> dict[tuple[str, int], int]:
    """(sample, row) -> the id of the record object shown for it."""
    return {
        (inst.sample_id, row["row_index"]): id(row)
        for inst in instances
        if inst.context is not None
        for row in inst.context.rows
    }


def test_the_tasks_of_a_run_share_the_rows_rendered_for_it_and_no_other_run_does() -> None:
    spec = RunSpec(model="baseline/random", data="demo", tasks=["itp", "rpp"], limit_samples=2)
    samples = select_samples(load_samples("demo"), spec)
    itp, rpp = build_plans(samples, spec)
    shown_by_both = row_ids(itp.instances).keys() & row_ids(rpp.instances).keys()
    assert len(shown_by_both) > 10
    assert all(row_ids(itp.instances)[key] == row_ids(rpp.instances)[key] for key in shown_by_both)
    again = build_plans(samples, spec)  # another run over the same sample objects renders its own rows
    assert not set(row_ids(again[1].instances).values()) & set(row_ids(rpp.instances).values())
    assert [i.context for i in again[1].instances] == [i.context for i in rpp.instances]


def test_a_plan_holds_its_tasks_sizes_resolved() -> None:
    spec = RunSpec(model="baseline/random", data="demo", tasks=["itp", "rpp"], limit_samples=1)
    itp, rpp = build_plans(select_samples(load_samples("demo"), spec), spec)
    assert (itp.cfg.context_size, itp.cfg.batch_size) == (3, TASKS["itp"].INFO.default_batch_size)
    assert (rpp.cfg.context_size, rpp.cfg.batch_size) == (-1, TASKS["rpp"].INFO.default_batch_size)
    given = RunSpec(model="baseline/random", data="demo", tasks=["rpp"], limit_samples=1, context_size=2)
    (plan,) = build_plans(select_samples(load_samples("demo"), given), given)
    assert plan.cfg.context_size == 2 and all(len(i.context.rows) <= 2 for i in plan.instances)  # type: ignore[union-attr]
