"""rescue-bench: evaluate models on RESCUE-Bench and build relation-aware data."""

__version__ = "0.1.0"
