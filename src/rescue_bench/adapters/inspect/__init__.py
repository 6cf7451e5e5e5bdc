"""RESCUE-Bench inside inspect_ai (extra ``inspect``): ``inspect eval rescue_bench/itp --model openai/M``.

:mod:`.tasks` makes one inspect task per registered task (found by inspect through the ``inspect_ai`` entry
point, :mod:`._registry`), :mod:`.scoring` holds the scorer and corpus metric that call our own parser,
scorer, judge rubric and metrics, and :mod:`.logs` turns an inspect log back into a run directory.
"""
