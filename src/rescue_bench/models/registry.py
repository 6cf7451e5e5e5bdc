"""``provider/model`` names to providers: one dict of built-ins, plus plugins from an entry-point group.

:data:`PROVIDERS` maps a prefix to a :class:`ProviderFactory`:

* one prefix per :data:`~rescue_bench.models.presets.PRESETS` record (``openai/``, ``vllm/``, ...; the
  table is in docs/reasoning.md): :class:`~rescue_bench.models.openai_compat.OpenAICompatProvider` with the
  preset's endpoint;
* ``local/<name or path.gguf>``: the in-process llama.cpp model (``rescue_bench.models.local``);
* ``baseline/random|majority``: reference rows without a model (``rescue_bench.models.baselines``);
* ``replay/<run-dir>``: the replies saved in a run directory (``rescue_bench.models.replay``).

An installed package adds a provider with a factory in the entry-point group ``rescue_bench.providers``:
``[project.entry-points."rescue_bench.providers"] mine = "my_pkg.provider:make"``. A factory is called as
``factory(model, options)``, with the part of the name after the slash and the :class:`ProviderOptions`. Its
``capabilities`` attribute (a :class:`~rescue_bench.models.base.Capabilities`; a provider class used as its
own factory has it) declares what its providers can do before one is built: ``billed=True`` puts them under
``--budget``, ``settings`` names the generation settings they honour (another one given is refused, a
reasoning effort included), ``has_endpoint=False`` hands the run's ``--base-url`` to its judges
(:func:`declared_capabilities`).

The built-ins are listed in the dict only (one place per fact), not among the package's entry points, and a
plugin cannot take a built-in prefix. A plugin is loaded only when its prefix is asked for, and so are the
modules of ``local``, ``baseline`` and ``replay``: a missing optional extra only matters to those who need it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Capabilities, Provider, parse_model_name
from rescue_bench.models.env import KeyOrigin, load_dotenv, lookup
from rescue_bench.models.factories import (
    ENTRY_POINT_GROUP,
    OTHERS,
    Declared,
    ProviderFactory,
    ProviderOptions,
    find_other,
    plugin_entries,
)
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import LOCAL_PLACEHOLDER_KEY, PRESETS, get_preset, normalize_base_url

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "ENTRY_POINT_GROUP",
    "PROVIDERS",
    "ProviderFactory",
    "ProviderOptions",
    "declared_capabilities",
    "find_factory",
    "get_model",
    "has_endpoint",
    "is_billed",
    "make_openai_compat",
]
_COMPAT_OPTIONS = ("concurrency", "max_reply_bytes")
"""Keyword options an OpenAI-compatible provider takes through ``get_model(..., **opts)``."""


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


def find_factory(prefix: str, name: str) -> Declared:
    """The built-in factory for ``prefix``, else the one an installed plugin declares."""
    found = PROVIDERS[prefix] if prefix in PROVIDERS else find_other(prefix)
    if found is None:
        known = ", ".join([*PROVIDERS, *sorted(plugin_entries())])
        raise ConfigError(f"unknown provider {prefix!r} in {name!r}; known providers: {known}")
    return found


def declared_capabilities(name: str) -> Capabilities:
    """What the providers of model ``name``'s prefix declare they can do, without building one.

    >>> declared_capabilities("openai/gpt-4o").billed, declared_capabilities("baseline/random").billed
    (True, False)
    """
    return find_factory(parse_model_name(name).provider, name).capabilities


def has_endpoint(name: str) -> bool:
    """Whether model ``name``'s provider declares an endpoint (``--base-url`` applies; not a baseline, local
    or replay model).

    >>> has_endpoint("openai/gpt-4o"), has_endpoint("baseline/random")
    (True, False)
    """
    return declared_capabilities(name).has_endpoint


def is_billed(name: str) -> bool:
    """Whether model ``name``'s provider declares that its requests cost money, so that ``--budget`` guards
    them.

    >>> is_billed("vllm/qwen"), is_billed("local/gemma-3-270m")
    (True, False)
    """
    return declared_capabilities(name).billed


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


PROVIDERS: Final[Mapping[str, Declared]] = {
    **{
        name: Declared(partial(make_openai_compat, name), OpenAICompatProvider.capabilities)
        for name in PRESETS
    },
    **OTHERS,
}
