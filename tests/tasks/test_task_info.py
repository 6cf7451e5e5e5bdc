"""Task facts in each module's INFO, the lists derived from them, and loading tasks from entry points."""

from __future__ import annotations

import sys
import types
from dataclasses import replace
from importlib.metadata import EntryPoint, entry_points

import pytest

from rescue_bench.errors import ConfigError
from rescue_bench.judge import rubric
from rescue_bench.metrics import spec as metric_spec
from rescue_bench.report import paper
from rescue_bench.tasks import (
    TASK_NAMES,
    TASKS,
    judged_tasks,
    mcnemar_tasks,
    metric_specs,
    paper_columns,
    percent_tasks,
    tasks_of_kind,
)
from rescue_bench.tasks import itp as itp_module
from rescue_bench.tasks.base import check_task
from rescue_bench.tasks.registry import GROUP, load_tasks

PAPER_ORDER = ("itp", "rpp", "stp", "ssp", "er", "vp")


def test_a_task_states_its_facts_once_in_its_info() -> None:
    for name, task in TASKS.items():
        check_task(task, name)
        assert task.INFO.name == name
        stated = {"NAME", "KIND", "DEFAULT_BATCH_SIZE", "DEFAULT_CONTEXT_SIZE", "MAX_TOKENS"}
        assert not stated & set(vars(task)), f"{name} states a fact of its INFO again"


def test_paper_columns_follow_the_published_table() -> None:
    """The registry's Table 5 columns are the paper's, in its order (report/paper.py copies the paper)."""
    assert [(task, column.metric) for task, column in paper_columns()] == list(paper.COLUMNS)
    assert [column.header for _, column in paper_columns()][:3] == ["ITP Prec.", "ITP Rec.", "ITP F1"]


def test_derived_lists() -> None:
    assert TASK_NAMES == PAPER_ORDER
    assert judged_tasks() == ("er", "vp") == rubric.JUDGE_TASKS
    assert percent_tasks() == mcnemar_tasks() == ("itp", "rpp", "stp", "ssp")
    assert tasks_of_kind("ranking") == ("stp", "ssp") and tasks_of_kind("generation") == ("er", "vp")


def test_each_task_has_the_metric_spec_of_its_answer_form() -> None:
    assert metric_specs() == {
        "itp": metric_spec.BINARY_YES_NO,
        "rpp": metric_spec.MULTICLASS_TOP3,
        "stp": metric_spec.RANKING_TOP3,
        "ssp": metric_spec.RANKING_TOP3,
        "er": metric_spec.EMOTION_SCORES,
        "vp": metric_spec.VIEWPOINT_SCORES,
    }


def fake_task(monkeypatch: pytest.MonkeyPatch, module: str, name: str, **changes: object) -> None:
    """A module ``module`` that is ITP under another name and without a place in the paper's order,
    importable by path."""
    fake = types.ModuleType(module)
    fake.__dict__.update({k: v for k, v in vars(itp_module).items() if not k.startswith("__")})
    fake.INFO = replace(itp_module.INFO, name=name, paper_position=None)  # type: ignore[attr-defined]
    fake.__dict__.update(changes)
    monkeypatch.setitem(sys.modules, module, fake)


def point(name: str, value: str) -> EntryPoint:
    return EntryPoint(name, value, GROUP)


def test_outside_tasks_follow_the_built_ins_sorted_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_task(monkeypatch, "fake_ztp", "ztp")
    fake_task(monkeypatch, "fake_atp", "atp")
    installed = list(entry_points(group=GROUP))
    found = [
        point("ztp", "fake_ztp"),
        *reversed(installed),  # the group's order is not the paper's
        point("atp", "fake_atp"),
        point("atp", "fake_atp"),  # the same distribution seen twice on the path
        EntryPoint("other", "fake_other", "another.group"),
    ]
    tasks = load_tasks(found)
    assert tuple(tasks) == (*PAPER_ORDER, "atp", "ztp")
    assert tasks["atp"] is sys.modules["fake_atp"]
    assert {point.name for point in installed} == set(PAPER_ORDER)  # the install declares the built-ins
    assert tuple(load_tasks([])) == ()  # the entry points are the one list of tasks


@pytest.mark.parametrize(
    ("found", "message"),
    [
        (
            [point("xtp", "no_such_module_anywhere")],
            r"entry point xtp = 'no_such_module_anywhere'.*cannot import",
        ),
        (
            [point("xtp", "fake_ytp"), point("xtp", "fake_xtp")],
            r"xtp = 'fake_xtp'.*also registered as 'fake_ytp'",
        ),
        (
            [point("itp", "fake_xtp"), point("itp", "rescue_bench.tasks.itp")],
            r"itp.*also registered as 'rescue_bench.tasks.itp'",
        ),
        ([point("ytp", "fake_xtp")], r"entry point ytp = 'fake_xtp'.*INFO.name is 'xtp', not 'ytp'"),
        ([point("xtp", "fake_xtp:thing")], r"entry point xtp.*module path"),
    ],
)
def test_broken_or_duplicate_plugins_are_config_errors(
    monkeypatch: pytest.MonkeyPatch, found: list[EntryPoint], message: str
) -> None:
    fake_task(monkeypatch, "fake_xtp", "xtp")
    fake_task(monkeypatch, "fake_ytp", "xtp")
    with pytest.raises(ConfigError, match=message):
        load_tasks(found)


def test_a_module_that_is_not_a_task_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fake_empty", types.ModuleType("fake_empty"))
    with pytest.raises(ConfigError, match=r"entry point xtp = 'fake_empty'.*lacks INFO, build"):
        load_tasks([point("xtp", "fake_empty")])
    fake_task(monkeypatch, "fake_noinfo", "xtp", INFO={"name": "xtp"})
    with pytest.raises(ConfigError, match="INFO is a dict, not a TaskInfo"):
        load_tasks([point("xtp", "fake_noinfo")])


def test_a_task_is_judged_when_it_has_a_judge_rubric() -> None:
    assert all(task.INFO.judged == (task.INFO.judge is not None) for task in TASKS.values())


def test_judge_floors_and_scales_follow_the_paper_ranges() -> None:
    """Paper section 4.2: ER emotion 1-5; VP pairing 0-2 plus viewpoint 0-4, a total of 0-6."""
    er, vp = TASKS["er"].INFO.judge, TASKS["vp"].INFO.judge
    assert er is not None and vp is not None
    assert (er.score_keys, er.floors, er.scale) == (("s_emo",), {"s_emo": 1.0}, (1, 2, 3, 4, 5))
    assert vp.score_keys == ("pairing", "viewpoint", "total")
    assert vp.floors == {"pairing": 0.0, "viewpoint": 0.0, "total": 0.0}
    assert vp.scale == tuple(range(7)) and vp.to_five(0) == 1.0 and vp.to_five(6) == 5.0


def test_a_rubric_must_name_its_agreement_score() -> None:
    vp = TASKS["vp"].INFO.judge
    assert vp is not None
    with pytest.raises(ValueError, match="lack 'llm'"):
        replace(vp, agreement_key="llm")
    with pytest.raises(ValueError, match="repeated"):
        replace(vp, fields=(*vp.fields, vp.fields[0]))
