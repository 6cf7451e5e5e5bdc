"""The report behind ``rescue-bench data validate``: every problem of a source, with its location.

The per-sample checks live in :mod:`rescue_bench.data.checks` (the loader runs them on every sample it reads).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rescue_bench.data.checks import DEFAULT_MAX_ROW_CHARS
from rescue_bench.data.load import read_source
from rescue_bench.problems import Problem

__all__ = ["ValidationReport", "validate_source"]


# -- whole sources ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ValidationReport:
    """Everything ``data validate`` says about a source."""

    source: str
    samples: int
    """Samples that could be read (samples with errors are not counted)."""
    rows: int
    errors: tuple[Problem, ...]
    warnings: tuple[Problem, ...]

    def failed(self, *, strict: bool = False) -> bool:
        """Whether validation fails: any error, or with ``strict`` any warning."""
        return bool(self.errors or (strict and self.warnings))

    def to_json(self) -> dict[str, list[dict[str, Any]]]:
        """The machine-readable form: exactly ``{"errors": [...], "warnings": [...]}``."""
        return {
            "errors": [p.to_json() for p in self.errors],
            "warnings": [p.to_json() for p in self.warnings],
        }

    def summary(self) -> str:
        return (
            f"{self.source}: {self.samples} usable samples, {self.rows} rows: "
            f"{_plural(len(self.errors), 'error')}, {_plural(len(self.warnings), 'warning')}"
        )

    def render_text(self) -> str:
        """One line per problem (errors first), then the summary line."""
        return "\n".join([*(p.render() for p in (*self.errors, *self.warnings)), self.summary()])


def validate_source(source: str | Path, *, max_row_chars: int = DEFAULT_MAX_ROW_CHARS) -> ValidationReport:
    """Read ``source`` and collect every problem in it; a row with more text than ``max_row_chars`` is one.

    Raises:
        SourceNotFound: the path does not exist, or is a symlink loop, a FIFO or a device.
        DataError: the source cannot be reached at all (for example the Hugging Face hub while offline).
    """
    report = read_source(source, max_row_chars=max_row_chars)
    return ValidationReport(
        source=str(source),
        samples=len(report.samples),
        rows=sum(len(s.rows) for s in report.samples),
        errors=report.errors,
        warnings=report.warnings,
    )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
