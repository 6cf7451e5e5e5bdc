"""Located data problems: what is wrong, and exactly where.

A leaf (below :mod:`rescue_bench.errors`, whose ``DataError`` carries them), used by the data loaders and
validators.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]


def one_line(text: str) -> str:
    r"""``text`` with its unprintable characters (a newline in a sample id or a file name) written as escapes.

    >>> one_line("ok"), one_line("a\tb\n")
    ('ok', 'a\\tb\\n')
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem found in benchmark data."""

    severity: Severity
    """``error`` makes a sample unusable; ``warning`` is reported and the sample is still used."""
    message: str
    """A one-line human explanation."""
    file: str | None = None
    """The file the problem is in."""
    line: int | None = None
    """1-based line number, for JSONL sources."""
    sample_id: str | None = None
    row_index: int | None = None
    """The row's ``row_index`` (1-based), when the problem is in a row."""
    path: str | None = None
    """JSON path of the field, for example ``rows[3].internal_emotion[0].intensity``."""

    def location(self) -> str:
        r"""``file:line sample row N field`` with whatever parts are known, on one line.

        >>> Problem("error", "'rows' is empty", file="a.json", sample_id="x\ny", path="rows").location()
        'a.json sample x\\ny rows'
        """
        parts: list[str] = []
        if self.file:
            parts.append(f"{self.file}:{self.line}" if self.line else self.file)
        if self.sample_id:
            parts.append(f"sample {self.sample_id}")
        if self.row_index is not None:
            parts.append(f"row {self.row_index}")
        if self.path:
            parts.append(self.path)
        return " ".join(one_line(part) for part in parts)

    def render(self) -> str:
        where = self.location()
        return f"{self.severity}: {where}: {self.message}" if where else f"{self.severity}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
