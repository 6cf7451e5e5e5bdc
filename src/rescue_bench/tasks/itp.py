"""ITP, Intervention Timing Prediction: should the therapist take the next turn right after this row?

Instances (protocol section 2, paper App. C): a *decision row* ``d`` is a non-therapist row.

* positive (gold ``yes``): row ``d + 1`` is the therapist's;
* negative (gold ``no``): rows ``d`` and ``d + 1`` are both non-therapist rows.

Each sample is balanced 1:1 by evenly spaced selection (:func:`~rescue_bench.tasks.context.even_sample`,
Python ``round``, the middle item when one is kept); a sample without both classes contributes nothing.

The model sees the rows up to and including the decision row (the last ``N`` rows before the boundary), never
the next row, and nothing that tells positives from negatives: no candidate or boundary types, no
label-bearing ids.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from typing import Any

from rescue_bench.data.schema import Sample
from rescue_bench.metrics import relational_gold as relational
from rescue_bench.metrics.spec import BINARY_YES_NO
from rescue_bench.records import Instance, Mode, Prediction, Request, Score, Shown
from rescue_bench.tasks import prompts
from rescue_bench.tasks.base import PaperColumn, TaskConfig, TaskInfo, make_instance
from rescue_bench.tasks.context import even_sample, row_records, window
from rescue_bench.tasks.guesses import majority_label
from rescue_bench.tasks.parsing import field, parse_batch, short
from rescue_bench.taxonomy import Scenario

LABELS = ("yes", "no")
ANSWER_KEYS = ("should_speak", "answer", "label", "prediction", "decision")

SYSTEM = """\
You assess the timing of therapist interventions in a {scenario} therapy session.

Task: each item stops at a moment right after its last transcript row. Decide whether the therapist should \
take the very next turn at that moment.
- "yes": an intervention now would be timely and clinically helpful: the process has crystallised enough for \
a question, reflection, validation, containment, reframing or a comment on the process.
- "no": the therapist should keep listening: someone is still unfolding a thought, vulnerable material is \
emerging, or the exchange between the {members} is developing productively.

Rules:
- Judge only from the rows shown. You never see the next turn; do not assume what it is.
- Use a concise clinical standard.
- The decision point is right after the last row of each item. {context}
- {mode}

{line_format}

{answer}"""
SHAPE = '{"predictions": [{"id": "c1", "should_speak": "yes or no", "reason": "..."}]}'
PROMPT_HASH = prompts.template_hash(SYSTEM, SHAPE, prompts.SHARED_TEXT)


def decision_points(sample: Sample) -> tuple[list[int], list[int]]:
    """Decision rows of the positives (next row is the therapist's) and negatives (two non-therapist rows)."""
    rows = sample.rows
    positives = [
        r - 1 for r in range(2, len(rows) + 1) if rows[r - 1].is_therapist and not rows[r - 2].is_therapist
    ]
    negatives = [r for r in range(1, len(rows)) if not rows[r - 1].is_therapist and not rows[r].is_therapist]
    return positives, negatives


def build(sample: Sample, cfg: TaskConfig) -> list[Instance]:
    """Balanced decision points of ``sample``, sorted by decision row."""
    size = cfg.shown_size(INFO)
    positives, negatives = decision_points(sample)
    keep = min(len(positives), len(negatives))
    if keep == 0:
        return []
    chosen = [(d, "yes") for d in even_sample(positives, keep, key=int)]
    chosen += [(d, "no") for d in even_sample(negatives, keep, key=int)]
    records = row_records(sample, cfg.mode, cfg.rows)
    out = []
    for d, gold in sorted(chosen):
        context = Shown(cfg.mode, size, rows=window(records, d + 1, size))
        meta = {"speaker": sample.rows[d - 1].speaker, "position": round(d / len(sample.rows), 4)}
        out.append(make_instance(sample, INFO.name, d, gold, candidates=LABELS, context=context, meta=meta))
    return out


@functools.lru_cache(maxsize=64)
def system_prompt(scenario: Scenario, mode: Mode, size: int) -> str:
    return SYSTEM.format(
        scenario=scenario,
        members=prompts.group_noun(scenario),
        **prompts.shared_parts(mode, size, "the decision point", SHAPE),
    )


def render(batch: Sequence[Instance], cfg: TaskConfig) -> Request:
    """One request for ``batch`` (one sample): fixed instructions first, then the items' transcripts."""
    shown = prompts.batch_shown(batch, INFO)
    system = system_prompt(batch[0].scenario, shown.mode, shown.size)
    blocks = [
        prompts.item_block(
            f"c{i}",
            f"the moment right after row {inst.row_index}",
            [prompts.rows_text(prompts.shown(inst).rows, "(no rows shown)")],
        )
        for i, inst in enumerate(batch, start=1)
    ]
    user = prompts.user_message([prompts.session_line(batch)], blocks)
    fields = {"should_speak": {"type": "string", "enum": list(LABELS)}}
    return prompts.request(INFO, batch, system, user, fields, PROMPT_HASH)


_YES = {"yes": "yes", "true": "yes", "no": "no", "false": "no"}


def read_yes_no(raw: object) -> str | None:
    """``yes``/``no`` from a strict answer (yes, no, true, false, any case, or a boolean); else ``None``.

    >>> [read_yes_no(x) for x in ("Yes", " no.", True, "not sure", "none", "y", 1)]
    ['yes', 'no', 'yes', None, None, None, None]
    """
    if isinstance(raw, bool):
        return "yes" if raw else "no"
    if not isinstance(raw, str):
        return None
    return _YES.get(raw.strip().strip("\"'`.!").lower())


def _read(item: dict[str, Any], inst: Instance) -> Prediction:
    present, raw = field(item, ANSWER_KEYS)
    if not present:
        return Prediction.failed(inst.id, "parse_failure: no should_speak in the answer")
    value = read_yes_no(raw)
    if value is None:
        return Prediction.failed(inst.id, f"invalid_label: {short(raw)} is not yes or no")
    return Prediction(inst.id, value, True)


def parse(text: str, batch: Sequence[Instance]) -> list[Prediction]:
    return parse_batch(text, batch, ANSWER_KEYS, _read)


def score(pred: Prediction, inst: Instance) -> Score:
    """``gold_yes``, ``pred_yes``, ``correct``; an invalid answer counts as the wrong class (a miss)."""
    gold_yes = float(inst.gold == "yes")
    pred_yes = float(pred.value == "yes") if pred.valid else 1.0 - gold_yes
    return Score(
        inst.id, {"gold_yes": gold_yes, "pred_yes": pred_yes, "correct": float(pred_yes == gold_yes)}
    )


def random_answer(inst: Instance, rng: random.Random) -> Prediction:
    """``yes`` or ``no``, uniformly."""
    return Prediction(inst.id, rng.choice(LABELS), True)


INFO = TaskInfo(
    prompt_hash=PROMPT_HASH,
    name="itp",
    kind="binary",
    metrics=BINARY_YES_NO,
    paper_columns=(
        PaperColumn("ITP Prec.", "precision", 100.0, 2),
        PaperColumn("ITP Rec.", "recall", 100.0, 2),
        PaperColumn("ITP F1", "f1", 100.0, 2),
    ),
    default_batch_size=4,
    default_context_size=3,
    max_tokens=1600,
    random_answer=random_answer,
    majority_answers=majority_label,
    percent=True,
    relation_intensive=False,
    paper_position=1,
    analyses=(relational.PATTERN_AT_ROW,),
)
