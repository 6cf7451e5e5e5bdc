"""Docs, code comments and the Makefile speak about what the tool does today, not about past sessions: no
conditions of a past measurement, no issue numbers, no dates of work (figures live in docs/benchmarks.md with
the command that gives them)."""

from __future__ import annotations

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
HISTORY = re.compile(
    r"busy with other work|busy cores|busy machine|load average about|as the demo had then|\(issue \d+|"
    r"issue \d+:|measured \d{4}-\d{2}-\d{2}",
    re.IGNORECASE,
)


def test_no_passage_records_the_conditions_of_a_past_measurement() -> None:
    files = [REPO_ROOT / "Makefile", *(REPO_ROOT / "docs").glob("*.md"), *(REPO_ROOT / "src").rglob("*.py")]
    found = [
        f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if HISTORY.search(line)
    ]
    assert found == []
