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
from dataclasses import dataclass, field, replace
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
from rescue_bench.models.registry import get_model, has_endpoint
from rescue_bench.records import Reply, Request
from rescue_bench.rundir import JUDGMENTS_FILE
from rescue_bench.rundir.cache import ResponseCache
from rescue_bench.spec import JudgeSpec
from rescue_bench.spec.settings import EngineSpec

BERTSCORE_HINT = (
    "BERTScore skipped (ER/VP BERT columns stay empty): bert-score is not installed; "
    "pip install 'rescue-bench[bertscore]' and run `rescue-bench score RUN` to add it"
)


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    """One judge pass (after ``run --judge``, or ``score``): who judges and how, the run's engine settings,
    and BERTScore.

    Each judge is its own spec (endpoint resolved, generation settings, its own ``concurrency``); every
    judge's engine takes ``engine`` with its judge overrides (:meth:`EngineOptions.of_judge`): the same
    settings whichever command made the pass.
    """

    judges: tuple[JudgeSpec, ...] = ()
    engine: EngineSpec = EngineSpec()  # noqa: RUF009 - frozen, so one shared default is safe
    """The spec's engine settings: concurrency, rpm, tpm (or the judge overrides), timeout, retries, cache."""
    bertscore: bool | None = None
    """``None``: on when the ``bertscore`` extra is installed and the backbone is here without the network;
    ``True``: asked for, so a missing backbone is downloaded before the pass, or the pass stops; ``False``:
    off."""
    bertscore_model: str = DEFAULT_MODEL
    """The backbone: a Hugging Face id or a local path (:mod:`rescue_bench.judge.bertscore`)."""
    bertscore_layers: int | None = None
    retry_unscored: bool = False
    """Ask again the instances a judge left unscored (``score --retry-unscored``)."""
    budgets: Mapping[str, BudgetGuard] = field(default_factory=dict)
    """Judge name -> its guard on the run's budget (``run --budget``); none: no limit."""
    judge_repeats: int = 1
    """How often every judge is asked about each reply (``judge_repeats``)."""


def bertscore_available() -> bool:
    """Whether the ``bertscore`` extra (bert-score and its model libraries) is installed."""
    return importlib.util.find_spec("bert_score") is not None


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
    run_dir: Path, settings: JudgeSettings, warn: Callable[[str], None] | None = None, *, quiet: bool = True
) -> JudgeRunResult:
    """Judge a run directory with named judge models through the engine (cache, limits, retries).

    Raises:
        ConfigError: a judge is not a chat model, or the run has no ER/VP predictions.
    """
    say = warn or (lambda _: None)
    scorer = _scorer(settings, say)
    providers: list[Provider] = []
    cache = ResponseCache() if settings.engine.cache else None
    try:
        built: list[Judge] = []
        for judge in settings.judges:
            model = get_model(
                judge.name,
                base_url=judge.base_url,
                api_key_env=judge.api_key_env,
                timeout=settings.engine.timeout,
            )
            if not model.capabilities.reads_prompts:
                raise ConfigError(
                    f"judge {judge.name!r} is not a chat model; use an LLM such as openai/gpt-4o"
                )
            providers.append(model)
            built.append(_judge(judge, model, settings, cache))
        return await judge_run(
            run_dir,
            built,
            scorer=scorer,
            concurrency=judge_options(settings.engine).concurrency,
            retry_unscored=settings.retry_unscored,
            warn=say,
            judge_repeats=settings.judge_repeats,
            quiet=quiet,
        )
    finally:
        for provider in providers:
            await provider.aclose()
        if cache is not None:
            cache.close()


def _scorer(settings: JudgeSettings, warn: Callable[[str], None]) -> BertScorer | None:
    """The pass's BERTScore model: an asked-for backbone is downloaded now or stops the pass (before any judge
    is asked); a default one that is not here is left out, with a warning."""
    if settings.bertscore is False:
        return None
    backbone = settings.bertscore_model
    if settings.bertscore:
        fetch_backbone(backbone)
    problem = backbone_problem(backbone)
    if problem is not None:
        warn(f"BERTScore skipped: {offline_message(backbone, problem)}")
        return None
    return BertScorer(BertScoreConfig(backbone, settings.bertscore_layers))


def judge_options(engine: EngineSpec, judge: JudgeSpec | None = None) -> EngineOptions:
    """The engine options of a judge (of one that names no concurrency of its own when ``None``): the spec's
    engine settings with their judge overrides, the same for ``run --judge`` and ``score``."""
    return EngineOptions.of_judge(engine, judge.concurrency if judge is not None else None)


def judge_params(judge: JudgeSpec) -> Generation:
    """How a judge generates: its own settings (the rubric's requests name their output cap)."""
    return judge.generation()


def _judge(judge: JudgeSpec, model: Provider, settings: JudgeSettings, cache: ResponseCache | None) -> Judge:
    """One judge asked through its own engine: its settings, its limits, the shared cache."""
    options = judge_options(settings.engine, judge)
    budget = settings.budgets.get(judge.name)
    engine = Engine(model, judge_params(judge), options, cache=cache, budget=budget)
    complete = judge_complete(model, _complete(engine))
    return Judge(judge.name, complete, concurrency=options.concurrency, again=_again(engine))


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
        wanted = replace(settings, bertscore=settings.bertscore if bertscore else False)
        return await score_run(out, wanted, warn, quiet=quiet)
    if (out / JUDGMENTS_FILE).is_file():
        return JudgeRunResult({}, 0, None, (), rescore_run(out))
    return None
