"""lm-eval glue for RESCUE-Bench (``lm_eval --include_path "$(rescue-bench tasks lm-eval-path)"``).

Each document is one request batch of ``rescue-bench run``: ``system`` and ``user`` are our own rendered
messages, byte for byte. ``process_results`` parses the generation with our parser and scores it with our
scorer; the aggregations compute the corpus metrics per scope with our metrics module, so lm-eval's numbers
are the point values of a run's ``scores.json`` on the same replies, and their standard errors come from the
same cluster bootstrap over conversations as its CIs (``N/A`` where none can be computed: one conversation). A
scope with no instance is ``null``, never ``NaN``. Each document's records are logged once, under
``instances``; the metrics refer to them (scored in one process, as lm-eval does for API models).

Run-spec settings come from ``--metadata`` (``{"data": "demo", "limit_samples": 3, "context_size": 3, ...}``);
a task's own options go under ``task_options`` as in a run spec
(``{"task_options": {"rpp": {"gold_field": "relation_pattern"}}}``), or flat by their name or their old flat
key (``rpp_gold_field``): see ``adapters.plan.task_args``.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import datasets

from rescue_bench.adapters.plan import Plan, batch_records, corpus_errors, corpus_values, plan, task_args
from rescue_bench.rundir import PredictionLine
from rescue_bench.tasks import get_task

METRICS = (
    "precision",
    "recall",
    "f1",
    "accuracy",
    "balanced_accuracy",
    "macro_f1",
    "recall_at_1",
    "recall_at_2",
    "recall_at_3",
    "mrr",
)
SCOPES = ("all", "couple", "family")


@functools.lru_cache(maxsize=16)
def _plan(args_json: str) -> Plan:
    return plan(task_args(json.loads(args_json)))


def _dataset(task: str, metadata: dict[str, Any]) -> datasets.DatasetDict:
    # lm-eval passes its own metadata (``version``...) along with ours: keys we do not know are left out.
    args_json = json.dumps(task_args(metadata, task, lenient=True).to_json(), sort_keys=True)
    the_plan = _plan(args_json)
    docs = []
    for index, request in enumerate(the_plan.requests):
        system, user = (str(m["content"]) for m in request.messages)
        docs.append({"batch": index, "args": args_json, "system": system, "user": user})
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})


def itp_dataset(**metadata: Any) -> datasets.DatasetDict:
    return _dataset("itp", metadata)


def rpp_dataset(**metadata: Any) -> datasets.DatasetDict:
    return _dataset("rpp", metadata)


def stp_dataset(**metadata: Any) -> datasets.DatasetDict:
    return _dataset("stp", metadata)


def ssp_dataset(**metadata: Any) -> datasets.DatasetDict:
    return _dataset("ssp", metadata)


RECORDS: dict[tuple[str, int], list[dict[str, Any]]] = {}
"""The prediction records of each document scored in this process, by (settings, batch): the metrics refer to
them instead of carrying a copy each (``samples_*.jsonl`` holds them once, under ``instances``)."""
INSTANCES = "instances"


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """The batch's prediction records (parsed and scored by the task) under ``instances``, and a reference to
    them under every metric name, each metric followed by its standard error."""
    the_plan = _plan(doc["args"])
    lines = batch_records(the_plan.task, the_plan.batches[doc["batch"]], results[0] if results else None)
    # lm-eval keeps (and may log) what we return, so the lines travel as their JSON objects.
    records = [line.to_json() for line in lines]
    RECORDS[(doc["args"], doc["batch"])] = records
    reference = {"batch": doc["batch"]}
    out: dict[str, Any] = {INSTANCES: records}
    for metric in the_plan.task.INFO.headline:
        for scope in SCOPES:
            # The error after its metric: lm-eval writes "N/A" for ``<metric>_stderr`` when it aggregates the
            # metric, and the error's own aggregation then puts the number in its place.
            out[f"{metric}_{scope}"] = out[f"{metric}_{scope}_stderr"] = {**reference, "args": doc["args"]}
    return out


def instances(items: list[list[dict[str, Any]]]) -> int:
    """How many instances were scored (the ``instances`` metric, which carries the records)."""
    return sum(len(batch) for batch in items)


def _records(items: list[dict[str, Any]]) -> list[PredictionLine]:
    try:
        return [PredictionLine.from_json(r) for ref in items for r in RECORDS[(ref["args"], ref["batch"])]]
    except KeyError:
        raise RuntimeError(
            "rescue_bench: a document was scored in another process; run lm-eval in one process"
        ) from None


def _aggregation(metric: str, scope: str) -> Any:
    def aggregate(items: list[dict[str, Any]]) -> float | None:
        records = _records(items)
        if not records:
            return None  # JSON null: no instance in this scope (never NaN, which strict parsers refuse)
        return corpus_values(get_task(records[0].task), records).get(f"{scope}_{metric}")

    aggregate.__name__ = f"{metric}_{scope}"
    return aggregate


def _error(metric: str, scope: str) -> Any:
    def aggregate(items: list[dict[str, Any]]) -> float | str:
        records = _records(items)
        value = (
            corpus_errors(get_task(records[0].task), records).get(f"{scope}_{metric}") if records else None
        )
        return "N/A" if value is None else value  # lm-eval's own word for a standard error it has not

    aggregate.__name__ = f"{metric}_{scope}_stderr"
    return aggregate


# One aggregation per metric and scope, and one for its standard error, named as the YAML files refer to them
# (``!function utils.f1_all``, ``!function utils.f1_all_stderr``).
for _metric in METRICS:
    for _scope in SCOPES:
        globals()[f"{_metric}_{_scope}"] = _aggregation(_metric, _scope)
        globals()[f"{_metric}_{_scope}_stderr"] = _error(_metric, _scope)
