"""The presets' tables in docs/reasoning.md, rendered from the :class:`~rescue_bench.models.presets.Preset`
records so that the docs cannot drift from the code.

Each table sits between two markers in the markdown file (``<!-- presets:start -->`` ... ``<!-- presets:end
-->``); :func:`refresh` puts the rendered tables there, ``scripts/gen_docs.py`` writes the file, and a test
checks that the file equals its refreshed text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Final, get_args

from rescue_bench.models.base import ReasoningEffort
from rescue_bench.models.presets import PRESETS, Preset, reasoning_fields
from rescue_bench.records import Json

EFFORTS: Final = tuple(effort for effort in get_args(ReasoningEffort) if effort != "none")
"""The efforts that send something, in rising order."""


def _code(value: Json) -> str:
    """A request-body fragment as inline code: compact JSON without its outer braces."""
    return f"`{json.dumps(value, separators=(', ', ': '))[1:-1]}`" if value else "nothing"


def presets_table(presets: Iterable[Preset] = PRESETS.values()) -> str:
    """Each preset's endpoint, key variables, best structured output and ``--disable-thinking`` fields."""
    rows = [
        "| preset | default base URL | key variables | best structured output | `--disable-thinking` sends |",
        "|---|---|---|---|---|",
    ]
    for preset in presets:
        keys = ", ".join(preset.key_envs) + ("" if preset.key_required else " (optional)")
        best = preset.best_format + (" + schema" if preset.json_object_schema else "")
        url = preset.base_url.split("://", 1)[-1]
        rows.append(f"| `{preset.name}` | {url} | {keys} | {best} | {_code(preset.thinking_off or {})} |")
    return "\n".join(rows)


def efforts_table(presets: Iterable[Preset] = PRESETS.values()) -> str:
    """The fields each effort adds to a request body, per preset (:func:`reasoning_fields`).

    >>> efforts_table().splitlines()[3]
    '| `deepseek` | `"thinking": {"type": "enabled"}` | same | same | same | same |'
    """
    rows = ["| preset | " + " | ".join(EFFORTS) + " |", "|---" * (len(EFFORTS) + 1) + "|"]
    for preset in presets:
        sent = [reasoning_fields(preset, effort) for effort in EFFORTS]
        # "same" for a cell equal to the one before it: the services with a switch and no level read at once.
        cells = [_code(s) if i == 0 or s != sent[i - 1] else "same" for i, s in enumerate(sent)]
        rows.append(f"| `{preset.name}` | " + " | ".join(cells) + " |")
    return "\n".join(rows)


TABLES: Final[dict[str, Callable[[], str]]] = {"presets": presets_table, "efforts": efforts_table}
"""Marker name -> the table rendered between its markers."""


def refresh(text: str) -> str:
    """``text`` with every marked table rendered anew; a missing or doubled pair of markers is an error."""
    for name, render in TABLES.items():
        pattern = re.compile(rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", re.DOTALL)
        matches = list(pattern.finditer(text))
        if len(matches) != 1:
            raise ValueError(f"expected one <!-- {name}:start/end --> pair, found {len(matches)}")
        match = matches[0]
        text = text[: match.end(1)] + render() + "\n" + text[match.start(2) :]
    return text
