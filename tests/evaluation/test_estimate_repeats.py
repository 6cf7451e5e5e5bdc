"""`estimate` counts every repeat: model requests times ``repeats``, judge requests times ``repeats`` x
``judge_repeats``, BERTScore pairs times ``repeats``."""

from __future__ import annotations

from rescue_bench.data.load import load_samples
from rescue_bench.engine.plans import TaskPlan, build_plans, select_samples
from rescue_bench.evaluation.estimate import estimate_plan
from rescue_bench.judge.estimate import bertscore_pairs, estimate_judge
from rescue_bench.pricing import chars_counter
from rescue_bench.spec import validate_spec


def plans(**changes: object) -> list[TaskPlan]:
    spec = validate_spec({"model": "baseline/random", "data": "demo", "tasks": "er,vp,itp", **changes})
    return build_plans(select_samples(load_samples(spec.data), spec), spec)


def test_repeats_multiply_requests_tokens_and_judge_asks() -> None:
    counter = chars_counter()
    once, thrice = plans(), plans(repeats=3)
    for a, b in zip(once, thrice, strict=True):
        one, three = estimate_plan(a, counter), estimate_plan(b, counter)
        assert (three.instances, three.requests) == (3 * one.instances, 3 * one.requests)
        assert (
            three.prompt_tokens == 3 * one.prompt_tokens
            and three.max_output_tokens == 3 * one.max_output_tokens
        )
    base = estimate_judge("openai/j", once, counter)
    both = estimate_judge("openai/j", thrice, counter, judge_repeats=2)
    assert base.requests > 0 and both.requests == 6 * base.requests and both.reasks == 6 * base.reasks
    assert both.instances == 6 * base.instances and both.prompt_tokens == 6 * base.prompt_tokens
    instances, pairs = bertscore_pairs(once)
    assert bertscore_pairs(thrice) == (3 * instances, 3 * pairs)


def test_circular_eval_estimates_each_rotation_prompt() -> None:
    counter = chars_counter()
    plain = {p.name: p for p in plans(tasks="ssp")}
    circular = {p.name: p for p in plans(tasks="ssp", perturb="label-order:all")}
    one, all_ = estimate_plan(plain["ssp"], counter), estimate_plan(circular["ssp"], counter)
    k = circular["ssp"].repeats
    assert k > 1 and all_.requests == k * one.requests and all_.instances == k * one.instances
