"""What differs between runs in a way that changes what their numbers mean.

Two runs are compared like for like, or the difference is named: ``compare``, multi-run reports and
leaderboards list every :class:`Difference` found here, and ``compare`` refuses to set judged metrics (ER/VP
LLM) of runs judged by different judges side by side unless asked (``--allow-different-judges``).

What counts (from ``run.json``, ``judging.json`` and ``scores.json``): the judges and their settings, the
BERTScore backbone, the data's content hash and selection, mode, context size, batch size, task options,
the generation settings that change answers (temperature, top_p, reasoning effort, thinking, answer format,
output cap, extra body fields), repeats and judge repeats, and the perturbation. The candidate model is what
a comparison is about, and the endpoint or timing are not facts about the numbers: neither is listed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from rescue_bench.models.base import Generation
from rescue_bench.records import Json
from rescue_bench.rundir import Perturbed, RunData

Affects = Literal["all", "judged", "bertscore"]


@dataclass(frozen=True, slots=True)
class Difference:
    """One fact that differs between runs: its name, each run's value, and which numbers it changes."""

    name: str
    values: tuple[str, ...]
    affects: Affects

    def describe(self, names: Sequence[str]) -> str:
        """``judges: run-a openai/gpt-4.1, run-b openai/gpt-4o``."""
        shown = ", ".join(f"{name} {value}" for name, value in zip(names, self.values, strict=True))
        return f"{self.name}: {shown}"


def _config(key: str) -> Callable[[RunData], Json]:
    return lambda run: run.manifest.config.get(key)


def _spec(key: str) -> Callable[[RunData], Json]:
    return lambda run: (run.manifest.spec or {}).get(key)


def judges_of(run: RunData) -> Json:
    """The run's LLM judges with their settings (``run.json``'s spec), else the names that judged it."""
    given = (run.manifest.spec or {}).get("judges")
    if isinstance(given, list) and given:
        return [_without_endpoint(j) for j in given]
    return list(run.judging.judges) or None


def _without_endpoint(judge: Json) -> Json:
    # Where a judge is served (and with which key), and what it costs, do not change its verdicts.
    if not isinstance(judge, dict):
        return judge
    skipped = ("base_url", "api_key_env", "concurrency", "price_in", "price_out")
    return {k: v for k, v in judge.items() if k not in skipped}


GENERATION_KEYS: tuple[str, ...] = tuple(k for k in Generation.model_fields if k != "seed")
"""The generation settings (``run.json`` config keys, present when not at their defaults) that change what a
model answers. The seed is left out: it only picks one draw of a sampled run, as repeats do."""


def generation_of(run: RunData) -> Json:
    """The run's generation settings not at their defaults (:data:`GENERATION_KEYS`), ``None`` for none.

    >>> from pathlib import Path
    >>> generation_of(RunData.of(Path("r"), {"config": {"temperature": 0.7, "seed": 3}}, []))
    {'temperature': 0.7}
    """
    config = run.manifest.config
    found = {key: config[key] for key in GENERATION_KEYS if key in config}
    return found or None


def bertscore_of(run: RunData) -> Json:
    """The BERTScore backbone the run was scored with, if any."""
    setting = run.judging.bertscore
    if setting is None and run.score_record is not None:
        setting = run.score_record.meta.bertscore
    return None if setting is None else setting.model


FACTS: tuple[tuple[str, Affects, Callable[[RunData], Json]], ...] = (
    ("judges", "judged", judges_of),
    ("judge repeats", "judged", _spec("judge_repeats")),
    ("BERTScore model", "bertscore", bertscore_of),
    ("data content", "all", lambda run: run.manifest.dataset.hash),
    ("sample selection", "all", lambda run: [_config("limit_samples")(run), _config("sample_ids")(run)]),
    ("mode", "all", _config("mode")),
    ("context size", "all", _config("context_size")),
    ("batch size", "all", _config("batch_size")),
    ("task options", "all", _config("task_options")),
    ("generation settings", "all", generation_of),
    ("repeats", "all", lambda run: run.repeats),
    ("perturbation", "all", lambda run: _perturbation(run.manifest.facts.perturbation)),
)
"""Each fact compared: its name, the numbers it changes, and how it is read from a run."""


def differences(runs: Sequence[RunData]) -> list[Difference]:
    """Every fact of :data:`FACTS` whose value is not the same in all ``runs``."""
    out = []
    for name, affects, read in FACTS:
        values = [_shown(read(run)) for run in runs]
        if len(set(values)) > 1:
            out.append(Difference(name, tuple(values), affects))
    return out


def _perturbation(record: Perturbed | None) -> Json:
    """A perturbation record (``run.json`` config) as its names and seed: what it changed, not its prose."""
    return None if record is None else {"names": list(record.names), "seed": record.seed}


def _shown(value: Json) -> str:
    if value is None:
        return "none"
    if isinstance(value, str):
        return value[:16] if len(value) == 64 else value  # a content hash: its head is enough to tell
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def note(runs: Sequence[RunData], names: Sequence[str]) -> str:
    """One sentence naming every difference, or empty when the runs are like for like."""
    found = differences(runs)
    if not found:
        return ""
    return "Not like for like: " + "; ".join(d.describe(names) for d in found) + "."
