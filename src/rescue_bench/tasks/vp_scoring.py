"""VP's options, its answer record, and how its answers are scored: the judge's rubric and what it is
shown, the ``llm`` derived from the judge's total, the BERTScore pairs, and the readings a run's options
choose (``--vp-bert``, ``--vp-judge-scale``). The task itself (instances, prompt, parsing) is
:mod:`rescue_bench.tasks.vp`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, ValidationError

from rescue_bench.errors import DataError
from rescue_bench.metrics.generation import viewpoint_integer, viewpoint_to_five
from rescue_bench.records import Json
from rescue_bench.tasks.base import JudgeRubric, JudgeTotal, Reading, ScoreField, TextPairs, TurnFacts

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


class ViewpointScores(BaseModel):
    """The merged scores of a VP instance that ``llm`` is derived from: the judges' mean ``total`` (pairing
    0-2 + viewpoint 0-4; ``None`` while unscored). The other merged scores are not read here."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    total: StrictFloat | None = None


def derived_scores(
    scores: Mapping[str, float | None], gold: Json, prediction: Json, valid: bool
) -> dict[str, float | None]:
    """``llm = viewpoint_to_five(total)``, ``None`` while ``total`` is unscored.

    >>> derived_scores({"total": 6.0}, [], [], True)
    {'llm': 5.0}
    """
    total = ViewpointScores.model_validate(scores).total
    return {"llm": viewpoint_to_five(total) if total is not None else None}


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


class RecordedOptions(BaseModel):
    """The task options a run's ``run.json`` config records (``task_options``), as VP reads them: its own,
    the defaults for a run recorded before an option (or VP's options) existed."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    vp: Options = DEFAULT_OPTIONS


class RecordedConfig(BaseModel):
    """The part of a run's recorded config VP's readings depend on."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    task_options: RecordedOptions = RecordedOptions()


def recorded_options(config: Mapping[str, Json]) -> Options:
    """VP's options as a run's ``run.json`` config records them (``task_options.vp``); the defaults for a
    run recorded before an option existed. A damaged record is a one-line ``DataError`` naming the field.

    >>> recorded_options({"task_options": {"vp": {"bert": "precision-aware"}}}).bert
    'precision-aware'
    >>> recorded_options({}).judge_scale
    'linear'
    >>> recorded_options({"task_options": {"vp": {"bert": "max"}}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rescue_bench.errors.DataError: run.json: config.task_options.vp.bert: Input should be ...
    """
    try:
        return RecordedConfig.model_validate(config).task_options.vp
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise DataError(f"run.json: config.{where}: {first['msg']}") from None


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
