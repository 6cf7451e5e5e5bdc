"""Checks of a run spec's model that need its provider, made before anything is written or asked.

A study runs its models side by side: a model whose provider cannot be built (an unknown prefix, a missing
key, ``base_url`` given to a baseline) or that cannot go through the Batch API it asks for must stop the
study before any other model is asked, not after they ran (:func:`check_model`, called by the run operation's
:func:`rescue_bench.evaluation.run.prepare` for a single run and for every run of a study).
"""

from __future__ import annotations

from rescue_bench.engine.batch_plan import batchable
from rescue_bench.engine.run import make_model
from rescue_bench.spec import RunSpec


def check_model(spec: RunSpec) -> None:
    """Build the spec's provider and check it can run the spec; a one-line :class:`ConfigError` if not.

    The provider is dropped unused: building one opens no connection (an endpoint's SDK client is made on
    its first request) and loads no model (a local model is loaded by ``prepare``).
    """
    batchable(spec, make_model(spec))
