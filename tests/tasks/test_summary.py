"""Counts, row references and export records behind the ``tasks`` commands."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rescue_bench.data.schema import Sample
from rescue_bench.errors import ConfigError
from rescue_bench.tasks import TASKS
from rescue_bench.tasks.base import TaskConfig
from rescue_bench.tasks.summary import export_records, find_instance, instance_counts, parse_row_ref


def test_counts_pool_scenarios_and_count_only_contributing_samples(
    make_sample: Callable[..., Sample],
) -> None:
    couple = make_sample(["Ana", "Ben", "Therapist", "Ana"], sample_id="c/1")
    silent = make_sample(["Ana", "Ana"], sample_id="c/2")
    family = make_sample(["Ana", "Therapist"], scenario="family", participants=["Ana", "Cy"], sample_id="f/1")
    counts = instance_counts([couple, silent, family], TaskConfig())
    assert counts["itp"] == {
        "couple": {"instances": 2, "samples": 1},
        "family": {"instances": 0, "samples": 0},
        "all": {"instances": 2, "samples": 1},
    }
    assert counts["er"]["all"] == {"instances": 0, "samples": 0}


@pytest.mark.parametrize("text", ["no-colon", ":3", "a:b", "a:"])
def test_bad_row_references(text: str) -> None:
    with pytest.raises(ConfigError, match="SAMPLE:ROW"):
        parse_row_ref(text)


def test_find_instance_names_the_rows_that_have_one(make_sample: Callable[..., Sample]) -> None:
    sample = make_sample(["Ana", "Ben", "Therapist", "Ana"], sample_id="c/1")
    assert find_instance(TASKS["itp"], [sample], "c/1", 2, TaskConfig()).gold == "yes"
    with pytest.raises(ConfigError, match=r"no itp instance at row 3 \(rows with one: 1, 2\)"):
        find_instance(TASKS["itp"], [sample], "c/1", 3, TaskConfig())
    with pytest.raises(ConfigError, match="no sample 'c/9'"):
        find_instance(TASKS["itp"], [sample], "c/9", 1, TaskConfig())


def test_export_records_carry_the_one_instance_request(make_sample: Callable[..., Sample]) -> None:
    sample = make_sample(["Ana", "Ben", "Therapist", "Ana"], sample_id="c/1")
    records = list(export_records(TASKS["itp"], [sample], TaskConfig(context_size=1)))
    assert [(r["row_index"], r["gold"], r["context_size"]) for r in records] == [(1, "no", 1), (2, "yes", 1)]
    last_line = "[2] Ben -> Therapist (5-9s): words of row 2 spoken here"
    assert records[1]["messages"][1]["content"].endswith(
        f"Item c1 (the moment right after row 2):\n{last_line}"
    )
