"""Token prices and what a run directory has spent: read by the budget guard, estimates and reports.

The budget guard (:mod:`rescue_bench.pricing.budget`), ``estimate`` and the report's cost column all price
tokens, so prices sit below all of them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

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
    given = entry if isinstance(entry, dict) else {}
    price_in, price_out = _price(given.get("input")), _price(given.get("output"))
    if price_in is None or price_out is None:
        raise ConfigError(
            f"--prices: the entry for {model!r} in {path} needs numbers 'input' and 'output', "
            "finite and >= 0 (US dollars per million tokens)"
        )
    return Prices(price_in, price_out)


def _price(value: Json) -> float | None:
    """A price, or ``None`` for anything but a finite number >= 0: a negative or infinite price would keep
    ``--budget`` from ever stopping, and ``"2.5"`` or ``true`` is a mistake, not a price.

    >>> _price(2), _price(-1.0), _price(float("inf")), _price("2.5"), _price(True)
    (2.0, None, None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def spent_so_far(requests: Iterable[RequestLine], prices: Prices) -> float:
    """The cost of the tokens a run directory's requests already used (cached replies cost nothing)."""
    return sum(
        prices.cost(r.usage.prompt_tokens, r.usage.completion_tokens) for r in requests if not r.cached
    )
