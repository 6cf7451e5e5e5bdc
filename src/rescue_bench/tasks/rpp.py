"""RPP, Relation Pattern Prediction: the dominant couple or family relational pattern at a row.

Instances (protocol section 3, paper App. C): every row, of any speaker, whose gold label is non-empty and a
key of the sample's scenario taxonomy (chosen per sample, so couple and family samples mix in one run).

Gold field (``Options.gold_field``):

* ``auto`` (default): ``relation_cycle_state``; a sample with no ``relation_cycle_state`` label at all uses
  its ``relation_pattern`` labels instead. Release samples carry one field or the other, and ``auto`` is what
  gives every sample its RPP instances (paper Table 6 coverage);
* ``relation_cycle_state`` or ``relation_pattern``: that field only.

The model sees the rows before the target row (all of them by default) and, with ``include_current_turn``,
the target row itself; it is always told who speaks at the target row.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from rescue_bench.data.schema import Row, Sample
from rescue_bench.metrics import relational_gold as relational
from rescue_bench.metrics.spec import MULTICLASS_TOP3
from rescue_bench.records import Instance, Mode, Prediction, Request, Score, Shown
from rescue_bench.tasks import prompts
from rescue_bench.tasks.base import GoldField, PaperColumn, TaskConfig, TaskInfo, make_instance
from rescue_bench.tasks.context import clean, row_records, window
from rescue_bench.tasks.guesses import majority_ranking, random_ranking
from rescue_bench.tasks.parsing import parse_ranking, ranking_metrics
from rescue_bench.taxonomy import RELATION_PATTERNS, Scenario, relation_labels


class Options(BaseModel):
    """RPP's own settings (``--rpp-gold-field``, ``--rpp-include-current-turn``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    gold_field: GoldField = Field(
        "auto", description="RPP gold: auto (relation_cycle_state, else relation_pattern) or one of them."
    )
    include_current_turn: StrictBool = Field(
        False,
        description="RPP: also show the target row.",
        json_schema_extra={"flags": ["--rpp-current-turn"]},
    )


ANSWER_KEYS = ("relation_top3", "labels", "ranking", "top3", "relation", "label", "pattern")

SYSTEM = """\
You analyse relationship dynamics in a {scenario} therapy session.

Task: for each item, identify the dominant {pattern_name} at the target row: the {scope} pattern of the \
interaction, not one person's emotion. {current} Each item names who speaks at the target row.

Labels (closed set):
{labels}

Rules:
- Use only the rows shown; never assume what happens later.
- Focus on the dominant organisation of the interaction at the target row.
- {softening}
- Use mixed_transition only when several strong patterns are salient at once or the row itself is the pivot \
between them; it is not a fallback for uncertainty.
- Use only the labels above, exactly as written; rank 3 distinct ones, most likely first.
- {context} {mode}

{line_format}

{answer}"""
CURRENT_HIDDEN = "You do not see the target row itself, only the rows before it."
CURRENT_SHOWN = "You see the target row itself (marked as such) and the rows before it."
SOFTENING: dict[Scenario, str] = {
    "couple": (
        "Use repair_softening only when the cycle is clearly loosening, and constructive_alignment only for "
        "a stable cooperative stance, not for a mere pause in conflict."
    ),
    "family": (
        "Use repair_softening only when blame or rigidity clearly eases, and cooperative_family_alliance "
        "only for a sustained coordinated stance, not for a mere pause in conflict."
    ),
}
SHAPE = '{"predictions": [{"id": "c1", "relation_top3": ["<1st>", "<2nd>", "<3rd>"], "reason": "..."}]}'
PROMPT_HASH = prompts.template_hash(
    SYSTEM,
    CURRENT_HIDDEN,
    CURRENT_SHOWN,
    *SOFTENING.values(),
    SHAPE,
    prompts.SHARED_TEXT,
    prompts.taxonomy_text(),
)


def gold_field(sample: Sample, choice: GoldField) -> str:
    """The row field that holds RPP gold labels for ``sample`` under ``choice``."""
    if choice != "auto":
        return choice
    has_cycle = any(clean(row.relation_cycle_state) for row in sample.rows)
    return "relation_cycle_state" if has_cycle else "relation_pattern"


def gold_label(row: Row, name: str, labels: tuple[str, ...]) -> str | None:
    label = clean(getattr(row, name))
    return label if label in labels else None


def build(sample: Sample, cfg: TaskConfig) -> list[Instance]:
    """One instance per row with an in-taxonomy gold label, of any speaker."""
    size = cfg.shown_size(INFO)
    records = row_records(sample, cfg.mode, cfg.rows)
    labels = relation_labels(sample.scenario)
    options = cfg.options_for(INFO.name, Options)
    source = gold_field(sample, options.gold_field)
    out = []
    for row in sample.rows:
        gold = gold_label(row, source, labels)
        if gold is None:
            continue
        r = row.row_index
        context = Shown(
            cfg.mode,
            size,
            rows=window(records, r, size),
            current=records[r - 1] if options.include_current_turn else None,
            speaker=row.speaker,
            participants=sample.participants,
        )
        meta = {"gold_field": source, "speaker": row.speaker, "position": round(r / len(sample.rows), 4)}
        out.append(make_instance(sample, INFO.name, r, gold, candidates=labels, context=context, meta=meta))
    return out


@functools.lru_cache(maxsize=64)
def system_prompt(scenario: Scenario, mode: Mode, size: int, with_current: bool) -> str:
    couple = scenario == "couple"
    return SYSTEM.format(
        scenario=scenario,
        pattern_name="couple relation cycle" if couple else "family relational pattern",
        scope="dyadic" if couple else "systemic",
        current=CURRENT_SHOWN if with_current else CURRENT_HIDDEN,
        labels=prompts.label_block(RELATION_PATTERNS[scenario]),
        softening=SOFTENING[scenario],
        **prompts.shared_parts(mode, size, "the target row", SHAPE),
    )


def _block(opaque: str, inst: Instance) -> str:
    """One item: its earlier rows first, then the target row's number and speaker.

    The rows come before anything that changes from item to item, so the prompts of consecutive targets in a
    session share a prefix as long as the shorter transcript. Endpoints with prompt caching, and the local
    model's KV cache, then evaluate only the new rows (the local model is asked one full-history item per
    request for this reason: see ``engine.plans.default_batch_size``).
    """
    shown = prompts.shown(inst)
    target = (
        f"Item {opaque}'s target row: {inst.row_index}, spoken by {shown.speaker or 'an unknown speaker'}"
    )
    current = shown.current
    last = f"{target}:\n{current['line']}" if current is not None else f"{target} (not shown)."
    return "\n".join([f"Item {opaque}, the rows before its target row:", prompts.rows_text(shown.rows), last])


def render(batch: Sequence[Instance], cfg: TaskConfig) -> Request:
    shown, first = prompts.batch_shown(batch, INFO), batch[0]
    system = system_prompt(first.scenario, shown.mode, shown.size, shown.current is not None)
    header = prompts.people_header(batch, shown)
    blocks = [_block(f"c{i}", inst) for i, inst in enumerate(batch, start=1)]
    fields = {"relation_top3": prompts.ranking_field(first.candidates)}
    return prompts.request(INFO, batch, system, prompts.user_message(header, blocks), fields, PROMPT_HASH)


def parse(text: str, batch: Sequence[Instance]) -> list[Prediction]:
    return parse_ranking(text, batch, ANSWER_KEYS)


def score(pred: Prediction, inst: Instance) -> Score:
    """``correct`` (top-1 is gold: the paper's accuracy), Recall@1..3 and MRR; an invalid answer is a miss."""
    metrics = ranking_metrics(pred, inst)
    return Score(inst.id, {"correct": metrics["recall_at_1"], **metrics})


INFO = TaskInfo(
    prompt_hash=PROMPT_HASH,
    name="rpp",
    kind="multiclass",
    metrics=MULTICLASS_TOP3,
    paper_columns=(PaperColumn("RPP Acc.", "accuracy", 100.0, 2),),
    default_batch_size=3,
    default_context_size=-1,
    max_tokens=1800,
    random_answer=random_ranking,
    majority_answers=majority_ranking,
    percent=True,
    gold_labels=relation_labels,
    pattern_analyses=True,
    options=Options,
    relation_intensive=True,
    paper_position=2,
    analyses=(relational.TRANSITION, relational.SEGMENT),
)
