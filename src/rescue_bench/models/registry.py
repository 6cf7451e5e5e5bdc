"""``provider/model`` names to providers and predictors.

* ``openai/``, ``deepseek/``, ``dashscope/``, ``openrouter/``, ``together/``, ``vllm/``, ``ollama/``,
  ``llamacpp-server/``: :class:`~rescue_bench.models.openai_compat.OpenAICompatProvider` with the preset's
  endpoint;
* ``local/<name or path.gguf>``: the in-process llama.cpp model (``rescue_bench.models.local``);
* ``baseline/random|majority``: reference rows without a model (``rescue_bench.models.baselines``);
* ``replay/<run-dir>``: the replies saved in a run directory (``rescue_bench.models.replay``).

Modules are imported only when their prefix is used, so a missing optional extra only matters to those who
need it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx2

from rescue_bench.errors import ConfigError
from rescue_bench.models.base import ModelName, Provider, parse_model_name
from rescue_bench.models.env import load_dotenv, lookup, resolve_api_key
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import LOCAL_PLACEHOLDER_KEY, PRESETS, get_preset, normalize_base_url

SPECIAL_PROVIDERS = ("local", "baseline", "replay")


def get_model(
    name: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    timeout: float = 120.0,
    seed: int | None = None,
    http_client: httpx2.AsyncClient | None = None,
    dotenv: Mapping[str, str] | None = None,
    **opts: Any,
) -> Provider:
    """Build the provider that ``name`` designates.

    ``opts`` go to the local provider only. Raises :class:`ConfigError` for unknown prefixes and for endpoint
    flags given to providers without an endpoint.
    """
    parsed = parse_model_name(name)
    if parsed.provider in SPECIAL_PROVIDERS:
        if base_url or api_key_env:
            raise ConfigError(
                f"--base-url and --api-key-env apply to OpenAI-compatible providers, not {parsed.provider}/"
            )
        return _special(parsed, seed=seed, **opts)
    if parsed.provider not in PRESETS:
        known = ", ".join([*PRESETS, *SPECIAL_PROVIDERS])
        raise ConfigError(f"unknown provider {parsed.provider!r} in {name!r}; known providers: {known}")
    return make_openai_compat(
        parsed,
        base_url=base_url,
        api_key_env=api_key_env,
        timeout=timeout,
        http_client=http_client,
        dotenv=dotenv,
    )


def make_openai_compat(
    parsed: ModelName,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    timeout: float = 120.0,
    http_client: httpx2.AsyncClient | None = None,
    dotenv: Mapping[str, str] | None = None,
) -> OpenAICompatProvider:
    """An OpenAI-compatible provider: flags first, then environment / ``.env``, then the preset's defaults."""
    preset = get_preset(parsed.provider)
    values = load_dotenv() if dotenv is None else dotenv
    if base_url is None:
        base_url, _ = lookup(preset.base_url_envs, dotenv=values)
    url = normalize_base_url(base_url or preset.base_url)
    key_names = (api_key_env,) if api_key_env else preset.key_envs
    #  A custom endpoint may well be a local server without keys; the service itself will say 401 if it wants
    # one.
    required = preset.key_required and (api_key_env is not None or url == preset.base_url)
    key = resolve_api_key(key_names, required=required, provider=parsed.provider, dotenv=values)
    return OpenAICompatProvider(
        parsed.model,
        preset=preset,
        base_url=url,
        api_key=key or LOCAL_PLACEHOLDER_KEY,
        timeout=timeout,
        http_client=http_client,
    )


def _special(parsed: ModelName, *, seed: int | None, **opts: Any) -> Provider:
    try:
        if parsed.provider == "local":
            from rescue_bench.models.local import LocalProvider

            seeded = opts if seed is None else {"seed": seed, **opts}
            provider: Provider = LocalProvider(parsed.model, **seeded)
            return provider
        if parsed.provider == "baseline":
            from rescue_bench.models.baselines import make_baseline

            predictor: Provider = make_baseline(parsed.model, seed=0 if seed is None else seed)
            return predictor
        from rescue_bench.models.replay import ReplayProvider

        replay: Provider = ReplayProvider(Path(parsed.model))
        return replay
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("rescue_bench."):
            raise ConfigError(f"provider {parsed.provider}/ is not available in this installation") from None
        raise
