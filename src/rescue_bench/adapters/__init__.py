"""Bridges to other harnesses and result formats: inspect_ai, lm-eval, Every Eval Ever, the Hugging Face Hub.

Each sits at the report layer: it plans instances with our own tasks (:mod:`rescue_bench.adapters.plan`),
scores with our own parsers, scorers and metrics, and reads or writes run directories only through
:mod:`rescue_bench.adapters.rundata`. The third-party libraries are optional extras, imported only by the
modules that need them.
"""
