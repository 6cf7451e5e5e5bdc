"""Name perturbations: participants' names exchanged (``name-swap``) or replaced by role labels
(``anonymize``), consistently in everything a prompt shows and in the gold.

The mapping is applied to the *built* instances (transcript lines, the people line, candidates, the speaker,
the SSP target, the gold), never to the sample, so the instance set cannot change: word counts (ER's
``min_dialogue_words``) and speaker equalities that select instances are read from the original sample.
Every mapped instance records the inverse mapping in ``meta["perturbation"]["names"]``, which
:func:`restore_names` uses to compare its answers with an unperturbed run's.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from string import ascii_uppercase

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.data.schema import Sample
from rescue_bench.records import Instance, Json, Shown
from rescue_bench.rundir import PredictionLine
from rescue_bench.tasks.context import clean
from rescue_bench.taxonomy import NON_CLIENT_SPEAKERS

NameMap = dict[str, str]
META_KEY = "perturbation"


def participants(sample: Sample) -> tuple[str, ...]:
    """The sample's participants, cleaned, without empties, group speakers or repeats, in order."""
    names = (clean(p) for p in sample.participants)
    return tuple(dict.fromkeys(n for n in names if n and n not in NON_CLIENT_SPEAKERS))


def swap_map(sample: Sample, seed: int) -> NameMap:
    """A seeded cyclic exchange of the participants' names (two names are swapped); empty for fewer than two.

    A cycle over a seeded order moves every name, so no participant keeps their own name.
    """
    names = list(participants(sample))
    if len(names) < 2:
        return {}
    random.Random(f"{seed}:name-swap:{sample.sample_id}").shuffle(names)
    return {name: names[(i + 1) % len(names)] for i, name in enumerate(names)}


def role_map(sample: Sample) -> NameMap:
    """``Partner A``, ``Partner B``... (couple) or ``Member 1``, ``Member 2``... (family), in order of first
    appearance. The release has no family roles, so parents and children cannot be told apart."""
    names = participants(sample)
    if sample.scenario == "couple":
        labels = [f"Partner {ascii_uppercase[i % 26]}{i // 26 or ''}" for i in range(len(names))]
    else:
        labels = [f"Member {i + 1}" for i in range(len(names))]
    return dict(zip(names, labels, strict=True))


def text_mapper(mapping: Mapping[str, str]) -> Callable[[str], str]:
    """Replace whole names (not inside a longer word) in one pass, so a swap never maps a name twice.

    >>> swap = text_mapper({"Tom": "Nadia", "Nadia": "Tom"})
    >>> swap("[3] Nadia -> Tom: Tom's right, Tommy.")
    "[3] Tom -> Nadia: Nadia's right, Tommy."
    """
    if not mapping:
        return lambda text: text
    names = sorted(mapping, key=lambda n: (-len(n), n))
    pattern = re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(map(re.escape, names)) + r")(?![A-Za-z0-9])")
    return lambda text: pattern.sub(lambda m: mapping[m.group(0)], text)


def map_json(value: Json, mapper: Callable[[str], str], memo: dict[int, Json] | None = None) -> Json:
    """``value`` with every string (not dict keys) mapped; containers keep their type. ``memo`` maps shared
    dicts once, so rendered rows shared by a sample's instances stay shared."""
    if isinstance(value, str):
        return mapper(value)
    if isinstance(value, dict):
        if memo is not None and id(value) in memo:
            return memo[id(value)]
        out = {key: map_json(item, mapper, memo) for key, item in value.items()}
        if memo is not None:
            memo[id(value)] = out
        return out
    if isinstance(value, list):
        return [map_json(item, mapper, memo) for item in value]
    if isinstance(value, tuple):
        return tuple(map_json(item, mapper, memo) for item in value)
    return value


class PerturbationMeta(BaseModel):
    """``meta["perturbation"]`` of a perturbed instance (and its prediction line)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    names: dict[str, str] = Field(default_factory=dict)
    """Shown name -> original name (``name-swap``, ``anonymize``): the inverse of the applied mapping."""
    label_order: list[str] = Field(default_factory=list)
    """The candidates' order shown (``label-order``)."""


class _Meta(BaseModel):
    """The part of an instance's ``meta`` the perturbations own."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    perturbation: PerturbationMeta = PerturbationMeta()


def perturbation_meta(meta: Mapping[str, Json] | None) -> PerturbationMeta:
    """The perturbation record of an instance's or a prediction line's ``meta`` (empty when unperturbed).

    >>> perturbation_meta({"perturbation": {"names": {"Tom": "Nadia"}}, "speaker": "x"}).names
    {'Tom': 'Nadia'}
    """
    return _Meta.model_validate(meta or {}).perturbation


def with_meta(inst: Instance, key: str, value: Json) -> dict[str, Json]:
    """``inst.meta`` with ``meta["perturbation"][key] = value`` (a new dict; the instance's is shared)."""
    record = perturbation_meta(inst.meta).model_dump(exclude_defaults=True)
    updated = PerturbationMeta.model_validate({**record, key: value})
    return {**inst.meta, META_KEY: updated.model_dump(mode="json", exclude_defaults=True)}


def renamed_shown(shown: Shown | None, mapper: Callable[[str], str], memo: dict[int, Json]) -> Shown | None:
    """What an instance shows with every name mapped: rows, current row, speaker, people, target and its
    emotion, and any other text. ``memo`` maps each shared row record once, so renamed rows stay shared."""
    if shown is None:
        return None

    def text(value: str | None) -> str | None:
        return None if value is None else mapper(value)

    return replace(
        shown,
        rows=tuple(map_json(row, mapper, memo) for row in shown.rows),
        current=None if shown.current is None else map_json(shown.current, mapper, memo),
        speaker=text(shown.speaker),
        participants=tuple(mapper(p) for p in shown.participants),
        target=text(shown.target),
        target_emotion=text(shown.target_emotion),
        extra={key: map_json(value, mapper, memo) for key, value in shown.extra.items()},
    )


def rename(instances: Sequence[Instance], mapping: NameMap) -> list[Instance]:
    """The instances with ``mapping`` applied to gold, candidates and context; the inverse goes to meta."""
    if not mapping:
        return list(instances)
    mapper = text_mapper(mapping)
    memo: dict[int, Json] = {}
    inverse = {new: old for old, new in mapping.items()}
    return [
        replace(
            inst,
            gold=map_json(inst.gold, mapper),
            candidates=tuple(mapper(c) for c in inst.candidates),
            context=renamed_shown(inst.context, mapper, memo),
            meta=with_meta(inst, "names", inverse),
        )
        for inst in instances
    ]


def restore_names(record: PredictionLine) -> PredictionLine:
    """A prediction line of a renamed instance with gold and prediction mapped back to the original names
    (exact: every name in them came from the mapping); other lines are returned as they are."""
    inverse = perturbation_meta(record.meta).names
    if not inverse:
        return record
    mapper = text_mapper(inverse)
    return record.model_copy(
        update={"gold": map_json(record.gold, mapper), "prediction": map_json(record.prediction, mapper)}
    )
