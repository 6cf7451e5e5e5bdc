"""The console script's policy for Python's cyclic garbage collector: fewer young collections, none at exit.

Why: a run holds a few hundred thousand long-lived objects (the data's pydantic models, the plans, the SDK's
classes), and every request allocates short-lived ones. At Python's default thresholds (700, 10, 10) a
paper-sized run made 934 young and 7 full collections, the full ones walking the whole heap while the event
loop waited: 1.4 s in all, against 0.4 s with :data:`YOUNG_THRESHOLD` (``docs/benchmarks.md``, "Session
11"). Reference counting frees almost everything a request leaves behind, so the later young collections
cost no memory to speak of (peak RSS was unchanged). At exit the interpreter's own final collections walk
every object once more (0.24-0.32 s after such a run); objects frozen just before (``gc.freeze``) are
skipped. Python never promises the finalizers of objects still alive at exit, and the run directory's files
are written, flushed and closed by then.

The setting is process-wide, so it belongs to the application, never to a library call:
:func:`rescue_bench.run` and the engine leave the collector as their caller set it, and only the
``rescue-bench`` console script (:func:`rescue_bench.cli.main.main`) applies this policy. The plain fallback
is Python's own thresholds: set ``RESCUE_BENCH_GC=default``.
"""

from __future__ import annotations

import atexit
import gc
import os
from collections.abc import Mapping

__all__ = ["ENV_VAR", "YOUNG_THRESHOLD", "apply_policy"]

ENV_VAR = "RESCUE_BENCH_GC"
"""``default`` keeps Python's thresholds; unset (or ``tuned``), the console script raises the young one."""

YOUNG_THRESHOLD = 10_000
"""Allocations between young collections (Python's default: 700); the older generations keep theirs."""

_CHOICES = ("tuned", "default")


def apply_policy(environ: Mapping[str, str] = os.environ) -> str:
    """Apply the policy ``environ`` names (``RESCUE_BENCH_GC``) and return it.

    Raises:
        ValueError: the variable names no policy (the console script makes it a usage error).
    """
    choice = environ.get(ENV_VAR, "tuned").strip().lower() or "tuned"
    if choice not in _CHOICES:
        raise ValueError(f"{ENV_VAR}={environ[ENV_VAR]!r}: choose one of {', '.join(_CHOICES)}")
    if choice == "tuned":
        _young, middle, old = gc.get_threshold()
        gc.set_threshold(YOUNG_THRESHOLD, middle, old)
        atexit.register(gc.freeze)
    return choice
