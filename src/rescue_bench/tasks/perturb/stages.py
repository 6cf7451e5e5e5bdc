"""The stage functions of each perturbation; each docstring says what the perturbation keeps invariant
(it is recorded in ``run.json`` and shown by docs/robustness.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rescue_bench.data.schema import Sample
from rescue_bench.records import Instance, Request
from rescue_bench.tasks.base import TaskConfig
from rescue_bench.tasks.perturb.base import Context, Perturbation
from rescue_bench.tasks.perturb.names import rename, role_map, swap_map
from rescue_bench.tasks.perturb.order import (
    ORDERED_KINDS,
    reorder_candidates,
    reorder_label_block,
    rotate,
    seeded_shuffle,
    shuffle_rows,
)

CUE_FIELDS = ("tone_of_voice", "body_posture", "facial_expressions", "self_directed_behavior")
"""Non-verbal cue fields of a row (with ``interaction_behavior``), shown in audio and visual modes only."""


def label_order(instances: Sequence[Instance], ctx: Context, p: Perturbation) -> list[Instance]:
    """The closed label list of RPP, SSP and STP (its candidates) shown in another order: a seeded shuffle
    per sample (never the original order), or with ``label-order:K`` a rotation by K. Keeps the instance
    ids, the gold, the set of labels, every transcript row and the label definitions' wording; only their
    order (prompt label block, STP candidate line, answer-schema enums) changes. Other tasks are untouched."""
    if ctx.info.kind not in ORDERED_KINDS or not instances:
        return list(instances)
    base = instances[0].candidates
    if p.arg is None:
        order = seeded_shuffle(base, f"{ctx.seed}:label-order:{ctx.sample.sample_id}:{ctx.info.name}")
    else:
        order = rotate(base, int(p.arg))
    return reorder_candidates(instances, order)


def label_order_request(request: Request, batch: Sequence[Instance]) -> Request:
    """RPP and SSP print their label definitions from the taxonomy: put them in the candidates' order."""
    return reorder_label_block(request, batch)


def name_swap(instances: Sequence[Instance], ctx: Context, p: Perturbation) -> list[Instance]:
    """Participants' names exchanged (two partners swapped; in a family a seeded cycle that moves every
    name) wherever a prompt shows them (transcript lines, people line, candidates, speaker) and in the gold
    (an STP gold "Nadia" becomes "Tom"; VP sources and targets likewise). Keeps the instance ids, the
    instance set (selected on the original names), the gold up to the same mapping, each row's position and
    content apart from names. Names only mentioned in speech (not participants) and nicknames stay."""
    return rename(instances, swap_map(ctx.sample, ctx.seed))


def anonymize(instances: Sequence[Instance], ctx: Context, p: Perturbation) -> list[Instance]:
    """Participants' names replaced by neutral role labels (Partner A/B; Member 1..N in families, whose
    roles the release does not annotate), in the prompt and the gold, as ``name-swap``. Keeps the instance
    ids, the instance set, the gold up to the mapping, and everything but the names."""
    return rename(instances, role_map(ctx.sample))


def shuffle_window(instances: Sequence[Instance], ctx: Context, p: Perturbation) -> list[Instance]:
    """The shown earlier rows in a seeded order per instance (never the original when two or more can
    move); the row an instance is about stays last when shown among them (ITP's decision row) and the
    current row of ER, VP and RPP's option is untouched. Keeps the instance ids, the gold, the set of rows
    shown and each line's text, including its row number, from which a model could restore the order."""
    return [shuffle_rows(inst, ctx.seed) for inst in instances]


def context_window(cfg: TaskConfig, p: Perturbation) -> TaskConfig:
    """The history set to the last N rows before the target for every task (``context:all``: all earlier
    rows), as ``--context-size N`` does; N above a task's default shows more than the base run. Keeps the
    instance ids and gold (no task selects instances by context size) and the target row; ITP with N = 0
    shows no row at all, its decision row included, as ``--context-size 0`` does."""
    assert p.arg is not None  # checked when parsed
    return replace(cfg, context_size=-1 if p.arg == "all" else int(p.arg))


def no_cues(sample: Sample, p: Perturbation) -> Sample:
    """The non-verbal cue fields (tone of voice, posture, facial expressions, self-directed and interaction
    behaviour) removed from every row, so audio and visual modes show words only, under the same mode
    instructions. Keeps the instance ids, the gold (no task selects or labels by these fields) and the
    words of every row. In dialogue and video modes the prompt is unchanged."""
    cleared: dict[str, object] = {name: () for name in CUE_FIELDS}
    cleared["tone_of_voice"] = None
    cleared["interaction_behavior"] = ()
    rows = tuple(row.model_copy(update=cleared) for row in sample.rows)
    return sample.model_copy(update={"rows": rows})
