"""Classification metrics of ITP (binary) and RPP (multiclass top-1), computed from confusion counts.

Every metric is a function of a confusion table, written so that it also takes a stack of tables (shape
``(..., rows, columns)``): the bootstrap (:mod:`rescue_bench.metrics.bootstrap`) evaluates a thousand
resampled tables in one call, with the same code that gives the point estimate.

Invalid predictions (``None``, or a label outside the closed set) get their own confusion column,
``<invalid>``. Such a prediction is wrong for its gold class (it lowers that class's recall); it is never
dropped and never turned into a real label. In the binary metrics (ITP) it is the wrong class outright: a
false negative on a positive item and a **false positive on a negative one**, so it lowers precision too and a
non-answer is never free in the paper's P/R/F1. In the multiclass metrics (RPP) there is no one wrong class,
so it counts towards no class's precision. Every zero denominator
gives 0.0, as in the reference scripts and scikit-learn's ``zero_division=0``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
INVALID = "<invalid>"
"""Confusion column of predictions that are missing, unparsable or outside the label set."""


def safe_div(num: npt.ArrayLike, den: npt.ArrayLike) -> FloatArray:
    """Elementwise ``num / den`` with 0.0 wherever ``den`` is 0.

    >>> safe_div([1, 1], [2, 0]).tolist()
    [0.5, 0.0]
    """
    num_arr = np.asarray(num, dtype=np.float64)
    den_arr = np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast_shapes(num_arr.shape, den_arr.shape), dtype=np.float64)
    np.divide(num_arr, den_arr, out=out, where=den_arr != 0)
    return out


def confusion_counts(
    golds: Sequence[Hashable],
    preds: Sequence[Hashable | None],
    rows: Sequence[Hashable],
    columns: Sequence[Hashable],
) -> npt.NDArray[np.int64]:
    """Count (gold, prediction) pairs into a ``rows x (columns + <invalid>)`` table.

    A prediction that is ``None`` or not in ``columns`` lands in the last column, ``<invalid>``.

    Raises:
        ValueError: a gold label is not one of ``rows``, or the two sequences differ in length.

    >>> confusion_counts(["a", "b", "b"], ["a", "a", None], ["a", "b"], ["a", "b"]).tolist()
    [[1, 0, 0], [1, 0, 1]]
    """
    if len(golds) != len(preds):
        raise ValueError(f"{len(golds)} gold labels but {len(preds)} predictions")
    row_of = {label: i for i, label in enumerate(rows)}
    col_of = {label: j for j, label in enumerate(columns)}
    invalid = len(columns)
    table = np.zeros((len(rows), len(columns) + 1), dtype=np.int64)
    for gold, pred in zip(golds, preds, strict=True):
        if gold not in row_of:
            raise ValueError(f"gold label {gold!r} is not one of {list(rows)}")
        table[row_of[gold], col_of.get(pred, invalid) if pred is not None else invalid] += 1
    return table


def binary_from_confusion(table: npt.ArrayLike) -> dict[str, FloatArray]:
    """Binary metrics from a ``(..., 2, 3)`` table: rows gold (positive, negative), columns predicted
    (positive, negative, invalid).

    Precision, recall and F1 are given for both classes; the unsuffixed ones are of the positive class (the
    paper's ITP columns). An invalid answer is the wrong class: on a negative item it is a false positive
    (in ``precision``), on a positive one a false negative (in ``precision_no``). ``balanced_accuracy`` is
    the plain mean of the two recalls, as in the reference scripts (a class without gold items contributes a
    recall of 0).

    >>> m = binary_from_confusion([[3, 1, 1], [2, 4, 1]])
    >>> {k: round(float(m[k]), 4) for k in ("precision", "recall", "f1", "recall_no", "accuracy")}
    {'precision': 0.5, 'recall': 0.6, 'f1': 0.5455, 'recall_no': 0.5714, 'accuracy': 0.5833}
    """
    t = np.asarray(table, dtype=np.float64)
    tp, fn, inv_pos = t[..., 0, 0], t[..., 0, 1], t[..., 0, 2]
    fp, tn, inv_neg = t[..., 1, 0], t[..., 1, 1], t[..., 1, 2]
    gold_pos, gold_neg = tp + fn + inv_pos, fp + tn + inv_neg
    pred_pos, pred_neg = tp + fp + inv_neg, fn + tn + inv_pos
    recall, recall_no = safe_div(tp, gold_pos), safe_div(tn, gold_neg)
    return {
        "precision": safe_div(tp, pred_pos),
        "recall": recall,
        "f1": safe_div(2 * tp, pred_pos + gold_pos),
        "precision_no": safe_div(tn, pred_neg),
        "recall_no": recall_no,
        "f1_no": safe_div(2 * tn, pred_neg + gold_neg),
        "accuracy": safe_div(tp + tn, gold_pos + gold_neg),
        "balanced_accuracy": (recall + recall_no) / 2,
    }


def binary_metrics(
    golds: Sequence[str], preds: Sequence[str | None], positive: str = "yes", negative: str = "no"
) -> dict[str, Any]:
    """Binary classification metrics with ``positive`` as the positive class (ITP: "yes").

    ``tp``, ``fp``, ``tn``, ``fn`` count valid predictions only; ``invalid`` counts the rest, which are the
    wrong class in every metric (:func:`binary_from_confusion`). ``precision``/``recall``/``f1`` are of the
    positive class, ``*_no`` of the negative class. Empty input gives zeros.

    Raises:
        ValueError: a gold label is neither ``positive`` nor ``negative``.

    >>> m = binary_metrics(["yes", "yes", "no", "no"], ["yes", None, "yes", "no"])
    >>> m["tp"], m["fp"], m["tn"], m["fn"], m["invalid"], m["precision"], m["recall"], m["accuracy"]
    (1, 1, 1, 0, 1, 0.5, 0.5, 0.5)
    >>> m["confusion"]["counts"]
    [[1, 0, 1], [1, 1, 0]]
    >>> binary_metrics([], [])["f1"]
    0.0
    """
    classes = (positive, negative)
    table = confusion_counts(golds, preds, classes, classes)
    out: dict[str, Any] = {
        "n": len(golds),
        "tp": int(table[0, 0]),
        "fp": int(table[1, 0]),
        "tn": int(table[1, 1]),
        "fn": int(table[0, 1]),
        "invalid": int(table[:, 2].sum()),
    }
    out.update({name: float(value) for name, value in binary_from_confusion(table).items()})
    out["confusion"] = {"rows": list(classes), "columns": [*classes, INVALID], "counts": table.tolist()}
    return out


def multiclass_from_confusion(table: npt.ArrayLike, n_labels: int) -> dict[str, FloatArray]:
    """Multiclass top-1 metrics from a ``(..., rows, n_labels + 1)`` table.

    The first ``n_labels`` rows and columns are the label set in the same order; the last column holds invalid
    predictions; rows after ``n_labels`` are gold labels outside the set (always wrong, not in the macro
    mean). Macro means run over **all** ``n_labels`` labels, those without gold items included, as in the
    reference.

    >>> m = multiclass_from_confusion([[2, 0, 0, 0], [1, 1, 0, 1], [0, 0, 0, 0]], 3)
    >>> round(float(m["accuracy"]), 4), m["recall"].tolist(), round(float(m["macro_f1"]), 4)
    (0.6, [1.0, 0.3333333333333333, 0.0], 0.4333)
    """
    t = np.asarray(table, dtype=np.float64)
    tp = np.diagonal(t[..., :n_labels, :n_labels], axis1=-2, axis2=-1)
    predicted = t[..., :, :n_labels].sum(axis=-2)
    support = t[..., :n_labels, :].sum(axis=-1)
    precision, recall = safe_div(tp, predicted), safe_div(tp, support)
    f1 = safe_div(2 * tp, predicted + support)

    def macro(values: FloatArray) -> FloatArray:
        return values.mean(axis=-1) if n_labels else np.zeros(values.shape[:-1])

    return {
        "accuracy": safe_div(tp.sum(axis=-1), t.sum(axis=(-2, -1))),
        "macro_precision": macro(precision),
        "macro_recall": macro(recall),
        "macro_f1": macro(f1),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "support": support,
    }


def multiclass_metrics(
    golds: Sequence[str], preds: Sequence[str | None], labels: Sequence[str]
) -> dict[str, Any]:
    """Top-1 multiclass metrics (RPP) over a closed label set.

    Accuracy counts every instance. Macro precision/recall/F1 average over all ``labels``, zero-support labels
    included. ``per_label`` holds precision, recall, F1 and support per label. The confusion matrix is gold x
    predicted with an ``<invalid>`` column; a gold label outside ``labels`` gets its own row after the label
    rows.

    >>> m = multiclass_metrics(["a", "a", "b", "b", "b"], ["a", "a", "a", "b", None], ["a", "b", "c"])
    >>> m["accuracy"], round(m["macro_f1"], 4), m["per_label"]["b"]
    (0.6, 0.4333, {'precision': 1.0, 'recall': 0.3333333333333333, 'f1': 0.5, 'support': 3})
    >>> m["confusion"]["columns"], m["confusion"]["counts"][1]
    (['a', 'b', 'c', '<invalid>'], [1, 1, 0, 1])
    >>> multiclass_metrics([], [], ["a"])["macro_f1"]
    0.0
    """
    label_list = list(dict.fromkeys(labels))
    extra = [g for g in dict.fromkeys(golds) if g not in set(label_list)]
    table = confusion_counts(golds, preds, label_list + extra, label_list)
    m = multiclass_from_confusion(table, len(label_list))
    per_label = {
        label: {
            "precision": float(m["precision"][i]),
            "recall": float(m["recall"][i]),
            "f1": float(m["f1"][i]),
            "support": int(m["support"][i]),
        }
        for i, label in enumerate(label_list)
    }
    out: dict[str, Any] = {"n": len(golds), "invalid": int(table[:, -1].sum())}
    out.update({k: float(m[k]) for k in ("accuracy", "macro_precision", "macro_recall", "macro_f1")})
    out["per_label"] = per_label
    out["confusion"] = {
        "rows": label_list + extra,
        "columns": [*label_list, INVALID],
        "counts": table.tolist(),
    }
    return out


def accuracy_by_position(
    positions: Sequence[float], correct: Sequence[float], golds: Sequence[str], n_bins: int = 10
) -> list[dict[str, Any]]:
    """Accuracy per relative-position bin of the conversation (paper Fig. 4) and gold counts per bin (Fig. 5).

    Bin ``i`` holds positions in ``[i/n_bins, (i+1)/n_bins)``; the last bin also holds 1.0. ``se`` is the
    binomial standard error ``sqrt(p (1 - p) / n)``; it treats instances as independent, so it understates the
    spread when errors cluster within conversations. An empty bin has accuracy and se 0.0.

    Raises:
        ValueError: a position is outside [0, 1], or the sequences differ in length.

    >>> bins = accuracy_by_position([0.05, 0.07, 0.95, 1.0], [1, 0, 1, 1], ["a", "b", "a", "a"], n_bins=2)
    >>> [(b["lo"], b["hi"], b["n"], b["accuracy"], round(b["se"], 3), b["gold"]) for b in bins]
    [(0.0, 0.5, 2, 0.5, 0.354, {'a': 1, 'b': 1}), (0.5, 1.0, 2, 1.0, 0.0, {'a': 2})]
    """
    if not len(positions) == len(correct) == len(golds):
        raise ValueError("positions, correct and golds differ in length")
    pos = np.asarray(positions, dtype=np.float64)
    if pos.size and (np.isnan(pos).any() or pos.min() < 0.0 or pos.max() > 1.0):
        raise ValueError("relative positions must lie in [0, 1]")
    index = np.minimum((pos * n_bins).astype(np.int64), n_bins - 1)
    hits = np.asarray(correct, dtype=np.float64)
    bins: list[dict[str, Any]] = []
    for i in range(n_bins):
        mask = index == i
        n = int(mask.sum())
        acc = float(hits[mask].mean()) if n else 0.0
        gold_counts: dict[str, int] = {}
        for gold in np.asarray(golds, dtype=object)[mask]:
            gold_counts[gold] = gold_counts.get(gold, 0) + 1
        bins.append(
            {
                "lo": i / n_bins,
                "hi": (i + 1) / n_bins,
                "n": n,
                "accuracy": acc,
                "se": float(np.sqrt(acc * (1 - acc) / n)) if n else 0.0,
                "gold": dict(sorted(gold_counts.items())),
            }
        )
    return bins
