"""``rescue-bench export RUN --format eee``: a run in the Every Eval Ever schema (evaleval, version 0.2.1).

Writes ``<uuid>.json``, the aggregate record (one result per task, scope and headline metric, with its 95%
cluster bootstrap CI), and ``<uuid>.jsonl``, one instance-level record per instance (the model's reply, what
our parser read from it, the instance's score). The uuid is derived from the evaluation id, so exporting the
same run twice gives the same files. Prompts are not in a run directory; an instance's ``input.raw`` names the
item (task, conversation, row) instead of repeating the transcript.

``--redact`` leaves out what ``export --format hf --redact`` leaves out: the replies, the problems (they
quote replies), and the gold and predicted texts of the tasks answered in words (ER, VP). The source data
is named as what it was (:func:`~rescue_bench.adapters.dataset.data_used`): only a run on the whole official
release names its Hub dataset. The folder holds this export and nothing else
(:mod:`rescue_bench.adapters.folder`).
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rescue_bench import __version__
from rescue_bench.adapters.dataset import data_used
from rescue_bench.adapters.folder import claim, mark
from rescue_bench.adapters.rundata import (
    CiSettings,
    RunData,
    ScopeEntry,
    completeness,
    completeness_line,
    judged,
    read_run,
    reply_texts,
)
from rescue_bench.data.sources import public_name
from rescue_bench.errors import DataError
from rescue_bench.judge.bertscore import backbone_label
from rescue_bench.redaction import scrub
from rescue_bench.report.tables import bert_setting
from rescue_bench.report.writers import writing
from rescue_bench.rundir import PredictionLine
from rescue_bench.tasks import TASKS, get_task, tasks_of_kind

SCHEMA_VERSION = "0.2.1"
INSTANCE_SCHEMA_VERSION = "instance_level_eval_0.2.1"
BENCHMARK = "rescue_bench"
SCALES: dict[str, tuple[float, float]] = {
    "llm": (1.0, 5.0),
    "s_emo": (1.0, 5.0),
    "s_int": (1.0, 5.0),
    "s_er": (1.0, 5.0),
    "total_0_6": (0.0, 6.0),
    "pairing": (0.0, 2.0),
    "viewpoint": (0.0, 4.0),
}
"""Score ranges of the generation metrics; every other headline metric lies in 0-1."""
PRIMARY: dict[str, tuple[str, float]] = {
    "binary": ("correct", 1.0),
    "multiclass": ("correct", 1.0),
    "ranking": ("recall_at_1", 1.0),
}
"""The per-instance score of a kind and the value that counts as correct (a generation task names its own,
``TaskInfo.instance_score``)."""
FREE_TEXT_TASKS = tasks_of_kind("generation")
"""Tasks answered in words: their gold and predicted texts are left out with ``--redact``."""


def _strings(values: Mapping[str, Any]) -> dict[str, str]:
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items() if v is not None}


def model_id(data: RunData) -> str:
    return str(data.name)


def _source_data(data: RunData, n: int) -> dict[str, Any]:
    manifest = data.manifest
    used = data_used(manifest)
    source = public_name(manifest.selection.data or manifest.dataset.source or "unknown")
    details = _strings(
        {"data": source, "dataset_hash": manifest.dataset.hash, "description": used.description}
    )
    if used.official and used.hf_repo is not None:
        return {
            "dataset_name": "RESCUE-Bench",
            "source_type": "hf_dataset",
            "hf_repo": used.hf_repo,
            "samples_number": n,
            "additional_details": details,
        }
    if used.official and used.url is not None:
        return {
            "dataset_name": "RESCUE-Bench",
            "source_type": "url",
            "url": [used.url],
            "additional_details": details,
        }
    return {
        "dataset_name": f"RESCUE-Bench tasks on {used.description}",
        "source_type": "other",
        "additional_details": details,
    }


def _result(task: str, scope: str, metric: str, entry: Mapping[str, Any], data: RunData) -> dict[str, Any]:
    low, high = SCALES.get(metric, (0.0, 1.0))
    ci_meta = CiSettings.model_validate(data.score_record.meta.ci if data.score_record else {})
    scope_entry = ScopeEntry.model_validate(entry)
    details: dict[str, Any] = {"score": entry[metric], "num_samples": scope_entry.n or 0}
    ci = scope_entry.ci.get(metric)
    uncertainty: dict[str, Any] = {"num_samples": scope_entry.n or 0}
    if ci is not None:
        uncertainty["confidence_interval"] = {
            "lower": float(ci[0]),
            "upper": float(ci[1]),
            "confidence_level": ci_meta.confidence,
            "method": ci_meta.method + " over conversations",
        }
        uncertainty["num_bootstrap_samples"] = ci_meta.n_resamples
    config = data.manifest.generation
    about = {"task": task, "scope": scope, "metric": metric}
    described = f"RESCUE-Bench {task.upper()} {metric} ({scope})"
    state = completeness(data)
    if state is not None:  # a partial or degraded run's every result says so, with its counts
        about["completeness"] = completeness_line(state)
        described += f"; {completeness_line(state)}, the metric over the answered instances only"
    backbone = backbone_label(bert_setting(data)) if metric == "bertscore_f1" else None
    if backbone is not None:
        about["bertscore_backbone"] = backbone
        described += f", BERTScore backbone {backbone}"
    return {
        "evaluation_name": f"{BENCHMARK}.{task}.{scope}.{metric}",
        "source_data": _source_data(data, scope_entry.n or 0),
        "metric_config": {
            "evaluation_description": described,
            "lower_is_better": False,
            "score_type": "continuous",
            "min_score": low,
            "max_score": high,
            "additional_details": about,
        },
        "score_details": {"score": float(details["score"]), "uncertainty": uncertainty},
        "generation_config": {
            "generation_args": {
                "temperature": config.get("temperature"),
                "max_tokens": get_task(task).INFO.max_tokens,
            },
            "additional_details": _strings(data.manifest.config),
        },
    }


def aggregate_record(data: RunData, *, now: float | None = None) -> dict[str, Any]:
    """The aggregate record of a run (every non-null headline metric of every task and scope)."""
    if data.scores is None:
        raise DataError(f"{data.path}: scores.json is missing; finish or score the run first")
    stamp = f"{time.time() if now is None else now:.3f}"
    results = [
        _result(task, scope, metric, entry, data)
        for task, scopes in data.scores.items()
        if task in TASKS
        for scope, entry in scopes.items()
        for metric in get_task(task).INFO.headline
        if entry.get(metric) is not None
    ]
    return {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": f"{BENCHMARK}/{model_id(data)}/{stamp}",
        "retrieved_timestamp": stamp,
        "source_metadata": {
            "source_name": "rescue-bench",
            "source_type": "evaluation_run",
            "source_organization_name": "unknown",
            "evaluator_relationship": "third_party",
        },
        "eval_library": {
            "name": "rescue-bench",
            "version": data.manifest.package_version or __version__,
        },
        "model_info": {"name": model_id(data), "id": model_id(data)},
        "evaluation_results": results,
    }


def instance_record(
    record: PredictionLine, evaluation_id: str, model: str, reply: str | None, *, redact: bool = False
) -> dict[str, Any]:
    """One instance-level record of a prediction line (judgments folded into its scores); with ``redact``
    no reply, no problem text, and no gold or predicted text of a task answered in words."""
    task = record.task
    info = get_task(task).INFO
    key, best = info.instance_score or PRIMARY[info.kind]
    raw_score = record.scores.get(key)
    score = float(raw_score) if raw_score is not None else 0.0
    raw = f"RESCUE-Bench {task.upper()} item at row {record.row_index} of conversation {record.sample_id}"
    hidden = redact and task in FREE_TEXT_TASKS
    reference = ["[redacted]" if hidden else json.dumps(record.gold, ensure_ascii=False)]
    problems = [] if redact else list(record.problems)
    return {
        "schema_version": INSTANCE_SCHEMA_VERSION,
        "evaluation_id": evaluation_id,
        "model_id": model,
        "evaluation_name": f"{BENCHMARK}.{task}",
        "sample_id": record.instance_id,
        "sample_hash": hashlib.sha256((raw + ("" if hidden else reference[0])).encode()).hexdigest(),
        "interaction_type": "single_turn",
        "input": {"raw": raw, "reference": reference},
        "output": {"raw": ["" if redact else reply or ""]},
        "answer_attribution": [
            {
                "turn_idx": 0,
                "source": "output.raw",
                "extracted_value": "[redacted]"
                if hidden
                else json.dumps(record.prediction, ensure_ascii=False),
                "extraction_method": f"rescue_bench.tasks.{task}.parse",
                "is_terminal": True,
            }
        ],
        "evaluation": {"score": score, "is_correct": record.valid and score >= best},
        "error": None if record.valid else (problems[0] if problems else "invalid"),
        "metadata": _strings(
            {
                "task": task,
                "scenario": record.scenario,
                "valid": record.valid,
                "problems": "; ".join(problems),
                "scores": record.scores,
                **(
                    {"redacted": "replies, problems and the gold and predicted texts of ER/VP"}
                    if redact
                    else {}
                ),
            }
        ),
    }


def export_eee(
    run_dir: Path, out: Path, *, redact: bool = False, now: float | None = None
) -> tuple[Path, Path]:
    """Write the aggregate JSON and the instance-level JSONL of a run into ``out`` (new, empty, or an
    earlier export); their paths.

    Raises:
        ConfigError: ``out`` holds files this tool did not write (nothing is changed then).
    """
    data = read_run(run_dir)
    aggregate = scrub(aggregate_record(data, now=now))
    name = str(uuid.uuid5(uuid.NAMESPACE_URL, aggregate["evaluation_id"]))
    replies = reply_texts(data)
    lines = [
        json.dumps(
            instance_record(
                r,
                aggregate["evaluation_id"],
                model_id(data),
                replies.get(str(r.request_key)),
                redact=redact,
            ),
            ensure_ascii=False,
        )
        for r in judged(data)
        if r.task in TASKS
    ]
    body = "".join(line + "\n" for line in lines).encode()
    aggregate["detailed_evaluation_results"] = {
        "format": "jsonl",
        "file_path": f"{name}.jsonl",
        "hash_algorithm": "sha256",
        "checksum": hashlib.sha256(body).hexdigest(),
        "total_rows": len(lines),
    }
    claim(out, "eee", run_dir, [f"{name}.json", f"{name}.jsonl"])
    with writing(out):  # a full disk or a read-only folder: one line with the advice that fits
        (out / f"{name}.jsonl").write_bytes(body)
        (out / f"{name}.json").write_text(json.dumps(aggregate, ensure_ascii=False, indent=2) + "\n")
        files = (out / f"{name}.json", out / f"{name}.jsonl")
        mark(out, "eee", run_dir, files)
    return files
