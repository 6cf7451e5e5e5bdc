"""``local/gemma-3-270m``, ``local/smollm2-135m``, ``local/<path.gguf>``: in-process llama.cpp models with
constrained output.

The embedded models are shipped on PyPI (:mod:`rescue_bench.models.local_files`): the Gemma 3 270M base GGUF
and the SmolLM2-135M-Instruct GGUF. A model is loaded once per provider. Inference runs in one worker thread
shared by every in-process model (:data:`LLAMA_WORKER`), one request at a time (llama.cpp holds one KV cache),
so the asyncio engine can await it.

Two choices here, and the decoding in :mod:`rescue_bench.models.local_decoding`, make the model usable and
fast enough for the demo run on two cores:

* **Prompt format** (:mod:`rescue_bench.models.local_prompt`). The Gemma GGUF has no chat template, and
  llama-cpp-python's ``gemma`` chat format silently drops the system message, which holds the task
  instructions (the tasks put everything fixed there). Its messages are therefore laid out as a plain text
  document ending in an answer cue (:func:`render_prompt`), which is what a base model continues best; in a
  trial, turn markers made the model echo the item ids into every field. A GGUF that carries a chat template
  (an instruct model such as SmolLM2, trained on ChatML) gets its messages through that template instead.
  Message text is tokenised without special tokens either way, so transcript text cannot inject control
  tokens. Instructions come first, so consecutive requests share a long token prefix whose KV cache is
  re-used.
* **Constrained output.** The request's JSON schema becomes a grammar, made stricter but never looser (see
  :func:`~rescue_bench.models.local_decoding.tighten`; free text is capped at ``max_string_length``
  characters). With ``response_format="json_object"`` any JSON is allowed; with ``"text"`` nothing is
  constrained. A reply that hits ``max_tokens`` comes back with ``finish_reason="length"`` and its partial
  text, which does not parse.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from rescue_bench.errors import DependencyError, ProviderError
from rescue_bench.models import llama_adapter
from rescue_bench.models.base import Generation
from rescue_bench.models.local_capabilities import LOCAL_CAPABILITIES
from rescue_bench.models.local_decoding import Decoded, Decoder, GrammarConstraint, grammar_for
from rescue_bench.models.local_files import (
    GEMMA,
    SMOLLM2,
    custom_path,
    default_model_path,
    default_model_sha256,
    models_dir,
    sha256_file,
    smollm2_path,
    smollm2_record,
)
from rescue_bench.models.local_prompt import (
    ANSWER_CUE,
    PLAIN_FORMAT,
    ChatTemplate,
    Segment,
    chat_template,
    plain_layout,
    render_prompt,
    tokenize,
)
from rescue_bench.records import Instance, Json, Reply, Request, Usage

__all__ = [
    "ANSWER_CUE",
    "DEFAULT_MODEL",
    "LocalProvider",
    "LocalStats",
    "default_model_path",
    "default_model_sha256",
    "models_dir",
    "render_prompt",
]

DEFAULT_MODEL: Final = GEMMA
"""The embedded model a bare ``local/`` name means in messages (the demo's model is the Makefile's)."""
PROMPT_FORMAT: Final = PLAIN_FORMAT
"""Version of the plain prompt layout and the decoding rules; part of the provider identity (and cache key).
A GGUF with a chat template records its template's format name instead."""
DEFAULT_MAX_STRING_LENGTH: Final = 64
"""Cap on free-text fields (reasons, emotion phrases, viewpoints) in the grammar: generation dominates the
local model's time, and a 270M base model says nothing useful in longer strings."""
DECODE_THREADS: Final = None
"""Threads for one-token forward passes (``None``: the cores this process may use, as for prompts).
Decoding is compute-bound on a few cores: ``benchmarks/bench_local.py`` compares one decoding thread with two
(figures in docs/local-model.md). OpenMP's wait policy (``OMP_WAIT_POLICY``) is left to the user: its default
spins briefly before sleeping, which two threads need (waiting passively is slower); ``PASSIVE`` suits cores
shared with other work."""
LLAMA_WORKER: Final = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rescue-bench-llama")
"""The one thread that runs every in-process model of this process (each provider keeps its own model and KV
cache). A study runs its local model and its local judges at the same time; on two cores, two llama.cpp
models computing at once each get half the cores they were tuned for and their threads wait on each other,
so together they finished later than one after the other. The default executor stays free for others."""
DEFAULT_N_CTX: Final = 8192
"""Initial context window; grown (by reloading, well under a second) when a request needs more."""


@dataclass
class LocalStats:
    """Counters for reports and tests: KV cache re-use, forced tokens, slow grammar checks."""

    requests: int = 0
    prompt_tokens: int = 0
    reused_prompt_tokens: int = 0
    completion_tokens: int = 0
    forced_tokens: int = 0
    full_vocab_checks: int = 0
    seconds: float = 0.0

    def add(self, gen: Decoded, seconds: float) -> None:
        self.requests += 1
        self.prompt_tokens += gen.prompt_tokens
        self.reused_prompt_tokens += gen.reused_tokens
        self.completion_tokens += gen.completion_tokens
        self.forced_tokens += gen.forced_tokens
        self.full_vocab_checks += gen.full_checks
        self.seconds += seconds


class LocalProvider:
    """A GGUF model run in-process by llama.cpp.

    Args:
        model: ``gemma-3-270m`` (the embedded model) or the path of a ``.gguf`` file.
        n_ctx: initial context window (default 8192; grown when a prompt needs more).
        n_threads: CPU threads for prompt evaluation (default: the cores this process may use).
        decode_threads: CPU threads for generating a token (default: as ``n_threads``; see
            :data:`DECODE_THREADS`).
        seed: sampling seed when the request's parameters give none.
        top_k_grammar: how many of the likeliest tokens are checked against the grammar first.
        max_string_length: cap on free-text fields in the grammar (``None``: the schema's own limits).
    """

    max_concurrency = 1
    """llama.cpp answers one request at a time; more in flight only wait in this provider's queue."""
    capabilities = LOCAL_CAPABILITIES
    ceiling = 1024
    """The output cap of a request when the run gives no ``max_tokens``: below every task's own cap, which a
    small model in this process rarely needs and would spend minutes on when it rambles."""

    def __init__(
        self,
        model: str,
        *,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        decode_threads: int | None = DECODE_THREADS,
        seed: int = 0,
        top_k_grammar: int = 1024,
        max_string_length: int | None = DEFAULT_MAX_STRING_LENGTH,
    ) -> None:
        try:
            import llama_cpp
        except ImportError:
            raise DependencyError.missing("llama-cpp-python", "local") from None
        self._lib = llama_cpp
        self.model = model
        self.name = f"local/{model}"
        # Fails now, not mid-run, when an embedded model's package is missing.
        self._path: Path | None = None
        if model == GEMMA:
            default_model_sha256()
        else:
            self._path = smollm2_record()[0] if model == SMOLLM2 else custom_path(model)
        self._template: ChatTemplate | None = None
        self._template_read = model == GEMMA  # a base model's GGUF without a template
        self._n_ctx = n_ctx or DEFAULT_N_CTX
        self._n_threads = n_threads or _usable_cores()
        self._decode_threads = decode_threads or self._n_threads
        self._seed, self._top_k_grammar = seed, top_k_grammar
        self._max_string_length = max_string_length
        self._llm: Any = None
        self._decoder: Decoder | None = None
        self._sha256: str | None = None
        self._grammars: dict[tuple[str, str], str | None] = {}
        self._executor = LLAMA_WORKER
        self.stats = LocalStats()

    def identity(self) -> dict[str, Json]:
        if self._sha256 is None:
            self._sha256 = self._file_sha256()
        template = self._chat_template()
        return {
            "provider": "local",
            "model": self.model,
            "base_url": None,
            "sha256": self._sha256,
            "runtime": f"llama-cpp-python {self._lib.__version__}",
            "prompt_format": PROMPT_FORMAT if template is None else template.format_name,
            "max_string_length": self._max_string_length,
            # llama.cpp's sums run in another order with another thread count, and a greedy answer can change
            # with them (STP's MRR on the demo: 37.96 with one decoding thread, 40.74 with two): a cached or
            # resumed answer must come from the same counts.
            "threads": self._n_threads,
            "decode_threads": self._decode_threads,
        }

    def prepare(self, instances: Sequence[Instance]) -> None:
        """Nothing to prepare: the model loads on the first request ."""

    def _file_sha256(self) -> str:
        if self._path is None:
            return default_model_sha256()
        if self.model == SMOLLM2:
            return smollm2_path()[1]  # checked against the package's RECORD
        return sha256_file(self._path)

    def _chat_template(self) -> ChatTemplate | None:
        """The GGUF's chat template; ``None`` for a base model.

        Read once, from the loaded model (a vocabulary-only load would log a context warning), before the
        first request is handed to the worker thread, which then finds the model loaded."""
        if not self._template_read:
            self._load(self._n_ctx)
            self._template = chat_template(self._llm)
            self._template_read = True
        return self._template

    def layout(self, messages: Sequence[dict[str, Json]]) -> list[Segment]:
        """The prompt's pieces: the chat template's rendering, or the plain document of a base model.

        Raises ``ValueError`` for content the model cannot read (images, video)."""
        template = self._chat_template()
        return plain_layout(messages) if template is None else template.segments(messages)

    async def complete(self, request: Request, params: Generation) -> Reply:
        try:
            prompt = self.layout(request.messages)
        except ValueError as exc:
            return Reply.failure(f"{self.name}: {exc}")
        key = (json.dumps(request.response_schema, sort_keys=True), params.response_format)
        if key not in self._grammars:
            self._grammars[key] = grammar_for(
                request.response_schema, params.response_format, self._max_string_length
            )
        given = params.max_tokens
        max_tokens = max(1, min(request.max_tokens, self.ceiling) if given is None else given)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, self._generate, prompt, self._grammars[key], max_tokens, params
        )

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._unload)

    def _unload(self) -> None:
        self._decoder = None
        if self._llm is not None:
            self._llm.close()
            self._llm = None

    def _load(self, n_ctx: int) -> None:
        """Load the model with a context of at least ``n_ctx`` tokens (runs in the worker thread)."""
        if self._llm is not None and self._llm.n_ctx() >= n_ctx:
            return
        self._unload()
        path = self._path or default_model_path()
        try:
            # swa_full keeps the whole sliding-window cache, which prefix re-use needs; flash attention
            # saved 17% of the CPU time of a 3,800-token prompt.
            with llama_adapter.quiet_swa_notice(self._lib):
                self._llm = self._lib.Llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=self._decode_threads,
                    n_threads_batch=self._n_threads,
                    seed=self._seed,
                    verbose=False,
                    swa_full=True,
                    flash_attn=True,
                )
        except (ValueError, RuntimeError) as exc:
            raise ProviderError(f"{self.name}: cannot load {path}: {exc}") from None
        if llama_adapter.fast_path():
            self._decoder = Decoder(self._lib, self._llm)

    def _generate(
        self, prompt: list[Segment], gbnf: str | None, max_tokens: int, params: Generation
    ) -> Reply:
        started = time.perf_counter()
        self._load(self._n_ctx)
        template = self._chat_template()
        tokens = tokenize(self._llm, prompt, "" if template is None else template.bos_token)
        needed = len(tokens) + max_tokens + 1
        limit = self._context_limit(needed)
        if needed > limit:
            return Reply.failure(
                f"{self.name}: a prompt of {len(tokens)} tokens plus max_tokens={max_tokens} exceeds the "
                f"model's context of {limit} tokens (use a smaller --context-size)"
            )
        if needed > self._n_ctx:
            self._n_ctx = min(limit, max(needed, 2 * self._n_ctx))
        self._load(self._n_ctx)
        seed = self._seed if params.seed is None else params.seed
        if self._decoder is None:
            return self._generate_plain(tokens, gbnf, max_tokens, params.temperature, seed, started)
        constraint = None
        if gbnf:
            constraint = GrammarConstraint(
                self._lib,
                llama_adapter.vocab(self._llm),
                gbnf,
                probe=self._decoder.probe,
                eos=self._llm.token_eos(),
                top_k=self._top_k_grammar,
            )
        try:
            gen = self._decoder.generate(
                tokens,
                max_tokens=max_tokens,
                constraint=constraint,
                temperature=params.temperature,
                rng=np.random.default_rng(seed),
            )
        finally:
            if constraint:
                constraint.close()
        latency = time.perf_counter() - started
        self.stats.add(gen, latency)
        usage = Usage(gen.prompt_tokens, gen.completion_tokens)
        return Reply(text=gen.text, usage=usage, latency=latency, finish_reason=gen.finish_reason)

    def _generate_plain(
        self,
        tokens: list[int],
        gbnf: str | None,
        max_tokens: int,
        temperature: float,
        seed: int,
        started: float,
    ) -> Reply:
        """llama-cpp-python's public ``create_completion``: the path for versions the adapter was not tested
        with (same prompt and grammar, no prefix re-use or forced-text jumps, so slower)."""
        from llama_cpp.llama_grammar import LlamaGrammar  # the optional extra, as in grammar_for

        grammar = None if gbnf is None else LlamaGrammar.from_string(gbnf, verbose=False)
        out = self._llm.create_completion(
            tokens, max_tokens=max_tokens, temperature=temperature, seed=seed, grammar=grammar
        )
        choice, usage = out["choices"][0], out["usage"]
        latency = time.perf_counter() - started
        return Reply(
            text=choice["text"],
            usage=Usage(int(usage["prompt_tokens"]), int(usage["completion_tokens"])),
            latency=latency,
            finish_reason=choice["finish_reason"],
        )

    def _context_limit(self, default: int) -> int:
        """The context length the model was trained for (from the GGUF metadata)."""
        meta = self._llm.metadata
        return int(meta.get(f"{meta.get('general.architecture')}.context_length", default))


def _usable_cores() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else os.cpu_count() or 1
