"""Running a spec end to end: checks, the engine's session, the judge pass and the final status
(:mod:`rescue_bench.evaluation.run`), and what a run needs besides its model (:mod:`.setup`)."""
