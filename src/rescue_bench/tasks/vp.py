"""VP, Viewpoint Prediction: the views the current client speaker expresses about other people in the room.

Checkpoints (protocol section 7, paper App. C): client rows with at least one ``viewpoints_attitudes`` entry
whose source is the speaker and whose target and viewpoint are non-empty; at most ``checkpoints_per_sample``
evenly spaced ones per sample (no early cut-off). Gold is the list of all such entries.

The model sees the current row and up to ``N`` rows before it (``-1``: all of them), and answers a list of
``{source, target, viewpoint}``. Scores come from the judge (pairing 0-2 + viewpoint 0-4) and BERTScore.
"""

from __future__ import annotations

import functools
import json
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from rescue_bench.data.schema import Row, Sample
from rescue_bench.errors import DataError
from rescue_bench.metrics import relational_gold as relational
from rescue_bench.metrics.generation import viewpoint_integer, viewpoint_to_five
from rescue_bench.metrics.spec import VIEWPOINT_SCORES
from rescue_bench.records import Instance, Json, Mode, Prediction, Request, Score, Shown
from rescue_bench.tasks import prompts
from rescue_bench.tasks.base import (
    JudgeRubric,
    JudgeTotal,
    PaperColumn,
    Reading,
    ScoreField,
    TaskConfig,
    TaskInfo,
    TextPairs,
    TurnFacts,
    make_instance,
)
from rescue_bench.tasks.context import clean, pick_evenly, row_records, window
from rescue_bench.tasks.er import current_block, turn_meta
from rescue_bench.tasks.guesses import most_common, other_participants, rank_by_frequency, speaker_of
from rescue_bench.tasks.parsing import field, parse_batch, short
from rescue_bench.taxonomy import THERAPIST, Scenario, group_label

BertRule = Literal["recall", "precision-aware"]
JudgeScale = Literal["linear", "integer"]


class Options(BaseModel):
    """VP's own settings (``--vp-checkpoints-per-sample``, ``--vp-group-target``, ``--vp-bert``,
    ``--vp-judge-scale``); docs/protocol-differences.md says which reading each choice follows."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    checkpoints_per_sample: StrictInt = Field(
        5, ge=1, description="VP: checkpoints per conversation at most."
    )
    group_target: StrictBool = Field(
        False,
        description="VP: also offer the group label (Couple/Family) as a viewpoint target; the reference "
        "asks about another on-screen person only.",
    )
    bert: BertRule = Field(
        "recall",
        description="VP BERTScore: recall (each gold view against its closest predicted view) or "
        "precision-aware (F1 over a greedy one-to-one matching, so surplus views cost).",
    )
    judge_scale: JudgeScale = Field(
        "linear",
        description="VP LLM on 1-5: linear (1 + 4 * total / 6, the mean's map) or integer (each judged "
        "instance's 1 + 4 * total / 6 rounded to a whole score, then the mean).",
    )


DEFAULT_OPTIONS = Options()


ANSWER_KEYS = ("viewpoints", "predicted_viewpoints")
VIEWPOINT_PHRASES: Final = (
    "does not listen to me",
    "is trying to understand me",
    "blames me for the problems",
    "cares about the family",
    "is not being honest",
    "is too critical",
)
"""Viewpoints of the random baseline; the source and target come from the instance."""

SYSTEM = """\
You identify viewpoints in a {scenario} therapy session.

Task: in each item the current row is spoken by a client. List the viewpoints this speaker expresses in \
that row about other people in the room: who holds the view (source: normally the speaker), whom it is about \
(target: {targets}), and what the view is.

Rules:
- Give every distinct viewpoint towards a different person.
- viewpoint: a short, concrete phrase in English, such as "he never takes my worries seriously".
- Use only the rows shown; nothing after the current row is known. Earlier rows only help resolve references.
- {context} {mode}

{line_format}

{answer}"""
SHAPE = (
    '{"predictions": [{"id": "c1", "viewpoints": [{"source": "<speaker>", "target": "<person>", '
    '"viewpoint": "..."}], "reason": "..."}]}'
)
PEOPLE_TARGETS = "another person present: a participant or the Therapist"
"""The targets offered by default: people, as the reference's "another on-screen person"."""
GROUP_TARGETS = (
    'another person present: a participant, the Therapist, or "{group}" for the {scenario} as a whole'
)
"""The targets with ``--vp-group-target``."""
PROMPT_HASH = prompts.template_hash(SYSTEM, SHAPE, prompts.SHARED_TEXT, PEOPLE_TARGETS, GROUP_TARGETS)


def gold_viewpoints(row: Row) -> list[dict[str, Json]]:
    """The speaker's own viewpoints with a target and a text, as ``{source, target, viewpoint, attitude}``."""
    out: list[dict[str, Json]] = []
    for item in row.viewpoints_attitudes:
        target, text = clean(item.target), clean(item.viewpoint)
        if clean(item.source) == row.speaker and target and text:
            out.append(
                {"source": row.speaker, "target": target, "viewpoint": text, "attitude": clean(item.attitude)}
            )
    return out


def build(sample: Sample, cfg: TaskConfig) -> list[Instance]:
    size = cfg.shown_size(INFO)
    records = row_records(sample, cfg.mode, cfg.rows)
    eligible = [(row, gold) for row in sample.rows if row.is_client and (gold := gold_viewpoints(row))]
    options = cfg.options_for(INFO.name, Options)
    group = (group_label(sample.scenario),) if options.group_target else ()
    people = (*sample.participants, THERAPIST, *group)
    out = []
    most = options.checkpoints_per_sample
    for row, gold in pick_evenly(eligible, most, key=lambda pair: pair[0].row_index):
        r = row.row_index
        context = Shown(
            cfg.mode,
            size,
            rows=window(records, r, size),
            current=records[r - 1],
            speaker=row.speaker,
            participants=sample.participants,
        )
        meta = {
            "speaker": row.speaker,
            "participants": list(sample.participants),
            "position": round(r / len(sample.rows), 4),
            **turn_meta(row),
        }
        out.append(make_instance(sample, INFO.name, r, gold, candidates=people, context=context, meta=meta))
    return out


@functools.lru_cache(maxsize=64)
def system_prompt(scenario: Scenario, mode: Mode, size: int, group: bool = False) -> str:
    """The VP system message; ``group`` offers the group label as a target too (``--vp-group-target``)."""
    targets = (
        GROUP_TARGETS.format(group=group_label(scenario), scenario=scenario) if group else PEOPLE_TARGETS
    )
    return SYSTEM.format(
        scenario=scenario,
        targets=targets,
        **prompts.shared_parts(mode, size, "the current row", SHAPE),
    )


def render(batch: Sequence[Instance], cfg: TaskConfig) -> Request:
    shown, first = prompts.batch_shown(batch, INFO), batch[0]
    system = system_prompt(
        first.scenario, shown.mode, shown.size, group_label(first.scenario) in first.candidates
    )
    header = prompts.people_header(batch, shown)
    blocks = [current_block(f"c{i}", inst) for i, inst in enumerate(batch, start=1)]
    person = {"type": "string", "enum": list(dict.fromkeys(first.candidates))}
    entry = {
        "type": "object",
        "properties": {
            "source": person,
            "target": person,
            "viewpoint": {"type": "string", "maxLength": prompts.REASON_MAX_LENGTH},
        },
        "required": ["source", "target", "viewpoint"],
        "additionalProperties": False,
    }
    fields = {"viewpoints": {"type": "array", "items": entry}}
    return prompts.request(INFO, batch, system, prompts.user_message(header, blocks), fields, PROMPT_HASH)


class ReplyEntry(BaseModel):
    """One viewpoint entry as a model wrote it: any JSON in each field (cleaned into text by the reader),
    other keys ignored (the reply is the model's, not ours)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    source: Json = None
    target: Json = None
    viewpoint: Json = None


class Viewpoint(BaseModel):
    """A VP answer entry as stored (``Prediction.value`` items), or a gold entry with its ``attitude``."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    source: str = ""
    target: str
    viewpoint: str = ""
    attitude: str | None = None


def viewpoints_of(value: Json) -> list[Viewpoint]:
    """The well-formed entries of a stored VP gold or answer (none for a failed answer's ``null``)."""
    out = []
    for item in value if isinstance(value, list) else []:
        try:
            out.append(Viewpoint.model_validate(item))
        except ValidationError:
            continue
    return out


def _entry(raw: object) -> ReplyEntry | None:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            return None
    return ReplyEntry.model_validate(raw) if isinstance(raw, dict) else None


def read_viewpoints(raw: object, speaker: str) -> tuple[list[dict[str, Json]], list[str]]:
    """``{source, target, viewpoint}`` entries (source defaults to ``speaker``); unusable entries are noted.

    >>> entries = [{"target": "Ben", "viewpoint": "never listens"}, {"target": "Ben"}]
    >>> values, notes = read_viewpoints(entries, "Ana")
    >>> values
    [{'source': 'Ana', 'target': 'Ben', 'viewpoint': 'never listens'}]
    >>> notes
    ['dropped: entry 2 has no target or viewpoint']
    """
    entries = raw if isinstance(raw, list) else [raw]
    out: list[dict[str, Json]] = []
    notes: list[str] = []
    for position, item in enumerate(entries, start=1):
        entry = _entry(item)
        target = clean(entry.target) if entry else ""
        text = clean(entry.viewpoint) if entry else ""
        if entry is None or not target or not text:
            notes.append(f"dropped: entry {position} has no target or viewpoint")
            continue
        out.append({"source": clean(entry.source) or speaker, "target": target, "viewpoint": text})
    return out, notes


def _read(item: dict[str, Any], inst: Instance) -> Prediction:
    present, raw = field(item, ANSWER_KEYS)
    if not present or raw is None:
        return Prediction.failed(inst.id, "parse_failure: no viewpoints in the answer")
    if not isinstance(raw, list | dict | str):
        return Prediction.failed(inst.id, f"parse_failure: viewpoints {short(raw)} is not a list")
    value, notes = read_viewpoints(raw, str(prompts.shown(inst).speaker))
    return Prediction(inst.id, value, True, tuple(notes))


def parse(text: str, batch: Sequence[Instance]) -> list[Prediction]:
    return parse_batch(text, batch, ANSWER_KEYS, _read)


def score(pred: Prediction, inst: Instance) -> Score:
    """No formula score: judging adds ``pairing``, ``viewpoint``, ``total``, ``llm``, ``bertscore_f1``."""
    return Score(inst.id, {})


def random_answer(inst: Instance, rng: random.Random) -> Prediction:
    """One viewpoint of the speaker, from :data:`VIEWPOINT_PHRASES`, about a random other participant."""
    others = other_participants(inst)
    if not others:
        return Prediction.failed(inst.id, "missing: the instance names no participant other than the speaker")
    viewpoint = {
        "source": speaker_of(inst),
        "target": rng.choice(others),
        "viewpoint": rng.choice(VIEWPOINT_PHRASES),
    }
    return Prediction(inst.id, [viewpoint], True)


def majority_answers(group: Sequence[Instance]) -> list[Prediction]:
    """The group's commonest gold viewpoint, about the instance's participant most often a gold target."""
    items = [item for inst in group for item in viewpoints_of(inst.gold)]
    viewpoint = most_common(item.viewpoint for item in items)
    targets = Counter(item.target for item in items)
    preds = []
    for inst in group:
        target = rank_by_frequency(tuple(other_participants(inst)), targets)
        if not target or not viewpoint:
            preds.append(Prediction.failed(inst.id, "missing: no gold viewpoint or no other participant"))
            continue
        answer = [{"source": speaker_of(inst), "target": target[0], "viewpoint": viewpoint[0]}]
        preds.append(Prediction(inst.id, answer, True))
    return preds


# The judge (paper section 4.2, protocol section 7): ``source_target_score`` 0-2 (are the gold source-target
# pairings recovered?) plus ``viewpoint_score`` 0-4 (how close are the views?). The total 0-6 is computed by
# the judge pass, never taken from the judge.
JUDGE_RUBRIC = """You are grading a therapy viewpoint-understanding task. For each checkpoint, a system \
predicted the viewpoints the CURRENT speaker expresses about other people (source, target, viewpoint). \
Compare the predicted viewpoints with the gold viewpoints. Be lenient about paraphrases and near-synonyms.

source_target_score: integer 0-2.
  0 = the source-target pairings are mostly wrong or missing, 1 = partially recovered,
  2 = all gold pairings are essentially recovered.
viewpoint_score: integer 0-4.
  0 = wrong, 1 = weakly related, 2 = close, 3 = essentially the same, 4 = almost exact.

Return JSON only, exactly in this shape, with one entry per checkpoint id:
{"graded": [{"id": "c1", "source_target_score": 2, "viewpoint_score": 3, \
"verdict": "strong|pass|borderline|fail", "notes": "short reason"}]}"""


def _keep(entries: Json, keys: tuple[str, ...]) -> list[dict[str, Json]]:
    if not isinstance(entries, list):
        return []
    return [{k: e.get(k) for k in keys} for e in entries if isinstance(e, Mapping)]


def judge_view(gold: Json, prediction: Json, turn: TurnFacts) -> dict[str, Json]:
    """What the reference scripts' judge sees: the turn (speaker, time, words), the gold viewpoints with
    their attitude, the predicted ones, and the model's reason."""
    return {
        "speaker": turn.speaker,
        "timestamp": turn.timestamp,
        "utterance": turn.utterance,
        "gold_viewpoints": _keep(gold, ("source", "target", "viewpoint", "attitude")),
        "predicted_viewpoints": _keep(prediction, ("source", "target", "viewpoint")),
        "reason": turn.reason,
    }


def derived_scores(
    scores: Mapping[str, object], gold: Json, prediction: Json, valid: bool
) -> dict[str, float | None]:
    """``llm = viewpoint_to_five(total)``, ``None`` while ``total`` is unscored.

    >>> derived_scores({"total": 6.0}, [], [], True)
    {'llm': 5.0}
    """
    total = scores.get("total")
    return {"llm": viewpoint_to_five(float(total)) if isinstance(total, int | float) else None}


def _texts(entries: Json) -> list[str]:
    """The viewpoint texts of well-formed viewpoint entries."""
    return [entry.viewpoint.strip() for entry in viewpoints_of(entries) if entry.viewpoint.strip()]


def bertscore_pairs(gold: Json, prediction: Json, valid: bool) -> TextPairs:
    """One group per gold viewpoint, holding every predicted viewpoint (whatever its target).

    Why any target: the reference scripts compute no VP BERTScore, and the paper's VP BERT barely moves over
    ten models (0.856-0.867) while their VP judge scores span 3.20-4.08, so it cannot carry a 0 for every
    gold view whose target was missed. Who the view is about is the judge's pairing score; BERTScore measures
    how close the wording of the views is. A gold view with no predicted view at all (an empty or invalid
    answer) scores 0, as an empty text does in the reference scripts' ``compute_bertscore_f1s``.

    >>> gold = [{"source": "A", "target": "Bo", "viewpoint": "he never listens"},
    ...         {"source": "A", "target": "Therapist", "viewpoint": "she takes his side"}]
    >>> pred = [{"source": "A", "target": "bo", "viewpoint": "he ignores her"}]
    >>> bertscore_pairs(gold, pred, True)
    ((('he ignores her', 'he never listens'),), (('he ignores her', 'she takes his side'),))
    >>> bertscore_pairs(gold, [], True)
    ((), ())
    """
    predicted = _texts(prediction) if valid else []
    groups = [tuple((text, reference) for text in predicted) for reference in _texts(gold)]
    return tuple(groups) or ((),)


BERTSCORE_RULE = (
    "each gold viewpoint against its closest predicted viewpoint, whatever the target; mean over the gold "
    "viewpoints; 0 for an empty or invalid answer"
)
PRECISION_AWARE_RULE = (
    "F1 over a greedy one-to-one matching of gold and predicted viewpoints, whatever the target (best pair "
    "first): the matched F1 sum over the gold count and over the predicted count, their harmonic mean; 0 for "
    "an empty or invalid answer (--vp-bert precision-aware)"
)
LLM_RULE = "1 + 4 * total / 6: the judge's 0-6 total (pairing 0-2 + viewpoint 0-4) placed linearly on 1-5"
INTEGER_RULE = (
    "each judged instance's 1 + 4 * total / 6 rounded to a whole 1-5 score (0-6 -> 1, 2, 2, 3, 4, 4, 5), "
    "then the mean (--vp-judge-scale integer)"
)
BERT_RULES: Final[dict[BertRule, str]] = {"recall": BERTSCORE_RULE, "precision-aware": PRECISION_AWARE_RULE}
LLM_RULES: Final[dict[JudgeScale, str]] = {"linear": LLM_RULE, "integer": INTEGER_RULE}


def recorded_options(config: Mapping[str, Json]) -> Options:
    """VP's options as a run's ``run.json`` config records them (``task_options.vp``); the defaults for a
    run recorded before an option existed.

    >>> recorded_options({"task_options": {"vp": {"bert": "precision-aware"}}}).bert
    'precision-aware'
    >>> recorded_options({}).judge_scale
    'linear'
    >>> recorded_options({"task_options": {"vp": {"bert": "max"}}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rescue_bench.errors.DataError: run.json: config.task_options.vp.bert: Input should be ...
    """
    given = config.get("task_options")
    mine = given.get(INFO.name) if isinstance(given, Mapping) else None
    if not isinstance(mine, Mapping):
        return DEFAULT_OPTIONS
    try:
        return Options.model_validate(mine)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise DataError(f"run.json: config.task_options.vp.{where}: {first['msg']}") from None


def scoring_rules(options: Options) -> dict[str, str]:
    """How VP's ``llm`` and ``bertscore_f1`` are computed under ``options``, in words
    (``_meta.scoring_rules``)."""
    return {"llm": LLM_RULES[options.judge_scale], "bertscore_f1": BERT_RULES[options.bert]}


def reading_label(options: Options) -> str | None:
    """The VP readings that differ from the defaults, for headings (``None`` when there is none).

    >>> reading_label(Options(bert="precision-aware", judge_scale="integer"))
    'VP BERT precision-aware, VP LLM integer scale'
    >>> reading_label(Options()) is None
    True
    """
    parts = []
    if options.bert != DEFAULT_OPTIONS.bert:
        parts.append(f"VP BERT {options.bert}")
    if options.judge_scale != DEFAULT_OPTIONS.judge_scale:
        parts.append(f"VP LLM {options.judge_scale} scale")
    return ", ".join(parts) or None


def reading(config: Mapping[str, Json]) -> Reading:
    """VP's reading under a run's recorded options (``INFO.judge.read``).

    >>> found = reading({"task_options": {"vp": {"judge_scale": "integer"}}})
    >>> found.label, found.greedy_bertscore, found.to_score(5.0)
    ('VP LLM integer scale', False, 4.0)
    """
    options = recorded_options(config)
    return Reading(
        rules=scoring_rules(options),
        label=reading_label(options),
        greedy_bertscore=options.bert == "precision-aware",
        to_score=viewpoint_integer if options.judge_scale == "integer" else None,
    )


JUDGE = JudgeRubric(
    title="Viewpoint prediction",
    rubric=JUDGE_RUBRIC,
    view=judge_view,
    fields=(
        ScoreField("source_target_score", "pairing", 0, 2),
        ScoreField("viewpoint_score", "viewpoint", 0, 4),
    ),
    agreement_key="total",
    derive=derived_scores,
    to_five=viewpoint_to_five,
    bertscore_pairs=bertscore_pairs,
    total=JudgeTotal("total", claimed_key="viewpoint_total_score"),
    rules={"llm": LLM_RULE, "bertscore_f1": BERTSCORE_RULE},
    reading=reading,
)


INFO = TaskInfo(
    prompt_hash=PROMPT_HASH,
    name="vp",
    kind="generation",
    metrics=VIEWPOINT_SCORES,
    paper_columns=(PaperColumn("VP LLM", "llm", 1.0, 2), PaperColumn("VP BERT", "bertscore_f1", 1.0, 4)),
    default_batch_size=5,
    default_context_size=3,
    max_tokens=2200,
    random_answer=random_answer,
    majority_answers=majority_answers,
    judge=JUDGE,
    instance_score=("total", 6.0),
    video=True,
    options=Options,
    relation_intensive=True,
    paper_position=6,
    analyses=(relational.TARGET_COUNT,),
)
