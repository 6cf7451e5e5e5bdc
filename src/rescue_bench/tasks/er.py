"""ER, Emotion Recognition: the current client speaker's internal emotion and its intensity (0-10).

Checkpoints (protocol section 6, paper App. C): client rows (not the therapist, not a group speaker) whose
first ``internal_emotion`` entry for the speaker has a description and a valid intensity, with at least
``min_dialogue_words`` words (``[A-Za-z0-9']+``), after the first 30% of rows (drop
``min(n - 1, ceil(0.3 n))`` rows), then at most ``checkpoints_per_sample`` evenly spaced ones (the first when
only one is kept).

The model sees the current row and up to ``N`` rows before it (``-1``: all of them).
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Mapping, Sequence
from typing import Any, Final, Self

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, ValidationError

from rescue_bench.data.schema import Row, Sample
from rescue_bench.metrics import relational_gold as relational
from rescue_bench.metrics.generation import emotion_score, intensity_score
from rescue_bench.metrics.spec import EMOTION_SCORES
from rescue_bench.records import Instance, Json, Mode, Prediction, Request, Score, Shown
from rescue_bench.tasks import prompts
from rescue_bench.tasks.base import (
    JudgeRubric,
    PaperColumn,
    ScoreField,
    TaskConfig,
    TaskInfo,
    TextPairs,
    TurnFacts,
    make_instance,
)
from rescue_bench.tasks.context import (
    clean,
    early_cutoff,
    pick_evenly,
    row_records,
    timestamp,
    window,
    word_count,
)
from rescue_bench.tasks.guesses import most_common
from rescue_bench.tasks.parsing import field, parse_batch, short
from rescue_bench.taxonomy import Scenario


class EmotionAnswer(BaseModel):
    """An ER answer as stored (``Prediction.value``): the emotion text and its intensity, ``None`` when the
    model gave none that could be read. Readers of a gold that may be partial read it this way too."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    emotion: str = ""
    intensity: int | None = None

    @classmethod
    def of(cls, value: Json) -> Self | None:
        """``value`` read as this record; ``None`` for anything else (the ``null`` of a failed answer)."""
        try:
            return cls.model_validate(value)
        except ValidationError:
            return None


class EmotionGold(EmotionAnswer):
    """An ER gold (``Instance.gold``): the speaker's emotion and its intensity 0-10."""

    intensity: int


class Options(BaseModel):
    """ER's own settings (``--er-checkpoints-per-sample``, ``--er-min-dialogue-words``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    checkpoints_per_sample: StrictInt = Field(
        5, ge=1, description="ER: checkpoints per conversation at most."
    )
    min_dialogue_words: StrictInt = Field(5, ge=0, description="ER: words a checkpoint row has at least.")


EMOTION_KEYS = ("emotion", "predicted_internal_emotion", "internal_emotion", "emotion_description")
INTENSITY_KEYS = ("intensity", "predicted_intensity_score", "intensity_score")
EMOTION_PHRASES: Final = (
    "feels frustrated and unheard",
    "feels hurt and dismissed",
    "feels anxious and uncertain",
    "feels sad and hopeless",
    "feels angry and defensive",
    "feels ashamed and cornered",
    "feels calm and hopeful",
    "feels relieved and understood",
)
"""Emotion phrases of the random baseline, in the style the prompt asks for."""

SYSTEM = """\
You read the inner state of one client in a {scenario} therapy session.

Task: in each item the current row is spoken by a client. Describe what that speaker feels inside as they \
say it, and rate how strongly.

Rules:
- Focus only on the speaker of the current row: not on the {others}, the therapist or the group.
- Use only the rows shown; nothing after the current row is known. Earlier rows only help to interpret; the \
current row's evidence should dominate.
- emotion: a short, concrete phrase that starts with "feels", such as "feels unheard and resentful".
- intensity: an integer from 0 to 10.
- {context} {mode}

{line_format}

{answer}"""
SHAPE = '{"predictions": [{"id": "c1", "emotion": "feels ...", "intensity": 6, "reason": "..."}]}'
PROMPT_HASH = prompts.template_hash(SYSTEM, SHAPE, prompts.SHARED_TEXT)


def gold_emotion(row: Row) -> dict[str, Json] | None:
    """The speaker's first emotion with a description and a valid intensity, as ``{emotion, intensity}``."""
    for item in row.internal_emotion:
        text = clean(item.emotion_description)
        level = item.intensity_value
        if clean(item.person) == row.speaker and text and level is not None:
            return {"emotion": text, "intensity": level}
    return None


def checkpoints(sample: Sample, cfg: TaskConfig) -> list[tuple[Row, dict[str, Json]]]:
    """Eligible client rows with their gold, after the early cut-off and even selection."""
    options = cfg.options_for(INFO.name, Options)
    first_kept = early_cutoff(len(sample.rows))
    eligible = []
    for row in sample.rows:
        if (
            not row.is_client
            or row.row_index < first_kept
            or word_count(row.dialogue_cleaned) < options.min_dialogue_words
        ):
            continue
        gold = gold_emotion(row)
        if gold is not None:
            eligible.append((row, gold))
    return pick_evenly(eligible, options.checkpoints_per_sample, key=lambda pair: pair[0].row_index)


def build(sample: Sample, cfg: TaskConfig) -> list[Instance]:
    size = cfg.shown_size(INFO)
    records = row_records(sample, cfg.mode, cfg.rows)
    out = []
    for row, gold in checkpoints(sample, cfg):
        r = row.row_index
        context = Shown(
            cfg.mode, size, rows=window(records, r, size), current=records[r - 1], speaker=row.speaker
        )
        meta = {"speaker": row.speaker, "position": round(r / len(sample.rows), 4), **turn_meta(row)}
        out.append(make_instance(sample, INFO.name, r, gold, context=context, meta=meta))
    return out


@functools.lru_cache(maxsize=64)
def system_prompt(scenario: Scenario, mode: Mode, size: int) -> str:
    return SYSTEM.format(
        scenario=scenario,
        others="partner" if scenario == "couple" else "other family members",
        **prompts.shared_parts(mode, size, "the current row", SHAPE),
    )


def turn_meta(row: Row) -> dict[str, Json]:
    """The checkpoint's time and words, kept in the prediction record for the judge (ER and VP)."""
    return {"timestamp": timestamp(row), "utterance": clean(row.dialogue_cleaned)}


def current_block(opaque: str, inst: Instance) -> str:
    """An item showing the earlier rows, then the current row (ER and VP)."""
    shown = prompts.shown(inst)
    line = shown.current["line"] if shown.current is not None else None
    body = [prompts.rows_text(shown.rows), f"Current row: {line}"]
    return prompts.item_block(opaque, f"current row {inst.row_index}, spoken by {shown.speaker}", body)


def render(batch: Sequence[Instance], cfg: TaskConfig) -> Request:
    shown = prompts.batch_shown(batch, INFO)
    system = system_prompt(batch[0].scenario, shown.mode, shown.size)
    header = [prompts.session_line(batch)]
    blocks = [current_block(f"c{i}", inst) for i, inst in enumerate(batch, start=1)]
    fields = {
        "emotion": {"type": "string", "maxLength": prompts.REASON_MAX_LENGTH},
        "intensity": {"type": "integer", "minimum": 0, "maximum": 10},
    }
    return prompts.request(INFO, batch, system, prompts.user_message(header, blocks), fields, PROMPT_HASH)


def read_intensity(raw: object) -> int | None:
    """An integer intensity 0..10 (``7``, ``"7"``, ``7.0``); else (``6.5``, ``"high"``, 11) ``None``.

    >>> [read_intensity(x) for x in (7, "7", 7.0, " 7.0 ", 6.5, "high", 11, True, None, "nan")]
    [7, 7, 7, 7, None, None, None, None, None, None]
    """
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return None
    try:
        number = float(raw)
    except (ValueError, OverflowError):
        return None
    if not math.isfinite(number) or not number.is_integer() or not 0 <= number <= 10:
        return None
    return int(number)


def _read(item: dict[str, Any], inst: Instance) -> Prediction:
    present, raw_emotion = field(item, EMOTION_KEYS)
    emotion = clean(raw_emotion) if isinstance(raw_emotion, str) else ""
    if not emotion:
        reason = (
            "no emotion in the answer"
            if not present
            else f"emotion {short(raw_emotion)} is not a description"
        )
        return Prediction.failed(inst.id, f"parse_failure: {reason}")
    present, raw_level = field(item, INTENSITY_KEYS)
    level = read_intensity(raw_level)
    problems: tuple[str, ...] = ()
    if level is None:
        what = "intensity missing" if not present else f"intensity {short(raw_level)} is not an integer 0-10"
        problems = (f"invalid_label: {what}",)
    return Prediction(inst.id, {"emotion": emotion, "intensity": level}, True, problems)


def parse(text: str, batch: Sequence[Instance]) -> list[Prediction]:
    return parse_batch(text, batch, EMOTION_KEYS, _read)


def score(pred: Prediction, inst: Instance) -> Score:
    """``s_int`` = max(1, 5 - |pred - gold|); a missing or invalid intensity gets the floor, 1."""
    answer = EmotionAnswer.of(pred.value) if pred.valid else None
    gold = EmotionGold.model_validate(inst.gold)
    return Score(inst.id, {"s_int": intensity_score(answer.intensity if answer else None, gold.intensity)})


def random_answer(inst: Instance, rng: random.Random) -> Prediction:
    """A phrase of :data:`EMOTION_PHRASES` and an intensity 0-10, uniformly."""
    return Prediction(
        inst.id, {"emotion": rng.choice(EMOTION_PHRASES), "intensity": rng.randint(0, 10)}, True
    )


def majority_answers(group: Sequence[Instance]) -> list[Prediction]:
    """The commonest gold emotion and the commonest gold intensity of the group, for every instance."""
    golds = [gold for inst in group if (gold := EmotionAnswer.of(inst.gold)) is not None]
    emotion = most_common(gold.emotion for gold in golds)
    intensity = most_common(gold.intensity for gold in golds if gold.intensity is not None)
    value = {"emotion": emotion[0] if emotion else "", "intensity": intensity[0] if intensity else None}
    return [Prediction(inst.id, dict(value), True) for inst in group]


# The judge (paper section 4.2, protocol section 6): ``emotion_score`` 1-5 of the predicted emotion text
# against the gold one. It is shown what the reference scripts' ``judge_prompt`` shows (the utterance, its
# time, both intensities, the model's reason); intensity itself is scored by formula (``s_int``).
JUDGE_RUBRIC = """You are grading a therapy user-understanding task. For each checkpoint, a system \
predicted the internal emotion of the CURRENT speaker right after they begin speaking. Compare the \
predicted emotion description with the gold emotion description. Be lenient about paraphrases and \
near-synonyms.

emotion_score: integer 1-5.
  1 = wrong or contradictory, 2 = weakly related, 3 = partially matches, 4 = close, 5 = almost exact.
Do not grade intensity: it is scored separately, by formula.

Return JSON only, exactly in this shape, with one entry per checkpoint id:
{"graded": [{"id": "c1", "emotion_score": 4, "verdict": "strong|pass|borderline|fail", \
"notes": "short reason"}]}"""


def judge_view(gold: Json, prediction: Json, turn: TurnFacts) -> dict[str, Json]:
    """What the reference scripts' judge sees: the turn (speaker, time, words), gold and predicted emotion
    and intensity, and the model's reason.

    >>> judge_view({"emotion": "hurt", "intensity": 6}, {"emotion": "sad", "intensity": 4},
    ...            TurnFacts("Ana", "1-2s", "You never call.", "tone"))["predicted_intensity"]
    4
    """
    gold_record, answer = EmotionAnswer.of(gold), EmotionAnswer.of(prediction)
    return {
        "speaker": turn.speaker,
        "timestamp": turn.timestamp,
        "utterance": turn.utterance,
        "gold_emotion": gold_record.emotion if gold_record else None,
        "gold_intensity": gold_record.intensity if gold_record else None,
        "predicted_emotion": answer.emotion if answer else None,
        "predicted_intensity": answer.intensity if answer else None,
        "reason": turn.reason,
    }


class EmotionScores(BaseModel):
    """The merged scores of an ER instance that ``s_er`` is derived from: ``s_int`` as scored at run time
    (absent from a line scored without it) and the judges' mean ``s_emo`` (``None`` while unscored). The
    other merged scores (``bertscore_f1``) are not read here."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    s_int: StrictFloat | None = None
    s_emo: StrictFloat | None = None


def _intensity(scores: EmotionScores, gold: Json, prediction: Json, valid: bool) -> float:
    """``s_int`` as scored at run time, else recomputed from gold and prediction (the floor, 1, without)."""
    if scores.s_int is not None:
        return scores.s_int
    answer = EmotionAnswer.of(prediction) if valid else None
    gold_record = EmotionAnswer.of(gold)
    if gold_record is None or gold_record.intensity is None or answer is None or answer.intensity is None:
        return 1.0
    return intensity_score(answer.intensity, gold_record.intensity)


def derived_scores(
    scores: Mapping[str, float | None], gold: Json, prediction: Json, valid: bool
) -> dict[str, float | None]:
    """``s_er = (s_emo + s_int) / 2``, ``None`` while ``s_emo`` is unscored.

    >>> derived_scores({"s_emo": 4.0}, {"intensity": 5}, {"intensity": 3}, True)
    {'s_er': 3.5}
    """
    read = EmotionScores.model_validate(scores)
    s_int = _intensity(read, gold, prediction, valid)
    return {"s_er": emotion_score(read.s_emo, s_int) if read.s_emo is not None else None}


def bertscore_pairs(gold: Json, prediction: Json, valid: bool) -> TextPairs:
    """The one BERTScore pair: predicted against gold emotion description.

    >>> bertscore_pairs({"emotion": "hurt"}, {"emotion": "feels hurt", "intensity": 3}, True)
    ((('feels hurt', 'hurt'),),)
    >>> bertscore_pairs({"emotion": "hurt"}, None, False)
    ((),)
    """
    gold_record = EmotionAnswer.of(gold)
    answer = EmotionAnswer.of(prediction) if valid else None
    gold_text = gold_record.emotion.strip() if gold_record else ""
    pred_text = answer.emotion.strip() if answer else ""
    return (((pred_text, gold_text),) if pred_text and gold_text else (),)


JUDGE = JudgeRubric(
    title="Emotion recognition",
    rubric=JUDGE_RUBRIC,
    view=judge_view,
    fields=(ScoreField("emotion_score", "s_emo", 1, 5),),
    agreement_key="s_emo",
    derive=derived_scores,
    to_five=float,
    bertscore_pairs=bertscore_pairs,
    rules={
        "llm": "(s_emo + s_int) / 2 over the judged instances",
        "bertscore_f1": "the predicted emotion description against the gold one; 0 for an invalid answer",
    },
)


INFO = TaskInfo(
    prompt_hash=PROMPT_HASH,
    name="er",
    kind="generation",
    metrics=EMOTION_SCORES,
    paper_columns=(PaperColumn("ER LLM", "llm", 1.0, 2), PaperColumn("ER BERT", "bertscore_f1", 1.0, 4)),
    default_batch_size=5,
    default_context_size=3,
    max_tokens=1800,
    random_answer=random_answer,
    majority_answers=majority_answers,
    judge=JUDGE,
    instance_score=("s_er", 5.0),
    video=True,
    options=Options,
    relation_intensive=False,
    paper_position=5,
    analyses=(relational.INTENSITY_BAND,),
)
