"""STP, Support Target Prediction: whom will the therapist's next move address?

Instances (protocol section 4, paper App. C): therapist rows with a support strategy (any non-empty strategy
type) and a target resolved from the strategy's target, falling back to the row target. One person gives the
name, several the group label. The closed candidate set of a sample is its participants plus the group label,
with no repeats; a target outside it is dropped (paper: "cannot be resolved to the sample's closed target
set").

The therapist row itself is never shown: the model sees up to ``N`` earlier rows and ranks 3 candidates.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence

from rescue_bench.data.schema import Sample
from rescue_bench.metrics import relational_gold as relational
from rescue_bench.metrics.spec import RANKING_TOP3
from rescue_bench.records import Instance, Mode, Prediction, Request, Score, Shown
from rescue_bench.tasks import prompts
from rescue_bench.tasks.base import PaperColumn, TaskConfig, TaskInfo, make_instance
from rescue_bench.tasks.context import row_records, window
from rescue_bench.tasks.guesses import majority_ranking, random_ranking
from rescue_bench.tasks.parsing import parse_ranking, ranking_metrics
from rescue_bench.tasks.support import candidate_targets, support_moves
from rescue_bench.taxonomy import Scenario, group_label

ANSWER_KEYS = ("target_top3", "targets", "ranking", "top3", "target")

SYSTEM = """\
You predict whom a therapist will address next in a {scenario} therapy session.

Task: each item stops just before a therapist turn that you do not see. Rank the 3 most likely targets of \
that next therapist move, taken from the candidate labels: a participant's name, or "{group}" for a move \
aimed at the {scenario} as a whole.

Rules:
- The target is the person (or group) the move is mainly directed to.
- Use "{group}" when the move addresses everyone jointly, a shared pattern or a shared task.
- Prefer a specific person when the move mainly invites, protects, challenges, reassures or redirects that \
one participant.
- Weigh the relational flow, emotional activation, withdrawal or pursuit, who holds the floor and the \
therapist's ongoing focus; rank highly a person whose protection or balance is at stake.
- Use only the candidate labels, exactly as written; rank 3 distinct ones (all if fewer), most likely first.
- {context} {mode}

{line_format}

{answer}"""
SHAPE = '{"predictions": [{"id": "c1", "target_top3": ["<1st>", "<2nd>", "<3rd>"], "reason": "..."}]}'
PROMPT_HASH = prompts.template_hash(SYSTEM, SHAPE, prompts.SHARED_TEXT)


def build(sample: Sample, cfg: TaskConfig) -> list[Instance]:
    """One instance per therapist support move with a target in the sample's closed target set."""
    size = cfg.shown_size(INFO)
    records = row_records(sample, cfg.mode, cfg.rows)
    candidates = candidate_targets(sample)
    out = []
    for move in support_moves(sample):
        r = move.row_index
        context = Shown(cfg.mode, size, rows=window(records, r, size), participants=sample.participants)
        meta = {"target_source": move.target_source, "position": round(r / len(sample.rows), 4)}
        out.append(
            make_instance(
                sample, INFO.name, r, move.target, candidates=candidates, context=context, meta=meta
            )
        )
    return out


@functools.lru_cache(maxsize=64)
def system_prompt(scenario: Scenario, mode: Mode, size: int) -> str:
    return SYSTEM.format(
        scenario=scenario,
        group=group_label(scenario),
        **prompts.shared_parts(mode, size, "the therapist's unseen turn", SHAPE),
    )


def render(batch: Sequence[Instance], cfg: TaskConfig) -> Request:
    shown, first = prompts.batch_shown(batch, INFO), batch[0]
    system = system_prompt(first.scenario, shown.mode, shown.size)
    header = [
        *prompts.people_header(batch, shown),
        # JSON string escapes keep a name with a newline or quote on this line, exactly as it is answered.
        "Candidate labels: " + ", ".join(json.dumps(c, ensure_ascii=False)[1:-1] for c in first.candidates),
    ]
    blocks = [
        prompts.item_block(
            f"c{i}",
            f"the therapist's next turn is row {inst.row_index}",
            [prompts.rows_text(prompts.shown(inst).rows)],
        )
        for i, inst in enumerate(batch, start=1)
    ]
    fields = {"target_top3": prompts.ranking_field(first.candidates)}
    return prompts.request(INFO, batch, system, prompts.user_message(header, blocks), fields, PROMPT_HASH)


def parse(text: str, batch: Sequence[Instance]) -> list[Prediction]:
    return parse_ranking(text, batch, ANSWER_KEYS)


def score(pred: Prediction, inst: Instance) -> Score:
    """Recall@1..3 and MRR of the ranked targets; an invalid answer ranks nothing."""
    metrics = ranking_metrics(pred, inst)
    return Score(inst.id, metrics)


INFO = TaskInfo(
    prompt_hash=PROMPT_HASH,
    name="stp",
    kind="ranking",
    metrics=RANKING_TOP3,
    paper_columns=(
        PaperColumn("STP Rec.", "recall_at_1", 100.0, 2),
        PaperColumn("STP MRR", "mrr", 100.0, 2),
    ),
    default_batch_size=3,
    default_context_size=3,
    max_tokens=1800,
    random_answer=random_ranking,
    majority_answers=majority_ranking,
    percent=True,
    target_kinds=True,
    relation_intensive=True,
    paper_position=3,
    analyses=(relational.TARGET_TYPE, relational.PATTERN_BEFORE_ROW),
)
