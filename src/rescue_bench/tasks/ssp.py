"""SSP, Support Strategy Prediction: which strategy will the therapist's next move use, given its target?

Instances (protocol section 5, paper App. C): as STP, but the strategy type must be a key of the sample's
scenario taxonomy (chosen per sample, so couple and family samples mix in one run). The gold target is part of
the input (the task conditions on it); optionally so is the target's latest internal emotion inside the
context window. The therapist row itself is never shown.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from rescue_bench.data.schema import Sample
from rescue_bench.metrics import relational_gold as relational
from rescue_bench.metrics.spec import RANKING_TOP3
from rescue_bench.records import Instance, Mode, Prediction, Request, Score, Shown
from rescue_bench.tasks import prompts
from rescue_bench.tasks.base import PaperColumn, TaskConfig, TaskInfo, make_instance
from rescue_bench.tasks.context import row_records, window
from rescue_bench.tasks.guesses import majority_ranking, random_ranking
from rescue_bench.tasks.parsing import parse_ranking, ranking_metrics
from rescue_bench.tasks.support import support_moves, target_emotion
from rescue_bench.taxonomy import STRATEGIES, Scenario, strategy_labels


class Options(BaseModel):
    """SSP's own settings (``--ssp-include-target-emotion``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    include_target_emotion: StrictBool = Field(
        False,
        description="SSP: also give the target's latest internal emotion.",
        json_schema_extra={"flags": ["--ssp-target-emotion"]},
    )


ANSWER_KEYS = ("strategy_top3", "strategies", "ranking", "top3", "strategy")

SYSTEM = """\
You predict a therapist's next support strategy in a {scenario} therapy session.

Task: each item stops just before a therapist turn that you do not see. You are told whom that move is \
aimed at (its target: a participant, or "{group}" for the {scenario} as a whole).{emotion_task} Rank the 3 \
most likely strategies of that move from the closed set below.

Strategies (closed set):
{labels}

Rules:
- Predict the main function of the move, and prefer the most specific label the context justifies.
- track is the broadest label: choose it only when nothing more specific fits.
- Use the given target to tell close labels apart.
- {reminders}
- Use only the labels above, exactly as written; rank 3 distinct ones, most likely first.
- {context} {mode}

{line_format}

{answer}"""
EMOTION_TASK = (
    " Where available you are also told the target's most recent internal emotion within the rows shown; "
    "treat it as reliable annotation and a strong cue."
)
REMINDERS: dict[Scenario, str] = {
    "couple": (
        "Naming or mapping the sequence is track; turning it into a shared relational meaning is reframe "
        "(describing the sequence alone is not enough for reframe). "
        "Deepening one partner's primary emotion is evoke; making it receivable by the other partner is "
        "join. Restoring a partner's voice is counterbalance; immediate protection is safeguard. Having one "
        "partner speak directly to the other is enact. goal_align turns both to a shared task (a generic "
        "summary of the process is not enough for goal_align); detach has "
        "both step back to look at their pattern together; repair softens a rupture."
    ),
    "family": (
        "Describing a pattern is track; intervening in roles, hierarchy or subsystems is boundary. "
        "Restoring a less-heard member's voice is counterbalance; immediate protection is safeguard. "
        "Supporting apology and reconnection after a rupture is repair; building the working alliance is "
        "join. Moving members into direct interaction is enact. Shifting blame to a systemic meaning is "
        "reframe."
    ),
}
SHAPE = '{"predictions": [{"id": "c1", "strategy_top3": ["<1st>", "<2nd>", "<3rd>"], "reason": "..."}]}'
PROMPT_HASH = prompts.template_hash(
    SYSTEM, EMOTION_TASK, SHAPE, *REMINDERS.values(), prompts.SHARED_TEXT, prompts.taxonomy_text()
)


def build(sample: Sample, cfg: TaskConfig) -> list[Instance]:
    """One instance per therapist support move whose strategy is in the sample's scenario taxonomy."""
    size = cfg.shown_size(INFO)
    with_emotion = cfg.options_for(INFO.name, Options).include_target_emotion
    records = row_records(sample, cfg.mode, cfg.rows)
    labels = strategy_labels(sample.scenario)
    out = []
    for move in support_moves(sample):
        if move.strategy not in labels:
            continue
        r = move.row_index
        context = Shown(
            cfg.mode,
            size,
            rows=window(records, r, size),
            participants=sample.participants,
            target=move.target,
            target_emotion=target_emotion(sample, r, move.target, size) if with_emotion else None,
        )
        meta = {
            "target": move.target,
            "target_source": move.target_source,
            "position": round(r / len(sample.rows), 4),
        }
        out.append(
            make_instance(sample, INFO.name, r, move.strategy, candidates=labels, context=context, meta=meta)
        )
    return out


@functools.lru_cache(maxsize=64)
def system_prompt(scenario: Scenario, mode: Mode, size: int, with_emotion: bool) -> str:
    return SYSTEM.format(
        scenario=scenario,
        group=scenario.capitalize(),
        emotion_task=EMOTION_TASK if with_emotion else "",
        labels=prompts.label_block(STRATEGIES[scenario]),
        reminders=REMINDERS[scenario],
        **prompts.shared_parts(mode, size, "the therapist's unseen turn", SHAPE),
    )


def _block(opaque: str, inst: Instance) -> str:
    shown = prompts.shown(inst)
    body = [f"Target of the next move: {shown.target}"]
    if shown.target_emotion is not None:
        body.append(f"Target's latest internal emotion: {shown.target_emotion or '(none in the rows shown)'}")
    body.append(prompts.rows_text(shown.rows))
    return prompts.item_block(opaque, f"the therapist's next turn is row {inst.row_index}", body)


def render(batch: Sequence[Instance], cfg: TaskConfig) -> Request:
    shown, first = prompts.batch_shown(batch, INFO), batch[0]
    system = system_prompt(first.scenario, shown.mode, shown.size, shown.target_emotion is not None)
    header = prompts.people_header(batch, shown)
    blocks = [_block(f"c{i}", inst) for i, inst in enumerate(batch, start=1)]
    fields = {"strategy_top3": prompts.ranking_field(first.candidates)}
    return prompts.request(INFO, batch, system, prompts.user_message(header, blocks), fields, PROMPT_HASH)


def parse(text: str, batch: Sequence[Instance]) -> list[Prediction]:
    return parse_ranking(text, batch, ANSWER_KEYS)


def score(pred: Prediction, inst: Instance) -> Score:
    """Recall@1..3 and MRR of the ranked strategies; an invalid answer ranks nothing."""
    metrics = ranking_metrics(pred, inst)
    return Score(inst.id, metrics)


INFO = TaskInfo(
    prompt_hash=PROMPT_HASH,
    name="ssp",
    kind="ranking",
    metrics=RANKING_TOP3,
    paper_columns=(
        PaperColumn("SSP Rec.", "recall_at_1", 100.0, 2),
        PaperColumn("SSP MRR", "mrr", 100.0, 2),
    ),
    default_batch_size=3,
    default_context_size=3,
    max_tokens=2200,
    random_answer=random_ranking,
    majority_answers=majority_ranking,
    percent=True,
    video=True,
    gold_labels=strategy_labels,
    options=Options,
    relation_intensive=True,
    paper_position=4,
    analyses=(relational.TARGET_TYPE, relational.PATTERN_BEFORE_ROW),
)
