"""The ``inspect_ai`` entry point: importing this module registers ``rescue_bench/<task>`` for every task."""

from rescue_bench.adapters.inspect.tasks import FACTORIES

__all__ = ["FACTORIES"]
