"""Token prices and what a run directory has spent: read by the budget guard, estimates and reports.

The budget guard (:mod:`rescue_bench.pricing.budget`), ``estimate`` and the report's cost column all price
tokens, so prices sit below all of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rescue_bench.errors import ConfigError
from rescue_bench.records import Json
from rescue_bench.rundir import RequestLine

BATCH_DISCOUNT = 0.5
"""What a Batch API request costs against the same request online (OpenAI's Batch API: half price)."""


@dataclass(frozen=True, slots=True)
class Prices:
    """US dollars per million tokens."""

    input: float
    output: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """
        >>> Prices(2.5, 10.0).cost(1_000_000, 100_000)
        3.5
        """
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1_000_000

    def batched(self, batch: bool = True) -> Prices:
        """The prices through a Batch API (:data:`BATCH_DISCOUNT`), or these when ``batch`` is false.

        >>> Prices(2.5, 10.0).batched()
        Prices(input=1.25, output=5.0)
        """
        return Prices(self.input * BATCH_DISCOUNT, self.output * BATCH_DISCOUNT) if batch else self


LIST_PRICES: Mapping[str, Prices] = MappingProxyType(
    {
        "openai/gpt-4o-mini": Prices(0.15, 0.60),
        "openai/gpt-4o": Prices(2.50, 10.00),
        "openai/gpt-4.1": Prices(2.00, 8.00),
        "openai/gpt-4.1-mini": Prices(0.40, 1.60),
        "openai/gpt-5": Prices(1.25, 10.00),
        "openai/gpt-5-mini": Prices(0.25, 2.00),
    }
)
"""List prices (US dollars per million tokens, standard online tier) of the hosted models the toolkit's docs
name. A model that is not here has no price until one is given: its cost is shown as unknown, never taken
from another model. Providers change prices: ``--price-in``/``--price-out``, a ``[[judges]]`` entry's
``price_in``/``price_out`` or ``--prices FILE`` override this table."""
TABLE_SOURCE = "the toolkit's list-price table"
UNKNOWN_SOURCE = "not in the price table"


@dataclass(frozen=True, slots=True)
class Priced:
    """A model's prices (``None``: unknown) and where they come from, as ``estimate`` prints it."""

    model: str
    prices: Prices | None
    source: str

    def describe(self) -> str:
        """``openai/gpt-4o-mini: $0.15 in, $0.60 out per million tokens (--price-in/--price-out)``

        >>> Priced("a/b", None, UNKNOWN_SOURCE).describe()
        'a/b: price unknown (not in the price table), so its cost is unknown'
        """
        if self.prices is None:
            return f"{self.model}: price unknown ({self.source}), so its cost is unknown"
        p = self.prices
        return f"{self.model}: ${p.input:g} in, ${p.output:g} out per million tokens ({self.source})"


def table_prices(model: str) -> Priced:
    """``model``'s entry in :data:`LIST_PRICES`, or unknown prices.

    >>> table_prices("openai/gpt-4o-mini").prices, table_prices("openai/gpt-5.4").prices
    (Prices(input=0.15, output=0.6), None)
    """
    found = LIST_PRICES.get(model)
    return Priced(model, found, TABLE_SOURCE if found is not None else UNKNOWN_SOURCE)


Price = Annotated[float, Field(ge=0, allow_inf_nan=False, strict=True)]
"""A price: a finite number >= 0. A negative or infinite price would keep ``--budget`` from ever stopping, and
``"2.5"`` or ``true`` is a mistake, not a price."""


class PriceEntry(BaseModel):
    """One entry of a prices file: US dollars per million tokens (other keys, such as a note, are let be)."""

    model_config = ConfigDict(frozen=True)

    input: Price
    output: Price


def load_prices(path: Path, model: str) -> Prices:
    """Prices of ``model`` from a JSON file: ``{"input": x, "output": y}`` or ``{"<provider/model>": {...}}``.

    A per-model file may key by the full name or by the part after the provider.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"--prices: {path} not found") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--prices: {path} is not readable JSON ({exc.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"--prices: {path} must hold a JSON object")
    entry: Json = data
    if "input" not in data:
        entry = data.get(model) or data.get(model.partition("/")[2])
        if entry is None:
            raise ConfigError(
                f"--prices: {path} has no entry for {model!r} (keys: {', '.join(map(str, data))})"
            )
    try:
        given = PriceEntry.model_validate(entry)
    except ValidationError:
        raise ConfigError(
            f"--prices: the entry for {model!r} in {path} needs numbers 'input' and 'output', "
            "finite and >= 0 (US dollars per million tokens)"
        ) from None
    return Prices(given.input, given.output)


def has_entry(path: Path, model: str) -> bool:
    """Whether a prices file keys an entry by ``model`` (its full name or the part after the provider): a
    file of one unkeyed entry prices the run's model alone, never its judges."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(data, dict) and "input" not in data and (model in data or model.partition("/")[2] in data)
    )


def spent_so_far(requests: Iterable[RequestLine], prices: Prices) -> float:
    """The cost of the tokens a run directory's requests already used (cached replies cost nothing)."""
    return sum(
        prices.cost(r.usage.prompt_tokens, r.usage.completion_tokens) for r in requests if not r.cached
    )
