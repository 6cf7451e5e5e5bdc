"""Baselines: deterministic per seed, values in each task's shape, a majority prior per scenario."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import replace
from typing import Literal

import pytest

from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Generation, Provider
from rescue_bench.models.baselines import make_baseline
from rescue_bench.records import Instance, Json, Prediction, Request, Shown
from rescue_bench.tasks.er import EMOTION_PHRASES

PEOPLE = ("Nadia", "Tom", "Therapist")
LABELS = (
    "pursue_withdraw",
    "attack_attack",
    "withdraw_withdraw",
    "repair_softening",
    "constructive_alignment",
)


def inst(
    task: str,
    n: int,
    gold: Json,
    *,
    scenario: Literal["couple", "family"] = "couple",
    candidates: tuple[str, ...] = (),
    speaker: str = "Nadia",
) -> Instance:
    meta: dict[str, Json] = {"speaker": speaker, "participants": list(PEOPLE)}
    return Instance(
        f"s{n // 10}::{task}::{n}",
        task,
        f"s{n // 10}",
        scenario,
        n,
        gold,
        candidates,
        Shown("dialogue", 3, speaker=speaker, participants=PEOPLE),  # what the baselines' VP rules read
        meta,
    )


def mixed_instances() -> list[Instance]:
    out = []
    for n in range(40):
        out.append(inst("itp", n, "yes" if n % 3 else "no"))
        out.append(inst("rpp", n, LABELS[n % 2], candidates=LABELS))
        out.append(inst("stp", n, "Tom", candidates=PEOPLE))
        out.append(inst("ssp", n, "evoke", candidates=("evoke", "reflect", "counterbalance", "validate")))
        out.append(inst("er", n, {"emotion": "feels hurt", "intensity": n % 11}))
        out.append(inst("vp", n, [{"source": "Nadia", "target": "Tom", "viewpoint": "x", "attitude": "y"}]))
    return out


def values(preds: list[Prediction]) -> dict[str, Json]:
    return {p.instance_id: p.value for p in preds}


def test_random_is_deterministic_per_seed_and_independent_of_order() -> None:
    instances = mixed_instances()
    first = values(make_baseline("random", 1).predict(instances))
    again = values(make_baseline("random", 1).predict(list(reversed(instances))))
    other = values(make_baseline("random", 2).predict(instances))
    assert first == again
    assert sum(first[k] != other[k] for k in first) > len(first) // 3


def test_random_values_have_the_task_shapes() -> None:
    preds = make_baseline("random", 0).predict(mixed_instances())
    by_task = {p.instance_id: p for p in preds}
    for i in mixed_instances():
        pred = by_task[i.id]
        assert pred.valid and not pred.problems
        if i.task == "itp":
            assert pred.value in ("yes", "no")
        elif i.task in ("rpp", "stp", "ssp"):
            assert len(pred.value) == min(3, len(i.candidates))
            assert len(set(pred.value)) == len(pred.value)
            assert set(pred.value) <= set(i.candidates)
        elif i.task == "er":
            assert pred.value["emotion"] in EMOTION_PHRASES
            assert isinstance(pred.value["intensity"], int) and 0 <= pred.value["intensity"] <= 10
        else:
            [view] = pred.value
            assert view["source"] == "Nadia" and view["target"] in ("Tom", "Therapist")
            assert isinstance(view["viewpoint"], str) and view["viewpoint"]


def test_random_covers_the_answer_sets_about_uniformly() -> None:
    preds = make_baseline("random", 3).predict([inst("itp", n, "yes") for n in range(600)])
    yes = sum(p.value == "yes" for p in preds)
    assert 250 < yes < 350
    tops = Counter(
        p.value[0]
        for p in make_baseline("random", 3).predict(
            [inst("rpp", n, "x", candidates=LABELS) for n in range(600)]
        )
    )
    assert set(tops) == set(LABELS) and min(tops.values()) > 80


def test_random_without_candidates_is_a_counted_miss() -> None:
    [pred] = make_baseline("random", 0).predict([inst("stp", 1, "Tom")])
    assert not pred.valid and pred.problems[0].startswith("missing:")


def test_majority_uses_the_commonest_gold_per_scenario() -> None:
    couple = [inst("itp", n, "yes" if n < 7 else "no") for n in range(10)]
    family = [inst("itp", 100 + n, "no" if n < 6 else "yes", scenario="family") for n in range(10)]
    preds = values(make_baseline("majority", 0).predict(couple + family))
    assert {preds[i.id] for i in couple} == {"yes"}
    assert {preds[i.id] for i in family} == {"no"}


def test_majority_ranks_candidates_by_gold_frequency() -> None:
    golds = ["attack_attack"] * 5 + ["repair_softening"] * 3 + ["pursue_withdraw"]
    batch = [inst("rpp", n, g, candidates=LABELS) for n, g in enumerate(golds)]
    batch.append(inst("rpp", 50, "attack_attack", candidates=("withdraw_withdraw", "repair_softening")))
    preds = values(make_baseline("majority", 0).predict(batch))
    assert preds[batch[0].id] == ["attack_attack", "repair_softening", "pursue_withdraw"]
    assert preds[batch[-1].id] == ["repair_softening", "withdraw_withdraw"]


def test_majority_er_and_vp() -> None:
    er = [
        inst("er", n, {"emotion": e, "intensity": i})
        for n, (e, i) in enumerate(
            [("feels hurt", 6), ("feels hurt", 7), ("feels angry", 7), ("feels sad", 7)]
        )
    ]
    views = ["she never listens", "she never listens", "he tries hard"]
    vp = [
        inst("vp", 10 + n, [{"source": "Nadia", "target": "Tom", "viewpoint": v, "attitude": "a"}])
        for n, v in enumerate(views)
    ]
    preds = values(make_baseline("majority", 0).predict(er + vp))
    assert preds[er[0].id] == {"emotion": "feels hurt", "intensity": 7}
    assert preds[vp[0].id] == [{"source": "Nadia", "target": "Tom", "viewpoint": "she never listens"}]


def test_majority_does_not_depend_on_instance_order() -> None:
    instances = mixed_instances()
    shuffled = list(instances)
    random.Random(5).shuffle(shuffled)
    baseline = make_baseline("majority", 0)
    assert values(baseline.predict(instances)) == values(baseline.predict(shuffled))


def test_identities_and_protocol() -> None:
    rnd, maj = make_baseline("random", 9), make_baseline("majority", 9)
    providers: list[Provider] = [rnd, maj]  # mypy checks that both are providers
    assert all(not p.capabilities.cacheable and not p.capabilities.has_endpoint for p in providers)
    assert all(not p.capabilities.batch_export for p in providers)
    assert rnd.identity()["seed"] == 9
    assert maj.identity()["oracle_prior"] is True and "oracle" in str(maj.identity()["note"])


def test_unknown_names_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="baseline/random or baseline/majority"):
        make_baseline("median", 0)
    with pytest.raises(ConfigError, match="unknown task 'xyz'"):
        make_baseline("random", 0).predict([inst("xyz", 1, "a")])
    with pytest.raises(ConfigError, match="unknown task 'xyz'"):
        make_baseline("majority", 0).predict([inst("xyz", 1, "a")])


@pytest.mark.parametrize("name", ["random", "majority"])
def test_baselines_answer_every_real_task_instance_validly(name: str) -> None:
    from rescue_bench.data.load import load_samples
    from rescue_bench.tasks import TASK_NAMES, TASKS, build_instances
    from rescue_bench.tasks.base import TaskConfig

    samples = load_samples("demo")
    baseline = make_baseline(name, 0)
    for task_name in TASK_NAMES:
        task = TASKS[task_name]
        cfg = TaskConfig(context_size=task.INFO.default_context_size, batch_size=task.INFO.default_batch_size)
        instances = build_instances(task, samples, cfg)
        preds = baseline.predict(instances)
        assert [p.instance_id for p in preds] == [i.id for i in instances]
        assert all(p.valid for p in preds), [p for p in preds if not p.valid][:3]
        for pred, instance in zip(preds, instances, strict=True):
            if task_name in ("rpp", "stp", "ssp"):
                assert set(pred.value) <= set(instance.candidates)
            task.score(pred, instance)


def test_a_request_is_answered_with_the_prior_of_every_prepared_instance() -> None:
    couple = [inst("itp", n, "yes" if n < 2 else "no") for n in range(5)]  # prior "no" over all five
    baseline = make_baseline("majority", 0)
    baseline.prepare(couple)
    request = Request("itp", ({"role": "user", "content": "?"},), {}, (couple[0].id, couple[1].id))
    reply = asyncio.run(baseline.complete(request, Generation()))
    assert reply.ok and reply.predictions is not None
    assert [p.value for p in reply.predictions] == ["no", "no"]  # the first two alone would say "yes"
    unknown = replace(request, instance_ids=("nope",))
    [missing] = asyncio.run(baseline.complete(unknown, Generation())).predictions or ()
    assert not missing.valid and missing.problems[0].startswith("missing")


def test_random_answers_a_request_as_it_predicts() -> None:
    instances = mixed_instances()
    baseline = make_baseline("random", 4)
    baseline.prepare(instances)
    request = Request("mixed", (), {}, tuple(i.id for i in instances))
    reply = asyncio.run(baseline.complete(request, Generation()))
    assert reply.predictions == tuple(make_baseline("random", 4).predict(instances))
