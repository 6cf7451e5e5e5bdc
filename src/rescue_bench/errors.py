"""The package's error types.

Every failure that a user can cause (bad data, bad flags, a missing extra, an endpoint that refuses) is raised
as a subclass of :class:`BenchError`. The CLI turns these into one-line messages with no traceback.

    BenchError
    ├── DataError          unreadable or invalid benchmark data (carries the problems found)
    ├── ConfigError        flags or settings that cannot work together, changed run configs
    ├── DependencyError    an optional extra is not installed (the message says which)
    └── ProviderError      a model endpoint failed in a way that retrying cannot fix

Two signals pass between a provider and the engine's retry loop, below every layer that uses them:
:class:`RetryableError` (a fault worth another attempt) and :class:`ModerationRefusal`. Two more pass between
an endpoint's SDK side and its users, so that no one else needs the SDK's own types: :class:`FormatRejected`
and :class:`CallFailed`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rescue_bench.problems import Problem


class BenchError(Exception):
    """Base class of every error the package raises on purpose."""


class DataError(BenchError):
    """Benchmark data that cannot be read or fails validation.

    ``problems`` holds every located problem (file, line, sample, row, field) that led to the error.
    """

    def __init__(self, message: str, problems: Sequence[Problem] = ()) -> None:
        super().__init__(message)
        self.problems: tuple[Problem, ...] = tuple(problems)


class ConfigError(BenchError):
    """Settings that cannot work: unknown task or mode, a changed config for an existing run, and so on."""


class UnfinishedWork(BenchError):
    """A command asked to make numbers of a run whose instances did not all get an answer: refused, with the
    exit code of an ``incomplete`` run (4), so a script treats it as ``run`` does."""

    exit_code = 4


class DependencyError(BenchError):
    """An optional dependency is missing; the message names the extra to install."""

    @classmethod
    def missing(cls, module: str, extra: str) -> DependencyError:
        return cls(f"{module} is not installed: run `pip install 'rescue-bench[{extra}]'`")


class ProviderError(BenchError):
    """A model endpoint failed for good (authentication, a 4xx other than 429, an unknown model)."""


class RetryableError(Exception):
    """A fault worth trying again (HTTP 429 or 5xx, timeout, connection error, truncated body)."""

    def __init__(self, message: str, *, retry_after: float | None = None, overload: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        """Seconds the server asked us to wait, when it said so."""
        self.overload = overload
        """The endpoint is saying it has more than it can take (429, 503, a timeout): the engine keeps fewer
        requests in flight."""


class ModerationRefusal(Exception):
    """The endpoint's content moderation refused the prompt (e.g. DashScope ``data_inspection_failed``)."""


class FormatRejected(Exception):
    """The endpoint refused the ``response_format`` sent (HTTP ``status``): the provider steps down to a
    plainer one."""

    def __init__(self, status: int, detail: str = "") -> None:
        super().__init__(f"HTTP {status}: response_format refused")
        self.status = status
        self.detail = detail
        """What the server said, the key removed (for the step-down's warning)."""


class CallFailed(Exception):
    """A call of an endpoint's Files or Batches API failed: ``kind`` names the SDK's error, ``status`` is the
    HTTP error status, ``None`` for a fault worth trying again (connection error, 429, 5xx)."""

    def __init__(self, kind: str, status: int | None) -> None:
        super().__init__(kind if status is None else f"{kind} (HTTP {status})")
        self.kind = kind
        self.status = status

    @property
    def transient(self) -> bool:
        return self.status is None
