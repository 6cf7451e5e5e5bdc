"""``provider/model`` names to providers: one dict of built-ins, plus plugins from an entry-point group.

:data:`PROVIDERS` maps a prefix to a :class:`ProviderFactory`:

* ``openai/``, ``deepseek/``, ``dashscope/``, ``openrouter/``, ``together/``, ``vllm/``, ``ollama/``,
  ``llamacpp-server/`` (one per :data:`~rescue_bench.models.presets.PRESETS` row):
  :class:`~rescue_bench.models.openai_compat.OpenAICompatProvider` with the preset's endpoint;
* ``local/<name or path.gguf>``: the in-process llama.cpp model (``rescue_bench.models.local``);
* ``baseline/random|majority``: reference rows without a model (``rescue_bench.models.baselines``);
* ``replay/<run-dir>``: the replies saved in a run directory (``rescue_bench.models.replay``).

An installed package adds a provider with a factory in the entry-point group ``rescue_bench.providers``:
``[project.entry-points."rescue_bench.providers"] mine = "my_pkg.provider:make"``. A factory is called as
``factory(model, options)``, with the part of the name after the slash and the :class:`ProviderOptions`.

The built-ins are listed in the dict only (one place per fact), not among the package's entry points, and a
plugin cannot take a built-in prefix. A plugin is loaded only when its prefix is asked for, and so are the
modules of ``local``, ``baseline`` and ``replay``: a missing optional extra only matters to those who need it.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Provider, parse_model_name
from rescue_bench.models.baselines import make_baseline
from rescue_bench.models.env import KeyOrigin, load_dotenv, lookup
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import LOCAL_PLACEHOLDER_KEY, PRESETS, get_preset, normalize_base_url
from rescue_bench.models.replay import ReplayProvider

if TYPE_CHECKING:
    import httpx2

ENTRY_POINT_GROUP = "rescue_bench.providers"
_COMPAT_OPTIONS = ("concurrency", "max_reply_bytes")
"""Keyword options an OpenAI-compatible provider takes through ``get_model(..., **opts)``."""


@dataclass(frozen=True, slots=True)
class ProviderOptions:
    """What :func:`get_model` was given besides the name."""

    base_url: str | None = None
    api_key_env: str | None = None
    timeout: float = 120.0
    seed: int | None = None
    http_client: httpx2.AsyncClient | None = None
    dotenv: Mapping[str, str] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Provider-specific keyword options (``local/``: ``n_ctx``, ``n_threads``, ...)."""


class ProviderFactory(Protocol):
    def __call__(self, model: str, options: ProviderOptions) -> Provider: ...


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

    ``opts`` go to the provider's factory (the local provider's settings). Raises :class:`ConfigError` for
    unknown prefixes, broken plugins and endpoint flags given to providers without an endpoint.
    """
    parsed = parse_model_name(name)
    options = ProviderOptions(base_url, api_key_env, timeout, seed, http_client, dotenv, opts)
    return find_factory(parsed.provider, name)(parsed.model, options)


def find_factory(prefix: str, name: str) -> ProviderFactory:
    """The built-in factory for ``prefix``, else the one an installed plugin declares."""
    if prefix in PROVIDERS:
        return PROVIDERS[prefix]
    plugins = {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    entry = plugins.get(prefix)
    if entry is None:
        known = ", ".join([*PROVIDERS, *sorted(plugins)])
        raise ConfigError(f"unknown provider {prefix!r} in {name!r}; known providers: {known}")
    where = (
        f"provider plugin {prefix!r} (entry point {entry.name} = {entry.value} in group {ENTRY_POINT_GROUP})"
    )
    try:
        factory = entry.load()
    except Exception as exc:  # whatever a third-party module raises on import, said in one line
        raise ConfigError(f"{where} cannot be loaded: {exc.__class__.__name__}: {exc}") from None
    if not callable(factory):
        raise ConfigError(f"{where} is not callable: it must be a factory(model, options) -> Provider")
    return cast(ProviderFactory, factory)


def make_openai_compat(preset_name: str, model: str, options: ProviderOptions) -> OpenAICompatProvider:
    """An OpenAI-compatible provider: flags first, then environment / ``.env``, then the preset's defaults."""
    preset = get_preset(preset_name)
    values = load_dotenv() if options.dotenv is None else options.dotenv
    base_url = options.base_url
    if base_url is None:
        base_url, _ = lookup(preset.base_url_envs, dotenv=values)
    url = normalize_base_url(base_url or preset.base_url)
    key_names = (options.api_key_env,) if options.api_key_env else preset.key_envs
    key, variable = lookup(key_names, dotenv=values)
    #  A custom endpoint may well be a local server without keys; the service itself will say 401 if it wants
    # one.
    if key is None and preset.key_required and (options.api_key_env is not None or url == preset.base_url):
        raise ConfigError(
            f"no API key for {preset_name}: set {' or '.join(key_names)} in the environment or in ./.env, "
            "or name another variable with --api-key-env"
        )
    unknown = sorted(set(options.extra) - set(_COMPAT_OPTIONS))
    if unknown:
        raise ConfigError(
            f"{preset_name}/ takes no option {', '.join(unknown)} (known: {', '.join(_COMPAT_OPTIONS)})"
        )
    return OpenAICompatProvider(
        model,
        preset=preset,
        base_url=url,
        api_key=key or LOCAL_PLACEHOLDER_KEY,
        timeout=options.timeout,
        http_client=options.http_client,
        key_origin=KeyOrigin(variable, key_names),
        **options.extra,
    )


def _no_endpoint(prefix: str, options: ProviderOptions) -> None:
    if options.base_url or options.api_key_env:
        raise ConfigError(f"--base-url and --api-key-env apply to OpenAI-compatible providers, not {prefix}/")


def _local(model: str, options: ProviderOptions) -> Provider:
    _no_endpoint("local", options)
    from rescue_bench.models.local import LocalProvider  # an optional extra: imported when asked for

    seeded = dict(options.extra) if options.seed is None else {"seed": options.seed, **options.extra}
    return LocalProvider(model, **seeded)


def _baseline(model: str, options: ProviderOptions) -> Provider:
    _no_endpoint("baseline", options)
    return make_baseline(model, seed=0 if options.seed is None else options.seed)


def _replay(model: str, options: ProviderOptions) -> Provider:
    _no_endpoint("replay", options)
    return ReplayProvider(Path(model))


PROVIDERS: dict[str, ProviderFactory] = {
    **{name: partial(make_openai_compat, name) for name in PRESETS},
    "local": _local,
    "baseline": _baseline,
    "replay": _replay,
}
