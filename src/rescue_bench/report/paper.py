"""The paper's published Table 5 (10 LLMs, zero-shot, couple and family pooled), for ``report --with-paper``.

Copied from the paper (Hu et al., 2026, Table 5). These are **published numbers**, not results of this
toolkit: the paper's judge is GPT-5.4, its BERTScore backbone is not stated (the reference scripts default to
``distilbert-base-uncased``, layer 5, which this toolkit uses by default too), and the released ITP script
writes the label into each item's id (``__pos_after_row`` / ``__neg_after_row``), so the published ITP numbers
may have been made with a prompt that leaked it. That is an inference from the script, not something the paper
says (docs/protocol-differences.md). They are context, not a target.
ITP, RPP, STP and SSP are percentages; ER and VP "LLM" are 1-5 judge scores; "BERT" is BERTScore F1.
"""

from __future__ import annotations

from rescue_bench.tasks import task_info

SOURCE = "Hu et al. (2026), RESCUE-Bench, Table 5 (published)"
COLUMNS: tuple[tuple[str, str], ...] = (
    ("itp", "precision"),
    ("itp", "recall"),
    ("itp", "f1"),
    ("rpp", "accuracy"),
    ("stp", "recall_at_1"),
    ("stp", "mrr"),
    ("ssp", "recall_at_1"),
    ("ssp", "mrr"),
    ("er", "llm"),
    ("er", "bertscore_f1"),
    ("vp", "llm"),
    ("vp", "bertscore_f1"),
)
"""(task, metric) of each published value, in the paper's column order."""

TABLE5: tuple[tuple[str, tuple[float, ...]], ...] = (
    ("Qwen-Plus", (55.78, 89.99, 68.87, 38.27, 65.61, 79.21, 26.21, 36.95, 3.58, 0.8167, 3.20, 0.8587)),
    ("Qwen3-Max", (79.81, 70.99, 75.14, 43.22, 61.09, 76.28, 31.89, 45.76, 4.04, 0.8224, 3.35, 0.8647)),
    ("Qwen3.5-Plus", (98.00, 91.42, 94.60, 40.27, 69.40, 81.57, 31.70, 44.98, 4.22, 0.8321, 3.94, 0.8642)),
    ("DeepSeek-R1", (90.71, 72.12, 80.36, 37.89, 61.88, 76.88, 29.38, 39.71, 4.08, 0.8227, 3.35, 0.8635)),
    ("DeepSeek-V3.2", (93.42, 81.17, 86.86, 36.08, 62.68, 77.14, 33.05, 46.17, 4.13, 0.8259, 3.86, 0.8588)),
    (
        "DeepSeek-V4-Flash",
        (91.10, 78.31, 84.22, 39.39, 62.61, 77.61, 30.12, 44.13, 4.04, 0.8153, 4.08, 0.8577),
    ),
    ("DeepSeek-V4-Pro", (92.24, 75.91, 83.28, 45.60, 71.04, 82.23, 37.26, 52.00, 4.17, 0.8246, 3.90, 0.8574)),
    ("Kimi K2.5", (88.01, 84.03, 85.98, 45.26, 59.13, 75.60, 34.15, 47.66, 4.18, 0.8225, 3.64, 0.8620)),
    ("MiniMax M2.5", (89.64, 75.98, 82.25, 39.85, 62.55, 77.01, 29.08, 42.89, 4.01, 0.8201, 3.25, 0.8561)),
    ("GPT-4o", (86.67, 82.63, 84.60, 38.69, 67.38, 80.00, 35.92, 49.36, 4.01, 0.8206, 3.24, 0.8674)),
)


def published_rows() -> list[tuple[str, dict[tuple[str, str], float]]]:
    """The published rows as (model, {(task, metric): value on this toolkit's scale}); percentages become
    fractions, as in ``scores.json``.

    >>> model, values = published_rows()[-1]
    >>> model, values[("itp", "f1")], values[("vp", "bertscore_f1")]
    ('GPT-4o', 0.846, 0.8674)
    """
    out = []
    for model, values in TABLE5:
        scaled = {
            (task, metric): round(v / 100, 6) if task_info(task).percent else v
            for (task, metric), v in zip(COLUMNS, values, strict=True)
        }
        out.append((model, scaled))
    return out
