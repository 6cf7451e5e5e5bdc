"""VP's options and scoring: the judge's request, the recorded readings, the derived ``llm``."""

from __future__ import annotations

import pytest

from rescue_bench.errors import DataError
from rescue_bench.tasks import vp_scoring


def test_the_vp_judge_request_is_lenient_about_near_synonyms() -> None:
    from rescue_bench.judge.rubric import JudgeItem, render

    gold = [{"source": "Ana", "target": "Ben", "viewpoint": "he never listens", "attitude": "negative"}]
    request = render(
        [JudgeItem("s::vp::1", "vp", gold, [{"source": "Ana", "target": "Ben", "viewpoint": "x"}])]
    )
    system = request.messages[0]["content"]
    assert isinstance(system, str)
    assert "Be lenient about paraphrases and near-synonyms." in system


def test_the_vp_readings_are_recorded_and_named() -> None:
    default = vp_scoring.recorded_options({"task_options": {"vp": {"checkpoints_per_sample": 5}}})
    assert default == vp_scoring.Options() and vp_scoring.reading_label(default) is None
    chosen = vp_scoring.recorded_options(
        {"task_options": {"vp": {"bert": "precision-aware", "judge_scale": "integer"}}}
    )
    rules = vp_scoring.scoring_rules(chosen)
    assert "greedy one-to-one matching" in rules["bertscore_f1"] and "rounded" in rules["llm"]
    assert vp_scoring.scoring_rules(default) == dict(vp_scoring.JUDGE.rules)


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"task_options": None}, "config.task_options"),
        ({"task_options": {"vp": "precision-aware"}}, "config.task_options.vp"),
        ({"task_options": {"vp": {"judge_scale": 2}}}, "config.task_options.vp.judge_scale"),
    ],
)
def test_a_damaged_recorded_option_is_an_error_naming_the_field(
    config: dict[str, object], field: str
) -> None:
    """A run.json whose VP options are damaged is not read as the defaults (its scores would be labelled
    with readings the run may not have used)."""
    with pytest.raises(DataError) as caught:
        vp_scoring.recorded_options(config)
    assert str(caught.value).startswith(f"run.json: {field}: ")


def test_other_tasks_options_and_other_config_keys_are_not_vps() -> None:
    config = {"protocol": 4, "task_options": {"rpp": {"gold_field": "auto"}}, "video": None}
    assert vp_scoring.recorded_options(config) == vp_scoring.DEFAULT_OPTIONS


def test_llm_is_derived_from_the_judges_total_only_when_scored() -> None:
    assert vp_scoring.derived_scores({"total": 3, "pairing": 1.0}, [], [], True) == {"llm": 3.0}
    assert vp_scoring.derived_scores({"total": None}, [], [], True) == {"llm": None}
    assert vp_scoring.derived_scores({"bertscore_f1": 0.5}, [], [], False) == {"llm": None}
