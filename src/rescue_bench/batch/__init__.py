"""The Batch API (OpenAI's Files + Batches, also vLLM's ``run_batch`` format), for providers that declare it.

* :mod:`.asker`: ``run --batch``, the engine session's way of asking through the Batch API (:mod:`.api`:
  submit, poll, collect, re-submit; :mod:`.ledger`: ``batches.jsonl``, so a killed run resumes its batches);
* :mod:`.offline`: ``batch export`` and ``batch import``, a run's requests as a file and its results file
  scored back into the run directory;
* :mod:`.plan`: what a batch asks and each request's Batch API line; :mod:`.results`: the results file read.
"""
