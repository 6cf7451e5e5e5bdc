"""The self-contained HTML report: one file, figures embedded as base64 PNG, no external requests.

Rendered with jinja2 (autoescape on) from ``templates/report.html.j2``.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import TYPE_CHECKING

from jinja2 import Environment, PackageLoader, select_autoescape

from rescue_bench.report.tables import Cell
from rescue_bench.report.writers import text

if TYPE_CHECKING:
    from rescue_bench.report.document import Report


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("rescue_bench.report", "templates"),
        autoescape=select_autoescape(("html", "j2")),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["cell"] = text
    env.filters["b64"] = lambda data: base64.b64encode(data).decode("ascii")
    env.tests["numeric"] = lambda value: isinstance(value, Cell | int | float) and not isinstance(value, bool)
    return env


COLLAPSED = frozenset({"per_label", "label_distribution", "usage", "config_shared"})
"""Sections shown closed (long, and read less often); the figures are closed too. Every section opens
with a click, and the contents list links to each."""


def render_html(report: Report) -> str:
    """The report as one HTML document: a contents list, then each table in a collapsible section (the
    long ones closed), its wide tables scrolling inside their own box."""
    closed = COLLAPSED | {t.key for t in report.tables if t.key.startswith("relational_")}
    return _environment().get_template("report.html.j2").render(report=report, collapsed=closed)


def write_html(report: Report, path: Path) -> Path:
    path.write_text(render_html(report), encoding="utf-8")
    return path
