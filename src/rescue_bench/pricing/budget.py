"""The budget guard: stops a run (and its judge pass) before it can spend more than ``--budget`` dollars.

Each request reserves its worst case first (its prompt tokens, counted by a :class:`TokenCounter`, and its
output cap, both at the model's :class:`Prices`); the reply's real usage then replaces the reservation. The
engine holds it as a ``BudgetGuard`` and stops cleanly on :class:`BudgetExceeded`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rescue_bench.errors import ConfigError
from rescue_bench.pricing.prices import Prices
from rescue_bench.pricing.tokens import TokenCounter
from rescue_bench.records import Request, Usage

__all__ = ["Budget", "BudgetExceeded", "Spend"]


class BudgetExceeded(Exception):
    """Sending this request could exceed the run's budget; the run stops cleanly before it."""


@dataclass(slots=True)
class Spend:
    """Dollars spent and reserved against one limit: shared by every model a run asks (the model, judges)."""

    limit: float
    spent: float = 0.0
    reserved: float = 0.0


class Budget:
    """Stops a run before it can exceed ``limit`` dollars: each request reserves its worst case first.

    :meth:`share` gives a guard for another model of the same run (a judge) with its own prices and token
    counter, drawing on the same :class:`Spend`: whichever part of the run spends the budget, the next
    request that could pass it is not sent.
    """

    def __init__(
        self,
        limit: float,
        prices: Prices,
        counter: TokenCounter,
        *,
        spent: float = 0.0,
        spend: Spend | None = None,
    ) -> None:
        if limit <= 0:
            raise ConfigError(f"--budget must be positive (got {limit})")
        self.prices = prices
        self.counter = counter
        self.spend = spend or Spend(limit, spent)

    @property
    def limit(self) -> float:
        return self.spend.limit

    @property
    def spent(self) -> float:
        return self.spend.spent

    @property
    def reserved(self) -> float:
        return self.spend.reserved

    def share(self, prices: Prices, counter: TokenCounter, *, spent: float = 0.0) -> Budget:
        """A guard for another model of the run, on the same limit (``spent``: what it spent earlier)."""
        self.spend.spent += spent
        return Budget(self.limit, prices, counter, spend=self.spend)

    def reserve(self, request: Request, output_cap: int | None = None) -> float:
        cap = request.max_tokens if output_cap is None else output_cap
        worst = self.prices.cost(self.counter.request_tokens(request), cap)
        spend = self.spend
        if spend.spent + spend.reserved + worst > spend.limit:
            raise BudgetExceeded(
                f"budget ${spend.limit:.2f} reached: ${spend.spent:.4f} spent, and the next request could "
                f"cost up to ${worst:.4f}; raise --budget and re-run the same command to continue"
            )
        spend.reserved += worst
        return worst

    def settle(self, reserved: float, usage: Usage) -> None:
        self.spend.reserved -= reserved
        self.spend.spent += self.prices.cost(usage.prompt_tokens, usage.completion_tokens)
