"""Two fault-free runs of the same command, in fresh processes, must give the same ``scores.json``.

Python gives every process its own string-hash seed (``PYTHONHASHSEED``), so nothing a run writes may depend
on the iteration order of a set of strings. ``bert_score`` embeds the distinct sentences in batches ordered by
word count, with ties in ``set`` order (``dedup_and_sort`` in ``bert_score.utils``); with large calls the
batches, and with them the last float bits of BERTScore F1, changed with the hash seed (about a third of the
ER/VP judgment lines differed in the 7th digit). ``BertScorer.f1`` now scores in half-batch chunks of sorted
pairs, and this test keeps it that way: it fails if a score depends on the hash seed again.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.chaos.harness import Client
from tests.fakes.chaos_server import NO_FAULTS, ChaosServer

from rescue_bench.data.synth import write_synthetic


@pytest.mark.slow
def test_two_clean_runs_in_fresh_processes_score_to_the_last_digit(tmp_path: Path) -> None:
    data = write_synthetic(tmp_path / "synthetic.jsonl", samples=20, seed=3).path
    outs = []
    with ChaosServer(seed=3, rates=NO_FAULTS) as server:
        server.begin_session(0)
        for hash_seed in ("1", "2"):
            client = Client(
                server.base_url,
                data,
                tmp_path / f"run_{hash_seed}",
                tmp_path / f"cache_{hash_seed}",
                10.0,
                hash_seed=hash_seed,
            )
            client.finish(240)
            outs.append(client.out)
    first, second = ((out / "predictions.jsonl").read_bytes() for out in outs)
    assert first == second, "the predictions differ: the fake server or the engine is not deterministic"
    assert (outs[0] / "scores.json").read_bytes() == (outs[1] / "scores.json").read_bytes()
