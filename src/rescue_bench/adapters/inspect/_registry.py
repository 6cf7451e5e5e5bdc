"""The ``inspect_ai`` entry point: importing this module registers the tasks ``rescue_bench/<task>``."""

from rescue_bench.adapters.inspect.tasks import er, itp, rpp, ssp, stp, vp

__all__ = ["er", "itp", "rpp", "ssp", "stp", "vp"]
