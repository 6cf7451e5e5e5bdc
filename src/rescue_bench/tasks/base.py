"""The shape every task module follows, and the settings they share.

A task module exposes its facts in one record and four pure functions::

    INFO: TaskInfo                  # name, kind, default sizes, output cap, metrics, judge, baselines...

    def build(sample: Sample, cfg: TaskConfig) -> list[Instance]
    def render(batch: Sequence[Instance], cfg: TaskConfig) -> Request
    def parse(text: str, batch: Sequence[Instance]) -> list[Prediction]   # never raises on model text
    def score(pred: Prediction, inst: Instance) -> Score

``build`` puts what each instance's prompt shows on it as a :class:`~rescue_bench.records.Shown`, which
``render`` reads back (:func:`rescue_bench.tasks.prompts.shown`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel

from rescue_bench.data.schema import Sample
from rescue_bench.errors import ConfigError
from rescue_bench.metrics.relational_gold import AnalysisSpec
from rescue_bench.metrics.spec import MetricSpec
from rescue_bench.records import (
    Instance,
    Json,
    Mode,
    Prediction,
    Request,
    RowRecord,
    Score,
    Shown,
    TaskKind,
)
from rescue_bench.taxonomy import Scenario

MODES: tuple[Mode, ...] = ("dialogue", "audio", "visual", "audiovisual", "video")
MODE_ALIASES: dict[str, Mode] = {
    "text": "dialogue",
    "turn_video_audio": "video",
    "frames": "video",
    "speaker_frames_audio": "video",
}
GoldField = Literal["auto", "relation_cycle_state", "relation_pattern"]
OptionsT = TypeVar("OptionsT", bound=BaseModel)


RenderedRows = tuple[RowRecord, ...]
"""A sample's rows rendered in one mode (:func:`rescue_bench.tasks.context.row_records`)."""


class RowCache:
    """Rendered rows by sample and mode, kept by the config that owns the cache: the tasks of a run's plans
    (``engine.plans`` builds them all with one config) render each sample once and share its rows.

    An entry holds its sample, so the sample's ``id`` cannot be reused while the cache lives; a sample
    stage (``no-cues``) makes a new sample, and so an entry of its own.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[tuple[int, str], tuple[Sample, RenderedRows]] = {}

    def get(self, sample: Sample, mode: Mode) -> RenderedRows | None:
        entry = self._entries.get((id(sample), mode))
        return None if entry is None else entry[1]

    def put(self, sample: Sample, mode: Mode, rows: RenderedRows) -> None:
        self._entries[(id(sample), mode)] = (sample, rows)


@dataclass(frozen=True, slots=True)
class TaskConfig:
    """Settings shared by all tasks; ``None`` means the task's own default."""

    mode: Mode = "dialogue"
    context_size: int | None = None
    batch_size: int | None = None
    options: Mapping[str, BaseModel] = field(default_factory=dict, hash=False)
    """Task name -> that task's ``Options`` (a frozen pydantic model); an absent task uses its defaults."""
    rows: RowCache = field(default_factory=RowCache, hash=False, compare=False, repr=False)
    """The rows rendered so far with this config (copies made by ``replace`` share it)."""

    def options_for(self, name: str, model_type: type[OptionsT]) -> OptionsT:
        """The options of task ``name``: those given, else the defaults of ``model_type``.

        >>> from pydantic import BaseModel
        >>> class Opts(BaseModel):
        ...     n: int = 5
        >>> given = TaskConfig(options={"x": Opts(n=2)})
        >>> TaskConfig().options_for("x", Opts).n, given.options_for("x", Opts).n
        (5, 2)
        """
        given = self.options.get(name)
        if given is None:
            return model_type()
        if not isinstance(given, model_type):
            raise TypeError(
                f"options of task {name!r} are a {type(given).__name__}, not {model_type.__name__}"
            )
        return given

    def shown_size(self, info: TaskInfo) -> int:
        """The rows an item shows before its cut: the configured size, else the task's default; ``-1`` all,
        ``0`` none, ``N`` the last ``N``.

        >>> from rescue_bench.tasks import task_info
        >>> TaskConfig().shown_size(task_info("rpp")), TaskConfig(context_size=2).shown_size(task_info("rpp"))
        (-1, 2)
        """
        size = info.default_context_size if self.context_size is None else self.context_size
        if size < -1:
            raise ConfigError(
                f"context size {size} is not valid: use -1 (all earlier rows), 0 (none) or N > 0"
            )
        return size


def resolve_mode(name: str) -> Mode:
    """Accept the reference scripts' mode names as aliases."""
    if name in MODES:
        return name
    if name in MODE_ALIASES:
        return MODE_ALIASES[name]
    raise ConfigError(f"unknown mode {name!r}; choose one of {', '.join(MODES)}")


RandomRule = Callable[[Instance, random.Random], Prediction]
"""The random baseline's answer to one instance, drawn from the generator it is given."""
MajorityRule = Callable[[Sequence[Instance]], list[Prediction]]
"""The majority baseline's answers to instances of one task and one scenario (it reads their gold)."""


@dataclass(frozen=True, slots=True)
class PaperColumn:
    """One column of the paper's results table (Table 5, and Table 11 per scenario)."""

    header: str
    """Column header, such as ``"ITP F1"``."""
    metric: str
    """The metric's key in ``scores.json``."""
    scale: float = 1.0
    """Display factor: 100 for a percentage."""
    decimals: int = 2


@dataclass(frozen=True, slots=True)
class TurnFacts:
    """What a judge is told about a checkpoint besides gold and prediction, as the reference scripts'
    ``judge_prompt`` tells it: who speaks, when, what they say, and the answer's own short reason."""

    speaker: str | None = None
    timestamp: str | None = None
    utterance: str | None = None
    reason: str | None = None


JudgeView = Callable[[Json, Json, TurnFacts], dict[str, Json]]
"""What the judge sees of one checkpoint, from (gold, prediction value, turn facts); key order is prompt
text."""
DerivedRule = Callable[[Mapping[str, float | None], Json, Json, bool], dict[str, float | None]]
"""Scores computed from the merged judge scores and (gold, prediction, valid), such as ER's ``s_er``."""
TextPairs = tuple[tuple[tuple[str, str], ...], ...]
"""BERTScore's (candidate, reference) pairs of one instance, one group per gold item."""
PairRule = Callable[[Json, Json, bool], TextPairs]


@dataclass(frozen=True, slots=True)
class Reading:
    """How a judged task's scores are read under a run's recorded options (``run.json``'s config): where
    the task offers more than one reading of the protocol (VP's ``--vp-bert``, ``--vp-judge-scale``)."""

    rules: Mapping[str, str] = field(default_factory=dict)
    """Metric key -> how it is computed, in words (``_meta.scoring_rules``), over the rubric's rules."""
    label: str | None = None
    """The readings that are not the defaults, as headings name them; ``None`` for the defaults."""
    greedy_bertscore: bool = False
    """BERTScore over a greedy one-to-one matching of gold and predicted items (precision-aware)."""
    to_score: Callable[[float], float] | None = None
    """The instance's ``llm`` from its judge total, when not the task's own ``derive``."""


ReadingRule = Callable[[Mapping[str, Json]], Reading]
"""A run's config -> the task's :class:`Reading` (a bad recorded option is a one-line ``DataError``)."""
"""The BERTScore pairs of an instance from (gold, prediction, valid); an instance scores the mean over
groups of the best pair in each group (0 for an empty group)."""


@dataclass(frozen=True, slots=True)
class ScoreField:
    """One integer score of the judge's reply, checked against its range and never clamped."""

    reply_key: str
    """The key in the judge's JSON, such as ``"emotion_score"``."""
    score_key: str
    """The key in ``judgments.jsonl`` and the merged scores, such as ``"s_emo"``."""
    low: int
    high: int


@dataclass(frozen=True, slots=True)
class JudgeTotal:
    """A score the judge pass adds up from the fields itself, never taken from the judge."""

    key: str
    claimed_key: str | None = None
    """A total the judge may volunteer: ignored, with a note when it disagrees."""


@dataclass(frozen=True, slots=True)
class JudgeRubric:
    """How an LLM judge scores a task (``judge/`` reads it): rubric, what is shown, scores and their rules."""

    title: str
    """Human-readable name of the task, as on the rating pages."""
    rubric: str
    """The judge's system prompt (hashed into every judgment's ``prompt_hash``)."""
    view: JudgeView
    fields: tuple[ScoreField, ...]
    agreement_key: str
    """The judge score compared between judges (and with human ratings)."""
    derive: DerivedRule
    to_five: Callable[[float], float]
    """The agreement score on the 1-5 scale of the human ratings (``judge calibrate``)."""
    bertscore_pairs: PairRule
    total: JudgeTotal | None = None
    rules: Mapping[str, str] = field(default_factory=dict)
    """Metric key -> how it is computed, in words: recorded in ``scores.json`` (``_meta.scoring_rules``)."""
    reading: ReadingRule | None = None
    """The task's readings under a run's options (:meth:`read`); ``None``: one reading, :attr:`rules`."""

    def read(self, config: Mapping[str, Json]) -> Reading:
        """How this task's scores are read under a run's recorded config."""
        found = Reading() if self.reading is None else self.reading(config)
        return Reading({**self.rules, **found.rules}, found.label, found.greedy_bertscore, found.to_score)

    def __post_init__(self) -> None:
        keys = self.score_keys
        if not self.fields or len(set(keys)) != len(keys) or self.agreement_key not in keys:
            raise ValueError(
                f"judge rubric {self.title!r}: score keys {keys} are repeated or lack {self.agreement_key!r}"
            )

    @property
    def score_keys(self) -> tuple[str, ...]:
        """The judge scores of a judgment line, in order: the fields, then the total."""
        total = () if self.total is None else (self.total.key,)
        return (*(f.score_key for f in self.fields), *total)

    def _range(self, key: str) -> tuple[int, int]:
        if self.total is not None and key == self.total.key:
            return sum(f.low for f in self.fields), sum(f.high for f in self.fields)
        return next((f.low, f.high) for f in self.fields if f.score_key == key)

    @property
    def floors(self) -> dict[str, float]:
        """The judge scores of an invalid prediction: each score's lowest value."""
        return {key: float(self._range(key)[0]) for key in self.score_keys}

    @property
    def scale(self) -> tuple[int, ...]:
        """The ordinal value domain of the agreement score."""
        low, high = self._range(self.agreement_key)
        return tuple(range(low, high + 1))


@dataclass(frozen=True, slots=True)
class TaskInfo:
    """Everything about a task besides its four functions; the registry derives every task list from these."""

    name: str
    """The task's name, also its entry point's (``itp``, ``rpp``...)."""
    kind: TaskKind
    metrics: MetricSpec
    """Headline metrics, McNemar-ability and how records aggregate (``metrics.aggregate``)."""
    paper_columns: tuple[PaperColumn, ...]
    """The task's columns in the paper's results table, in order (may be empty)."""
    default_batch_size: int
    """Instances per request unless ``--batch-size`` says otherwise (``engine.plans`` decides)."""
    default_context_size: int
    """-1 all prior rows, 0 none, N the last N prior rows."""
    max_tokens: int
    """Output cap of a request."""
    random_answer: RandomRule
    majority_answers: MajorityRule
    judge: JudgeRubric | None = None
    """How an LLM judge scores the task after the run (``judge/``); ``None``: not judged."""
    percent: bool = False
    """Metrics are fractions shown as percentages."""
    video: bool = False
    """Video mode attaches per-turn clips to this task's requests."""
    gold_labels: Callable[[Scenario], tuple[str, ...]] | None = None
    """The closed gold label set of a scenario, for the report's confusion matrices and label shares."""
    target_kinds: bool = False
    """Gold answers are people, so the report groups them by kind (the group, or one person)."""
    pattern_analyses: bool = False
    """The report's per-label accuracy, accuracy by relative position and gold transitions (paper Fig. 3-5,
    App. E.2) are about this task's labels."""
    options: type[BaseModel] | None = None
    """The task's own settings (a frozen pydantic model), or ``None``."""
    instance_score: tuple[str, float] | None = None
    """A generation task's per-instance score and its full mark (ER ``s_er`` 5, VP ``total`` 6), for
    instance-level exports (``adapters.eee``); other kinds use their kind's (``correct``, ``recall_at_1``)."""
    relation_intensive: bool = False
    """The paper's grouping (Sec. 5.3): ``True`` for the relation-intensive tasks (RPP, STP, SSP, VP),
    ``False`` for the local affective and intervention cues (ITP, ER); the report's profile groups by it."""
    analyses: tuple[AnalysisSpec, ...] = ()
    """The relation-aware analyses of the task's records (``metrics.relational``, docs/relational.md), in
    report order; ``scores.json``'s ``_relational`` and the report hold one entry per spec."""
    prompt_hash: str = ""
    """The hash of the task's prompt templates (:func:`~rescue_bench.tasks.prompts.template_hash`), recorded
    in ``run.json``; empty: the hash of the first rendered request is recorded instead."""
    paper_position: int | None = None
    """The task's place in the paper's task order (ITP 1 ... VP 6); the registry lists these tasks first, in
    that order, then the others sorted by name."""

    def __post_init__(self) -> None:
        if self.kind != self.metrics.kind:
            raise ValueError(f"task {self.name!r} is {self.kind} but its metrics are {self.metrics.kind}")

    @property
    def judged(self) -> bool:
        """Scored by an LLM judge after the run (``judge/``)."""
        return self.judge is not None

    @property
    def headline(self) -> tuple[str, ...]:
        """Metrics reported with a CI, in ``scores.json`` order."""
        return self.metrics.headline

    @property
    def mcnemar(self) -> bool:
        """Top-1 correctness is defined, so ``compare`` adds McNemar's test."""
        return self.metrics.mcnemar


def make_instance(
    sample: Sample,
    task: str,
    row_index: int,
    gold: Json,
    *,
    candidates: tuple[str, ...] = (),
    context: Shown | None = None,
    meta: dict[str, Json] | None = None,
) -> Instance:
    """The instance of ``task`` at ``row_index`` of ``sample``, with the id ``<sample>::<task>::<row>``."""
    return Instance(
        f"{sample.sample_id}::{task}::{row_index}",
        task,
        sample.sample_id,
        sample.scenario,
        row_index,
        gold,
        candidates,
        context,
        {} if meta is None else meta,
    )


class Task(Protocol):
    """What the engine and the CLI need from a task module: its facts and its four functions."""

    INFO: TaskInfo

    def build(self, sample: Sample, cfg: TaskConfig) -> list[Instance]: ...

    def render(self, batch: Sequence[Instance], cfg: TaskConfig) -> Request: ...

    def parse(self, text: str, batch: Sequence[Instance]) -> list[Prediction]: ...

    def score(self, pred: Prediction, inst: Instance) -> Score: ...


def check_task(task: Task, where: str) -> None:
    """Raise :class:`ConfigError` when ``task`` lacks part of the protocol or its INFO is not a TaskInfo.

    ``where`` names the task's origin (an entry point) for the message.
    """
    missing = [attr for attr in ("INFO", "build", "render", "parse", "score") if not hasattr(task, attr)]
    if missing:
        raise ConfigError(f"task {where} lacks {', '.join(missing)}")
    info = task.INFO
    if not isinstance(info, TaskInfo):
        raise ConfigError(f"task {where}: INFO is a {type(info).__name__}, not a TaskInfo")
