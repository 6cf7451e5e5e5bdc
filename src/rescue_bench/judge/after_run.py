"""The judge pass over a run directory: LLM judges for ER/VP, BERTScore, and ``scores.json`` with them.

Two callers, one path: ``rescue-bench score RUN`` (:func:`score_run`) and ``run --judge`` / BERTScore after a
run (:func:`score_after_run`, which the CLI calls once the engine has finished its session). Judgments are
appended to ``judgments.jsonl`` (so an interrupted pass resumes), ``scores.json`` is rewritten with them
folded in, and the pass records its counts, rubric hashes and BERTScore setting in ``judging.json``. The
engine never sees any of it: ``run.json`` stays the engine's alone.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rescue_bench.engine.execute import BudgetGuard, Engine, EngineOptions
from rescue_bench.errors import ConfigError, DependencyError
from rescue_bench.judge.bertscore import (
    DEFAULT_MODEL,
    BertScoreConfig,
    BertScorer,
    backbone_problem,
    fetch_backbone,
    offline_message,
)
from rescue_bench.judge.local import judge_complete
from rescue_bench.judge.merge import JUDGED_TASKS
from rescue_bench.judge.runner import Complete, CompleteAgain, Judge, JudgeRunResult, judge_run, rescore_run
from rescue_bench.models.base import Generation, Provider, parse_model_name
from rescue_bench.models.registry import declared_capabilities, get_model
from rescue_bench.records import Reply, Request
from rescue_bench.rundir import JUDGMENTS_FILE
from rescue_bench.rundir.cache import ResponseCache
from rescue_bench.spec import JudgeSpec

BERTSCORE_HINT = (
    "BERTScore skipped (ER/VP BERT columns stay empty): bert-score is not installed; "
    "pip install 'rescue-bench[bertscore]' and run `rescue-bench score RUN` to add it"
)


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    """Who judges a run and how: each judge its own spec (endpoint resolved by :func:`judge_endpoint`,
    generation settings, concurrency); ``concurrency`` is that of a judge that names none."""

    judges: tuple[JudgeSpec, ...] = ()
    bertscore: bool | None = None
    """``None``: on when the ``bertscore`` extra is installed and the backbone is here without the network;
    ``True``: asked for, so a missing backbone is downloaded before the run, or the run stops."""
    bertscore_model: str = DEFAULT_MODEL
    """The backbone: a Hugging Face id or a local path (:mod:`rescue_bench.judge.bertscore`)."""
    concurrency: int = 8
    timeout: float = 120.0
    max_retries: int = 5
    use_cache: bool = True
    budgets: Mapping[str, BudgetGuard] = field(default_factory=dict)
    """Judge name -> its guard on the run's budget (``run --budget``); none: no limit."""
    judge_repeats: int = 1
    """How often every judge is asked about each reply (``judge_repeats``)."""


@dataclass(frozen=True, slots=True)
class ScorePass:
    """One ``score`` pass: the judges (each with its own settings), limits, and the BERTScore backbone.

    ``base_url`` / ``api_key_env`` / ``concurrency`` apply to the judges whose spec names none.
    """

    judges: tuple[JudgeSpec, ...] = ()
    base_url: str | None = None
    api_key_env: str | None = None
    concurrency: int = 16
    rpm: float | None = None
    tpm: float | None = None
    timeout: float = 120.0
    max_retries: int = 5
    use_cache: bool = True
    bertscore: str | None = DEFAULT_MODEL
    """The backbone (HF id or path); ``None`` skips BERTScore."""
    bertscore_asked: bool = False
    """Whether the backbone was named by the user: then one that is not here is downloaded or stops the pass;
    otherwise the pass goes on without BERTScore, with a warning."""
    bertscore_layers: int | None = None
    retry_unscored: bool = False
    budgets: Mapping[str, BudgetGuard] = field(default_factory=dict)
    """Judge name -> its guard on the run's budget; a request that could pass it stops the pass."""
    judge_repeats: int = 1
    quiet: bool = True
    """No progress display."""


def bertscore_available() -> bool:
    """Whether the ``bertscore`` extra (bert-score and its model libraries) is installed."""
    return importlib.util.find_spec("bert_score") is not None


def has_endpoint(model: str) -> bool:
    """Whether ``model``'s provider declares an endpoint (``--base-url`` applies; not a baseline, local or
    replay model).

    >>> has_endpoint("openai/gpt-4o"), has_endpoint("baseline/random")
    (True, False)
    """
    return declared_capabilities(model).has_endpoint


def is_billed(model: str) -> bool:
    """Whether ``model``'s provider declares that its requests cost money, so that ``--budget`` guards them.

    >>> is_billed("vllm/qwen"), is_billed("local/gemma-3-270m")
    (True, False)
    """
    return declared_capabilities(model).billed


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
    """Whether the pass adds BERTScore; never touches the network.

    Asked for (``--bertscore``), it is on (:func:`fetch_bertscore` gets the backbone before the run); by
    default it is on when the extra is installed and the backbone can be loaded without the network.

    Raises:
        DependencyError: ``--bertscore`` was asked for and the extra is not installed.
    """
    if not any(t in JUDGED_TASKS for t in tasks) or settings.bertscore is False:
        return False
    available = bertscore_available()
    if settings.bertscore and not available:
        raise DependencyError.missing("bert-score", "bertscore")
    return available and (bool(settings.bertscore) or backbone_problem(settings.bertscore_model) is None)


def fetch_bertscore(settings: JudgeSettings, tasks: Sequence[str]) -> None:
    """Before anything is sent: check the extra, and download an asked-for backbone that is not here.

    Raises:
        DependencyError: ``--bertscore`` was asked for and the extra is not installed.
        ConfigError: the asked-for backbone is not here and cannot be downloaded (one line).
    """
    if wants_bertscore(settings, tasks) and settings.bertscore:
        fetch_backbone(settings.bertscore_model)


def skipped_bertscore(settings: JudgeSettings, tasks: Sequence[str]) -> str | None:
    """Why a default (not asked-for) BERTScore is left out of this run, or ``None``."""
    if settings.bertscore is not None or not any(t in JUDGED_TASKS for t in tasks):
        return None
    if not bertscore_available():
        return BERTSCORE_HINT
    problem = backbone_problem(settings.bertscore_model)
    if problem is None:
        return None
    how = offline_message(settings.bertscore_model, problem)
    return f"BERTScore skipped (ER/VP BERT columns stay empty): {how}; then run `rescue-bench score RUN`"


async def score_run(
    run_dir: Path, spec: ScorePass, warn: Callable[[str], None] | None = None
) -> JudgeRunResult:
    """Judge a run directory with named judge models through the engine (cache, limits, retries).

    Raises:
        ConfigError: a judge is not a chat model, or the run has no ER/VP predictions.
    """
    scorer = _scorer(spec, warn or (lambda _: None))
    providers: list[Provider] = []
    cache = ResponseCache() if spec.use_cache else None
    try:
        built: list[Judge] = []
        for judge in spec.judges:
            model = get_model(
                judge.name,
                base_url=judge.base_url or spec.base_url,
                api_key_env=judge.api_key_env or spec.api_key_env,
                timeout=spec.timeout,
            )
            if not model.capabilities.reads_prompts:
                raise ConfigError(
                    f"judge {judge.name!r} is not a chat model; use an LLM such as openai/gpt-4o"
                )
            providers.append(model)
            built.append(_judge(judge, model, spec, cache))
        return await judge_run(
            run_dir,
            built,
            scorer=scorer,
            concurrency=spec.concurrency,
            retry_unscored=spec.retry_unscored,
            warn=warn or (lambda _: None),
            judge_repeats=spec.judge_repeats,
            quiet=spec.quiet,
        )
    finally:
        for provider in providers:
            await provider.aclose()
        if cache is not None:
            cache.close()


def _scorer(spec: ScorePass, warn: Callable[[str], None]) -> BertScorer | None:
    """The pass's BERTScore model: an asked-for backbone is downloaded now or stops the pass (before any judge
    is asked); a default one that is not here is left out, with a warning."""
    if spec.bertscore is None:
        return None
    if spec.bertscore_asked:
        fetch_backbone(spec.bertscore)
    problem = backbone_problem(spec.bertscore)
    if problem is not None:
        warn(f"BERTScore skipped: {offline_message(spec.bertscore, problem)}")
        return None
    return BertScorer(BertScoreConfig(spec.bertscore, spec.bertscore_layers))


def judge_params(judge: JudgeSpec) -> Generation:
    """How a judge generates: its own settings (the rubric's requests name their output cap)."""
    return judge.generation()


def _judge(judge: JudgeSpec, model: Provider, spec: ScorePass, cache: ResponseCache | None) -> Judge:
    """One judge asked through its own engine: its settings, its concurrency, the shared cache."""
    concurrency = judge.concurrency or spec.concurrency
    options = EngineOptions(
        concurrency=concurrency,
        rpm=spec.rpm,
        tpm=spec.tpm,
        max_retries=spec.max_retries,
        use_cache=spec.use_cache,
    )
    engine = Engine(model, judge_params(judge), options, cache=cache, budget=spec.budgets.get(judge.name))
    complete = judge_complete(model, _complete(engine))
    return Judge(judge.name, complete, concurrency=concurrency, again=_again(engine))


def _complete(engine: Engine) -> Complete:
    async def complete(request: Request) -> Reply:
        return (await engine.ask(request)).reply

    return complete


def _again(engine: Engine) -> CompleteAgain:
    """Judge repeat n > 0: its own cache entry and seed (repeat 0 keeps the key of every earlier pass)."""

    async def again(request: Request, judge_repeat: int) -> Reply:
        return (await engine.ask(request, repeat=judge_repeat)).reply

    return again


async def score_after_run(
    out: Path,
    tasks: Sequence[str],
    settings: JudgeSettings,
    warn: Callable[[str], None],
    *,
    quiet: bool = True,
) -> JudgeRunResult | None:
    """Judge and BERTScore a finished run; what the pass did (with the new ``scores.json``), or ``None`` when
    nothing changed.

    Without judges or BERTScore, a run that holds judgments from an earlier pass (``score``) gets its
    ``scores.json`` aggregated with them again, since the engine's own aggregation leaves them out.
    """
    judged = any(t in JUDGED_TASKS for t in tasks)
    bertscore = wants_bertscore(settings, tasks)
    skipped = skipped_bertscore(settings, tasks)
    if skipped is not None:
        warn(skipped)
    if judged and (settings.judges or bertscore):
        spec = ScorePass(
            settings.judges,
            concurrency=settings.concurrency,
            timeout=settings.timeout,
            max_retries=settings.max_retries,
            use_cache=settings.use_cache,
            bertscore=settings.bertscore_model if bertscore else None,
            bertscore_asked=bool(settings.bertscore),
            budgets=settings.budgets,
            judge_repeats=settings.judge_repeats,
            quiet=quiet,
        )
        return await score_run(out, spec, warn)
    if (out / JUDGMENTS_FILE).is_file():
        return JudgeRunResult({}, 0, None, (), rescore_run(out))
    return None
