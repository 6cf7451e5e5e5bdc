"""The baselines' shared rules: VP's random and majority answers name people as the prompt shows them."""

from __future__ import annotations

import random

from rescue_bench.data.load import load_samples
from rescue_bench.records import Instance, Prediction
from rescue_bench.tasks import vp
from rescue_bench.tasks.base import TaskConfig
from rescue_bench.tasks.guesses import other_participants, speaker_of
from rescue_bench.tasks.perturb import apply_perturbations
from rescue_bench.tasks.perturb.names import map_json, perturbation_meta, text_mapper

DEMO = load_samples("demo")


def test_the_vp_baselines_answer_in_the_names_the_prompt_shows() -> None:
    """Under name-swap a baseline answers as a model shown the renamed rows would: mapped back, its answers
    are the unperturbed ones (a renamed instance's meta keeps the original names for the records)."""
    base = [inst for sample in DEMO for inst in vp.build(sample, TaskConfig())]
    swapped = apply_perturbations(vp, DEMO, TaskConfig(), "name-swap", 3)
    assert [i.id for i in base] == [i.id for i in swapped]
    renamed = 0
    for plain, inst in zip(base, swapped, strict=True):
        assert inst.context is not None and speaker_of(inst) == inst.context.speaker
        assert set(other_participants(inst)) <= set(inst.context.participants)
        back = text_mapper(perturbation_meta(inst.meta).names)
        renamed += speaker_of(inst) != speaker_of(plain)
        assert back(speaker_of(inst)) == speaker_of(plain)
        assert [back(p) for p in other_participants(inst)] == other_participants(plain)

        def answer(instance: Instance) -> Prediction:
            return vp.random_answer(instance, random.Random(instance.id))

        assert map_json(answer(inst).value, back) == answer(plain).value
    assert renamed > 0  # the check saw renamed speakers
    majority = {p.instance_id: p.value for p in vp.majority_answers(swapped)}
    plain_majority = {p.instance_id: p.value for p in vp.majority_answers(base)}
    for inst in swapped:
        back = text_mapper(perturbation_meta(inst.meta).names)
        assert map_json(majority[inst.id], back) == plain_majority[inst.id]
