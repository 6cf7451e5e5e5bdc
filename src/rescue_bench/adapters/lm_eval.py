"""Where the lm-eval task files shipped with the package are: the directory to pass to ``--include_path``.

``lm_eval --include_path "$(rescue-bench tasks lm-eval-path)" --tasks rescue_bench ...`` (docs/adapters.md).
The directory holds the task YAML files and their ``utils.py`` glue; lm-eval loads them by path, so they are
package data, not a module of this package.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

TASKS_DIR = "lm_eval_tasks"


def include_path() -> Path:
    """The directory of the ``rescue_bench`` lm-eval tasks inside the installed package.

    >>> sorted(p.name for p in (include_path() / "rescue_bench").glob("*.yaml"))
    ['itp.yaml', 'rpp.yaml', 'ssp.yaml', 'stp.yaml']
    """
    return Path(str(resources.files("rescue_bench.adapters").joinpath(TASKS_DIR)))
