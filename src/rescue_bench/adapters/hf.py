"""``rescue-bench export RUN --format hf`` and ``rescue-bench publish DIR --repo ORG/NAME``: Hub results.

The folder follows the layout of evaluation-results datasets on the Hugging Face Hub:

* ``results_<timestamp>.json``: ``config_general`` (model, settings, versions) and ``results`` (per
  ``rescue_bench|<task>|<scope>``, each headline metric and its 95% CI);
* ``details/<task>.parquet``: one row per instance (gold, prediction, validity, problems, scores, the reply);
* ``README.md``: a dataset card whose YAML front matter lists the Parquet configs and the ``model-index``.

``--redact`` leaves out every text that can quote a transcript: the model's replies, the problems (they quote
replies), and the gold and predicted texts of ER and VP; the scores stay.

The card names the data the run used (:func:`~rescue_bench.adapters.dataset.data_used`); only a run on the
whole official release gets a ``model-index`` (which the Hub shows as a result on that dataset). The folder
holds this export and nothing else (:mod:`rescue_bench.adapters.folder`), and ``publish`` uploads exactly the
files the export wrote, each checked against the hash the export recorded.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq
from huggingface_hub import CommitOperationAdd

from rescue_bench import __version__
from rescue_bench.adapters.dataset import DataUsed, data_used
from rescue_bench.adapters.folder import claim, exported_files, mark
from rescue_bench.adapters.rundata import (
    RunData,
    ScopeEntry,
    completeness,
    completeness_line,
    judged,
    read_run,
    reply_texts,
)
from rescue_bench.data.load import DEFAULT_HF_REPO
from rescue_bench.data.sources import public_name
from rescue_bench.errors import DataError
from rescue_bench.judge.bertscore import backbone_label
from rescue_bench.printable import printable
from rescue_bench.redaction import scrub
from rescue_bench.report.writers import writing
from rescue_bench.rundir import PredictionLine
from rescue_bench.tasks import TASKS, get_task, tasks_of_kind

FREE_TEXT_TASKS = tasks_of_kind("generation")
"""Tasks answered in words (redacted with --redact); the viewer uses the same rule."""
COLUMNS = ("instance_id", "sample_id", "scenario", "row_index", "valid", "gold", "prediction", "problems")


def detail_rows(
    records: Sequence[PredictionLine], replies: Mapping[str, str], *, redact: bool
) -> dict[str, list[Any]]:
    """The Parquet columns of one task's records; JSON values are stored as JSON text."""
    free = bool(records) and records[0].task in FREE_TEXT_TASKS
    columns: dict[str, list[Any]] = {name: [] for name in (*COLUMNS, "scores")}
    if not redact:
        columns["reply"] = []
    for record in records:
        columns["instance_id"].append(record.instance_id)
        columns["sample_id"].append(record.sample_id)
        columns["scenario"].append(record.scenario)
        columns["row_index"].append(record.row_index)
        columns["valid"].append(record.valid)
        hidden = redact and free
        columns["gold"].append(None if hidden else json.dumps(record.gold, ensure_ascii=False))
        columns["prediction"].append(None if hidden else json.dumps(record.prediction, ensure_ascii=False))
        columns["problems"].append([] if redact else list(record.problems))
        columns["scores"].append(json.dumps(record.scores, sort_keys=True))
        if not redact:
            columns["reply"].append(replies.get(str(record.request_key)))
    return columns


def results_json(data: RunData, *, now: float) -> dict[str, Any]:
    """``config_general`` and ``results`` of a run (headline metrics per task and scope, with CIs)."""
    scores = data.score_record
    if scores is None:
        raise DataError(f"{data.path}: scores.json is missing; finish or score the run first")
    results: dict[str, dict[str, Any]] = {}
    for task, scopes in scores.tasks.items():
        if task not in TASKS:
            continue
        for scope, entry in scopes.items():
            scope_entry = ScopeEntry.model_validate(entry)
            values: dict[str, Any] = {"n": scope_entry.n}
            for metric in get_task(task).INFO.headline:
                values[metric] = entry.get(metric)
                values[f"{metric}_ci"] = scope_entry.ci.get(metric)
            results[f"rescue_bench|{task}|{scope}"] = values
    manifest = data.manifest
    used = data_used(manifest)
    return {
        "config_general": {
            "model_name": data.name,
            "rescue_bench_version": manifest.package_version or __version__,
            "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
            "config": _public_config(manifest.config),
            "generation": manifest.generation,
            "judges": manifest.judges,
            "dataset": _public_dataset(data),
            "data_used": {"official_release": used.official, "description": used.description},
            # PARTIAL or DEGRADED, with the answered/planned counts; absent for a finished run.
            "completeness": completeness(data),
            # An unset ``ci`` is left out of scores.json, and so exported as null.
            "ci": scores.meta.ci if "ci" in scores.meta.model_fields_set else None,
        },
        "results": results,
    }


def _public_dataset(data: RunData) -> dict[str, Any]:
    """``run.json``'s dataset with its source by public name (never a local path) and its SHA-256."""
    dataset = data.manifest.dataset
    if dataset.source is not None:
        dataset = dataset.model_copy(update={"source": public_name(dataset.source)})
    return dataset.model_dump(mode="json", exclude_unset=True)


def _public_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The run's config with clip folders by their last part only (no local path leaves the machine)."""
    out = dict(config)
    video = out.get("video")
    if isinstance(video, dict) and isinstance(video.get("clips"), list):
        clips = [public_name(c) if isinstance(c, str) else c for c in video["clips"]]
        out["video"] = {**video, "clips": clips}
    return out


CITATION = """@misc{hu2026rescuebench,
  title  = {{RESCUE-BENCH}: Towards Relation-Aware Multi-Party Emotional Support Conversation Systems},
  author = {Hu, Haichuan and Xiao, Yang and Tang, Mingni and Duan, Jiawen and Zhang, Quanjun and He, Congqing
            and Zhang, Hao and Wang, Jiashuo and Hoorn, Johan F. and Li, Wenjie},
  year   = {2026}
}"""
"""The paper's citation as the card gives it (CITATION.cff's preferred-citation; a test keeps them alike)."""
LICENCE = (
    "The scores and this card come from rescue-bench (Apache-2.0). The gold annotations and transcript texts "
    "in `details/` come from the RESCUE-Bench release: third-party text under a research-only licence."
)


def _cell(value: Any, digits: int = 4) -> str:
    return "–" if not isinstance(value, int | float) or isinstance(value, bool) else f"{value:.{digits}f}"


def metrics_table(results: Mapping[str, Any]) -> list[str]:
    """The card's Markdown table: task, scope, n, metric, value and its 95% CI, per headline metric.

    >>> rows = {"results": {"rescue_bench|itp|all": {"n": 8, "f1": 0.5, "f1_ci": [0.25, 0.75]}}}
    >>> metrics_table(rows)[-1]
    '| ITP | all | 8 | f1 | 0.5000 | [0.2500, 0.7500] |'
    """
    lines = ["| Task | Scope | n | Metric | Value | 95% CI |", "|---|---|---|---|---|---|"]
    for key, values in results["results"].items():
        _, task, scope = key.split("|")
        for metric in (m for m in get_task(task).INFO.headline if m in values):
            ci = values.get(f"{metric}_ci")
            shown = (
                f"[{_cell(ci[0])}, {_cell(ci[1])}]" if isinstance(ci, list | tuple) and len(ci) == 2 else "–"
            )
            n = values["n"]  # every entry of :func:`results_json` has its count
            lines.append(
                f"| {task.upper()} | {scope} | {n if n is not None else '–'} | {metric} | "
                f"{_cell(values.get(metric))} | {shown} |"
            )
    return lines


def _facts(data: RunData) -> list[str]:
    """What the numbers were measured with: judges, BERTScore backbone, protocol, data and its hash."""
    manifest = data.manifest
    meta = data.score_record.meta if data.score_record is not None else None
    judges = list(manifest.judges) or (list(meta.judges) if meta is not None and meta.judges else [])
    bert = meta.bertscore if meta is not None else None
    dataset = data.manifest.dataset
    source = public_name(dataset.source) if dataset.source is not None else None
    return [
        f"- Judge: {', '.join(judges) if judges else 'not judged'}",
        f"- BERTScore backbone: {backbone_label(bert) or 'none'}",
        f"- Protocol version: {manifest.protocol}",
        f"- Data source: {source or 'unrecorded'}",
        f"- Data SHA-256: {dataset.hash or 'unrecorded'}",
    ]


def _yaml(value: Any) -> str:
    """A YAML scalar: JSON is YAML, so a JSON-quoted string or number is always read back as written."""
    return json.dumps(value, ensure_ascii=False)


def _md(text: str) -> str:
    """Text from a run directory (a model name, a file name) for the card's Markdown: HTML shown as text,
    never rendered by the Hub; control characters escaped.

    >>> _md("<img src=x onerror=alert(1)>")
    '&lt;img src=x onerror=alert(1)&gt;'
    """
    return html.escape(printable(text, one_line=True), quote=False)


def card(data: RunData, results: Mapping[str, Any], tasks: Sequence[str], *, redact: bool) -> str:
    """The dataset card: YAML front matter (configs, model-index) and a short description.

    The ``model-index`` is written only for a run on the whole official release: on the Hub it reads as a
    result on that dataset, which a run on other data must never claim.
    """
    used = data_used(data.manifest)
    state = completeness(data)
    lines = ["---", f"pretty_name: {_yaml(f'RESCUE-Bench results of {data.name}')}", "license: other"]
    lines += ["license_name: research-only-data", "tags:"]
    lines += ["- rescue-bench", "- evaluation", "configs:"]
    for task in tasks:
        lines += [f"- config_name: {_yaml(task)}", f"  data_files: {_yaml(f'details/{task}.parquet')}"]
    if used.official and state is None:  # a partial or degraded run claims no result on the Hub
        lines += _model_index(data, results, tasks, used)
    lines += ["---", "", f"# RESCUE-Bench results of {_md(data.name)}", ""]
    if state is not None:
        lines += [f"**{completeness_line(state)}**: every metric is over the answered instances only.", ""]
    lines.append(f"Data: {_md(used.description)}.")
    if not used.official:
        lines.append("These are not results on the RESCUE-Bench release, so the card has no model-index.")
    lines += ["", *_facts(data), "", "## Results", "", *metrics_table(results), ""]
    lines.append(
        "Values pooled per scope (couple, family, all); 95% CIs from a cluster bootstrap over conversations."
    )
    lines.append("")
    lines.append("Exported by `rescue-bench export --format hf` from a run directory.")
    lines.append("`results_*.json` holds the headline metrics with 95% cluster bootstrap CIs per scenario;")
    lines.append("`details/<task>.parquet` holds one row per instance.")
    if redact:
        lines.append("Redacted: replies, problems and the ER/VP gold and predicted texts are left out.")
    lines += ["", "## Licence", "", LICENCE, "", "## Citation", "", "```bibtex", CITATION, "```"]
    return "\n".join(lines) + "\n"


def _model_index(
    data: RunData, results: Mapping[str, Any], tasks: Sequence[str], used: DataUsed
) -> list[str]:
    lines = ["model-index:", f"- name: {_yaml(data.name)}", "  results:"]
    for task in tasks:
        entry = results["results"].get(f"rescue_bench|{task}|all") or {}
        metrics = [(m, entry.get(m)) for m in get_task(task).INFO.headline if entry.get(m) is not None]
        if not metrics:
            continue
        lines += [
            "  - task:",
            f"      type: {_yaml(get_task(task).INFO.kind)}",
            f"      name: {_yaml(task.upper())}",
        ]
        # The release fetched from the authors' repository (``--data rescue``) is the dataset the Hub holds.
        repo = used.hf_repo or DEFAULT_HF_REPO
        lines += ["    dataset:", '      name: "RESCUE-Bench"', f"      type: {_yaml(repo)}"]
        lines += ["    metrics:"]
        for metric, value in metrics:
            lines += [f"    - type: {_yaml(metric)}", f"      value: {_yaml(value)}"]
            lines += [f"      name: {_yaml(f'{task.upper()} {metric} (both scenarios)')}"]
    return lines


def export_hf(run_dir: Path, out: Path, *, redact: bool = False, now: float | None = None) -> list[Path]:
    """Write the Hub folder of a run into ``out`` (new, empty, or an earlier export); the files written.

    Raises:
        ConfigError: ``out`` holds files this tool did not write (nothing is changed then).
    """
    data = read_run(run_dir)
    stamp = time.time() if now is None else now
    results = scrub(results_json(data, now=stamp))
    replies = reply_texts(data)
    by_task: dict[str, list[PredictionLine]] = {}
    for record in judged(data):
        if record.task in TASKS:
            by_task.setdefault(record.task, []).append(record)
    name = f"results_{time.strftime('%Y-%m-%dT%H-%M-%S', time.gmtime(stamp))}.json"
    claim(out, "hf", run_dir, [name, "README.md", *(f"details/{task}.parquet" for task in by_task)])
    written = []
    with writing(out):  # a full disk or a read-only folder: one line with the advice that fits
        (out / "details").mkdir(parents=True, exist_ok=True)
        for task, records in by_task.items():
            path = out / "details" / f"{task}.parquet"
            pq.write_table(pa.table(detail_rows(records, replies, redact=redact)), path)
            written.append(path)
        (out / name).write_text(json.dumps(results, ensure_ascii=False, indent=2) + "\n")
        (out / "README.md").write_text(card(data, results, list(by_task), redact=redact))
        files = [out / name, out / "README.md", *written]
        mark(out, "hf", run_dir, files)
    return files


class HubApi(Protocol):
    """The part of ``huggingface_hub.HfApi`` that :func:`publish` uses (tests intercept it)."""

    def create_repo(
        self, repo_id: str, *, repo_type: str | None, private: bool | None, exist_ok: bool
    ) -> Any: ...

    def create_commit(
        self,
        repo_id: str,
        operations: Sequence[CommitOperationAdd],
        *,
        commit_message: str,
        repo_type: str | None,
    ) -> Any: ...


def publish(folder: Path, repo: str, api: HubApi, *, private: bool = False) -> str:
    """Upload the files an ``export --format hf`` wrote into ``folder`` to the dataset repository ``repo``
    (created if needed); the commit's URL. Nothing else in the folder is uploaded.

    Raises:
        DataError: not an exported folder, a file it wrote is missing or changed, or ``repo`` is malformed.
    """
    files = exported_files(folder, "hf")
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise DataError(f"--repo must be ORG/NAME (got {repo!r})")
    operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=data) for name, data in files]
    api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
    commit = api.create_commit(repo, operations, commit_message="RESCUE-Bench results", repo_type="dataset")
    return str(getattr(commit, "commit_url", commit))
