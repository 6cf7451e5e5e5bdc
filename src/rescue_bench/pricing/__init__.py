"""What tokens cost: prices, token counts, estimates before a run and the budget guard during one.

Low in the layers (it reads only ``records``, ``rundir`` and ``errors``), so the engine, the judges, the
annotation drafts and the reports all price tokens the same way.

* :mod:`.prices`: US dollars per million tokens (given, a ``--prices`` file or the list-price table), and
  what a run directory spent;
* :mod:`.tokens`: prompt tokens of a request (tiktoken, or characters / 4 offline);
* :mod:`.estimate`: requests and tokens of plain requests, before anything is sent;
* :mod:`.budget`: the guard that stops a run before ``--budget`` dollars could be passed.
"""

from rescue_bench.pricing.budget import Budget, BudgetExceeded, Spend
from rescue_bench.pricing.estimate import TaskEstimate, estimate_requests
from rescue_bench.pricing.prices import (
    BATCH_DISCOUNT,
    LIST_PRICES,
    Priced,
    Prices,
    has_entry,
    load_prices,
    spent_so_far,
    table_prices,
)
from rescue_bench.pricing.tokens import TokenCounter, chars_counter, make_counter

__all__ = [
    "BATCH_DISCOUNT",
    "LIST_PRICES",
    "Budget",
    "BudgetExceeded",
    "Priced",
    "Prices",
    "Spend",
    "TaskEstimate",
    "TokenCounter",
    "chars_counter",
    "estimate_requests",
    "has_entry",
    "load_prices",
    "make_counter",
    "spent_so_far",
    "table_prices",
]
