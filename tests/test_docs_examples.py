"""Every example in README.md and docs/*.md runs: each `rescue-bench ...` command of a ```console block (its
``$`` lines) or a ```bash block, and each ```python block, in the order the page gives them, in one scratch
directory per page (a later example uses the run an earlier one made).

A block that cannot run here (it needs a network, an API key, a GPU, a video or a server that waits for a
browser) carries a marker comment on the line before its fence, ``<!-- example: skip, needs ... -->``; each
skipped block is a skipped test of its own, so pytest counts and lists them with their reasons.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.conftest import REPO_ROOT
from typer.testing import CliRunner

from rescue_bench.cli.main import app

PAGES = (REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md")))
FENCE = re.compile(
    r"^(?:<!-- example: (?P<marker>[^\n]*?) -->\n)?```(?P<kind>console|bash|python)\n(?P<body>.*?)^```",
    re.S | re.M,
)


@dataclass(frozen=True)
class Example:
    page: Path
    line: int
    kind: str
    body: str
    skip: str | None
    """The marker's reason when the page marks the block to skip."""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO_ROOT)}:{self.line}"

    def commands(self) -> list[list[str]]:
        """The block's `rescue-bench` commands as argument lists (continued lines joined, no comments)."""
        text = self.body.replace("\\\n", " ")
        prefix = "$ rescue-bench " if self.kind == "console" else "rescue-bench "
        lines = [line.strip() for line in text.splitlines()]
        found = [line.removeprefix("$ ") for line in lines if line.startswith(prefix)]
        return [shlex.split(line, comments=True)[1:] for line in found]


def examples(page: Path) -> list[Example]:
    """The page's runnable blocks: python blocks and blocks with a `rescue-bench` command."""
    text = page.read_text(encoding="utf-8")
    out = []
    for match in FENCE.finditer(text):
        marker = match["marker"]
        skip = marker.removeprefix("skip").strip(" ,:") or "marked skip" if marker else None
        line = text.count("\n", 0, match.start("kind")) + 1
        found = Example(page, line, match["kind"], match["body"], skip)
        if found.kind == "python" or found.commands():
            out.append(found)
    return out


ALL = [example for page in PAGES for example in examples(page)]
SKIPPED = [example for example in ALL if example.skip is not None]


def _run(example: Example) -> None:
    if example.kind == "python":
        code = compile(example.body, example.where, "exec")
        exec(code, {"__name__": "__example__"})
        return
    for args in example.commands():
        result = CliRunner().invoke(app, args)
        shown = f"{example.where}: rescue-bench {shlex.join(args)}"
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            f"{shown} raised {result.exception!r}"
        )
        assert result.exit_code == 0, f"{shown} exited {result.exit_code}:\n{result.output}"


STUDY_PAGES = frozenset({"robustness.md", "studies.md"})
"""Pages whose examples run whole studies (seconds each): with the slow tests, out of `make test-fast`."""


def _page(path: Path) -> object:
    return pytest.param(path, marks=pytest.mark.slow) if path.name in STUDY_PAGES else path


@pytest.mark.parametrize(
    "page", [_page(p) for p in PAGES if any(e.page == p for e in ALL)], ids=lambda p: p.name
)
def test_the_pages_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no example may reach the network unmarked
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    ran = [e for e in ALL if e.page == page and e.skip is None]
    for example in ran:
        _run(example)
    assert ran or all(e.skip for e in ALL if e.page == page)


@pytest.mark.parametrize("example", SKIPPED, ids=lambda e: e.where)
def test_skipped_examples_are_listed(example: Example) -> None:
    assert example.skip and example.skip != "marked skip", f"{example.where}: say why the example is skipped"
    pytest.skip(f"{example.where}: {example.skip}")


def test_the_runner_finds_the_examples() -> None:
    """The runner sees the README's quickstart and the design page's Python API example."""
    where = {(e.page.name, e.kind) for e in ALL if e.skip is None}
    assert ("README.md", "console") in where
    assert ("design.md", "python") in where
    assert len(ALL) - len(SKIPPED) >= 3, [e.where for e in ALL if e.skip is None]
