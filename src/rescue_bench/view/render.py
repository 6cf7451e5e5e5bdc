"""Template rendering shared by the app and the bundle: autoescaping everywhere, strict undefined names."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from rescue_bench.records import Usage
from rescue_bench.report.measured import PAPER_SAMPLES, measured_heading, official_size
from rescue_bench.report.tables import Cell
from rescue_bench.tasks import tasks_of_kind
from rescue_bench.view.data import RunView, run_labels
from rescue_bench.view.links import Links

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
"""No inline script or style, nothing from elsewhere: hostile text that escaped escaping could not run."""
BUNDLE_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; base-uri 'none'"
"""The bundle's policy, set by a meta tag (which cannot carry frame-ancestors)."""


def _cell(value: Any) -> str:
    if isinstance(value, Cell):
        return value.text()
    return "–" if value is None else str(value)


def _num(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if value is None:
        return "–"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def fact(value: Any, key: str) -> str:
    """A request record's fact in human units: a time as UTC date and time, a latency in s or ms, tokens.

    >>> fact(1796000000.5, "time"), fact(1.2345, "latency"), fact(0.0412, "latency")
    ('2026-11-30 00:53:20 UTC', '1.23 s', '41 ms')
    >>> fact({"prompt_tokens": 900, "completion_tokens": 12, "reasoning_tokens": 0}, "usage")
    '900 prompt + 12 completion tokens'
    """
    if key == "time" and isinstance(value, int | float) and not isinstance(value, bool):
        try:
            moment = datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return _num(value)
        return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
    if key == "latency" and isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:.2f} s" if value >= 1 else f"{value * 1000:.0f} ms"
    if key == "usage" and isinstance(value, dict):
        usage = Usage(**value)  # a request line's usage, dumped (ReplyRecord.facts)
        parts = [f"{usage.prompt_tokens} prompt", f"{usage.completion_tokens} completion"]
        if usage.reasoning_tokens:
            parts.append(f"{usage.reasoning_tokens} reasoning")
        return " + ".join(parts) + " tokens"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return _num(value)


def breakable(name: str) -> Markup:
    """A model name, escaped, that may break after each ``/`` in a narrow header cell.

    >>> str(breakable("openrouter/meta-llama/<x>"))
    'openrouter/<wbr>meta-llama/<wbr>&lt;x&gt;'
    """
    return Markup("/<wbr>").join(escape(part) for part in name.split("/"))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def make_environment() -> Environment:
    env = Environment(
        loader=PackageLoader("rescue_bench.view", "templates"),
        autoescape=True,  # every template, whatever its name: model replies are hostile text
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(cell=_cell, num=_num, json=_json, fact=fact, breakable=breakable)
    env.globals["free_text"] = tasks_of_kind("generation")  # tasks answered in words, not labels
    return env


def measured_line(views: Sequence[RunView]) -> str:
    """What the runs measured (data, samples, instances, judge, BERTScore), as every page's heading says it;
    empty before any run has an answer."""
    runs = [view.data for view in views if view.data.prediction_lines]
    if not runs:
        return ""
    other = any(not official_size(run) for run in runs)
    release = (
        f"; not the official release ({PAPER_SAMPLES} samples), so not the paper's footing" if other else ""
    )
    return measured_heading(runs) + release


def render_page(
    env: Environment,
    name: str,
    context: Mapping[str, Any],
    *,
    links: Links,
    views: Sequence[RunView],
    redact: bool,
) -> str:
    """One page as HTML text."""
    return env.get_template(name).render(
        {
            **context,
            "links": links,
            "nav_views": views,
            "run_names": run_labels(views),
            "redact": redact,
            "csp": BUNDLE_CSP,
            "measured": measured_line(views),
        }
    )
