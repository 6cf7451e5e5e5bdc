"""Order perturbations: the closed label lists (``label-order``) and the shown history rows
(``shuffle-window``), plus the CircularEval rule for ``label-order:all``.

A label list is permuted once per sample and task (every item of a request shows one list): the instances'
``candidates`` carry the new order, which STP's candidate line and every answer schema read directly. RPP and
SSP print their label definitions from the taxonomy, so :func:`reorder_label_block` rewrites that block of
the rendered system message into the candidates' order.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from rescue_bench.metrics.plan import correct_top1
from rescue_bench.records import Instance, Request
from rescue_bench.rundir import PredictionLine
from rescue_bench.tasks import prompts, task_info
from rescue_bench.tasks.context import chat_message, row_index_of
from rescue_bench.tasks.perturb.names import with_meta
from rescue_bench.taxonomy import RELATION_PATTERNS, STRATEGIES, Label

ORDERED_KINDS = frozenset({"multiclass", "ranking"})
"""Task kinds whose answer is picked from a closed list shown in the prompt (RPP, STP, SSP)."""


def rotate(items: Sequence[str], k: int) -> tuple[str, ...]:
    """``items`` rotated left by ``k`` (modulo their length).

    >>> rotate("abcd", 1), rotate("abcd", 6), rotate("", 3)
    (('b', 'c', 'd', 'a'), ('c', 'd', 'a', 'b'), ())
    """
    if not items:
        return ()
    k %= len(items)
    return (*items[k:], *items[:k])


def seeded_shuffle(items: Sequence[str], key: str) -> tuple[str, ...]:
    """A shuffle seeded by ``key``; never the original order when two or more items differ (then a
    rotation by one is used instead)."""
    out = list(items)
    random.Random(key).shuffle(out)
    if tuple(out) == tuple(items) and len(set(items)) > 1:
        return rotate(items, 1)
    return tuple(out)


def reorder_candidates(instances: Sequence[Instance], order: Sequence[str]) -> list[Instance]:
    """The instances with ``candidates`` in ``order`` and the order recorded in meta."""
    return [
        replace(inst, candidates=tuple(order), meta=with_meta(inst, "label_order", list(order)))
        for inst in instances
    ]


def taxonomy_block(candidates: Sequence[str], scenario: str) -> tuple[Label, ...] | None:
    """The taxonomy label list (relation patterns or strategies of ``scenario``) whose keys are exactly the
    candidates, or ``None`` (STP's names, a plug-in task's labels)."""
    wanted = set(candidates)
    for table in (RELATION_PATTERNS, STRATEGIES):
        labels = table.get(scenario)  # type: ignore[call-overload]
        if labels is not None and {label.key for label in labels} == wanted:
            return tuple(labels)
    return None


def reorder_label_block(request: Request, batch: Sequence[Instance]) -> Request:
    """The request with its system message's label definitions in the batch's candidate order.

    Raises:
        ValueError: the candidates are a taxonomy list but its block is not in the system message exactly
            once (the prompt format changed; the perturbation would silently do nothing).
    """
    first = batch[0]
    labels = taxonomy_block(first.candidates, first.scenario)
    if labels is None or tuple(label.key for label in labels) == tuple(first.candidates):
        return request
    by_key = {label.key: label for label in labels}
    old = prompts.label_block(labels)
    new = prompts.label_block([by_key[key] for key in first.candidates])
    messages = list(request.messages)
    system = chat_message(messages[0])
    content = system.content
    if system.role != "system" or not isinstance(content, str) or content.count(old) != 1:
        raise ValueError(f"{request.task}: the label list is not in the system message exactly once")
    messages[0] = {**messages[0], "content": content.replace(old, new)}
    return replace(request, messages=tuple(messages))


def shuffle_rows(inst: Instance, seed: int) -> Instance:
    """The instance with its shown earlier rows in a seeded order; the row it is about, when it is among
    them (ITP's decision row), stays last."""
    context = inst.context
    if context is None or not context.rows:
        return inst
    rows = context.rows
    fixed = [r for r in rows if row_index_of(r) == inst.row_index]
    movable = [r for r in rows if row_index_of(r) != inst.row_index]
    keys = [str(row_index_of(r)) for r in movable]
    order = seeded_shuffle(keys, f"{seed}:shuffle-window:{inst.id}")
    by_key = dict(zip(keys, movable, strict=True))
    shuffled = (*(by_key[k] for k in order), *fixed)
    return replace(inst, context=replace(context, rows=shuffled))


def circular_correct(per_rotation: Sequence[Sequence[PredictionLine]]) -> dict[str, bool]:
    """CircularEval: per instance id present in every rotation's records, whether it is correct under all
    of them (top-1 correctness, :func:`rescue_bench.metrics.plan.correct_top1`).

    ``per_rotation`` holds one record list per ``label-order:K`` variant (prediction records of one task
    kind each, or mixed tasks: each record's kind comes from its task). Tasks without top-1 correctness
    (ER, VP) must not be passed.
    """
    if not per_rotation:
        return {}
    maps = [{r.instance_id: r for r in records} for records in per_rotation]
    shared = set(maps[0]).intersection(*maps[1:])
    out: dict[str, bool] = {}
    for instance_id in sorted(shared):
        kind = task_info(maps[0][instance_id].task).kind
        out[instance_id] = all(correct_top1(kind, m[instance_id]) for m in maps)
    return out
