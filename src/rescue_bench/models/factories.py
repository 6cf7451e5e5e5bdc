"""Provider factories with what they declare, known before any provider is built: ``local/``, ``baseline/``,
``replay/`` and the plugins of the entry-point group ``rescue_bench.providers``.

The OpenAI-compatible presets are added to these in :mod:`rescue_bench.models.registry`. What a prefix's
providers can do is read here from the factory (:class:`Declared`), so that the spec, the budget and the
judges' endpoints are decided from declarations, never from a list of names. A plugin declares its
providers' :class:`Capabilities` with a ``capabilities`` attribute of its factory (a provider class used as
its own factory has it already); a factory that declares none gets the defaults: an endpoint, no bill, a
reasoning switch.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from rescue_bench.errors import ConfigError
from rescue_bench.models.base import Capabilities, Provider
from rescue_bench.models.baselines import CAPABILITIES as BASELINE_CAPABILITIES
from rescue_bench.models.baselines import make_baseline
from rescue_bench.models.local_capabilities import LOCAL_CAPABILITIES
from rescue_bench.models.replay import ReplayProvider

if TYPE_CHECKING:
    import httpx2

ENTRY_POINT_GROUP: Final = "rescue_bench.providers"


@dataclass(frozen=True, slots=True)
class ProviderOptions:
    """What :func:`~rescue_bench.models.registry.get_model` was given besides the name."""

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


@dataclass(frozen=True, slots=True)
class Declared:
    """A factory and the capabilities of every provider it makes."""

    make: Callable[[str, ProviderOptions], Provider]
    capabilities: Capabilities

    def __call__(self, model: str, options: ProviderOptions) -> Provider:
        return self.make(model, options)


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


OTHERS: Final[Mapping[str, Declared]] = {
    "local": Declared(_local, LOCAL_CAPABILITIES),
    "baseline": Declared(_baseline, BASELINE_CAPABILITIES),
    "replay": Declared(_replay, ReplayProvider.capabilities),
}
"""The built-in providers that are not OpenAI-compatible presets."""


def plugin_entries() -> dict[str, importlib.metadata.EntryPoint]:
    """The installed plugins' entry points by prefix."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def load_plugin(entry: importlib.metadata.EntryPoint) -> Declared:
    """The plugin's factory with its declared capabilities; a broken one is a :class:`ConfigError`."""
    where = f"provider plugin {entry.name!r} (entry point {entry.name} = {entry.value} in group "
    where += f"{ENTRY_POINT_GROUP})"
    try:
        factory = entry.load()
    except Exception as exc:  # whatever a third-party module raises on import, said in one line
        raise ConfigError(f"{where} cannot be loaded: {exc.__class__.__name__}: {exc}") from None
    if not callable(factory):
        raise ConfigError(f"{where} is not callable: it must be a factory(model, options) -> Provider")
    declared = getattr(factory, "capabilities", Capabilities())
    if not isinstance(declared, Capabilities):
        raise ConfigError(f"{where}: its capabilities attribute is not a rescue_bench Capabilities")
    return Declared(factory, declared)


def find_other(prefix: str) -> Declared | None:
    """The factory of a prefix that is not a preset's: ``local``, ``baseline``, ``replay``, else an installed
    plugin's (``None``: no such prefix)."""
    if prefix in OTHERS:
        return OTHERS[prefix]
    entry = plugin_entries().get(prefix)
    return None if entry is None else load_plugin(entry)
