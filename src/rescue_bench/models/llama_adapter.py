"""Every use of llama-cpp-python internals, in one place, behind a version check.

The fast decoder (:mod:`rescue_bench.models.local_decoding`) drives llama.cpp's context, batch and vocabulary
objects directly (``Llama._ctx``, ``Llama._batch``, ``Llama._model``), because the public
``create_completion`` evaluates every token one by one and checks all 262k tokens of Gemma's vocabulary
against the grammar at each step. Those attributes are private to llama-cpp-python and may change in any
release, so they are used only when the installed version lies in :data:`TESTED_VERSIONS` (read with
``importlib.metadata.version``). With any other version :func:`fast_path` is false and the local provider
takes the plain path, ``Llama.create_completion`` with a ``LlamaGrammar``: public API, same prompt and
grammar, several times slower.

Nothing here changes process-wide state for longer than a call: :func:`quiet_swa_notice` filters llama.cpp's
log only while a model loads, then puts llama-cpp-python's own handler back.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

DISTRIBUTION = "llama_cpp_python"
TESTED_VERSIONS = ((0, 3, 0), (0, 4, 0))
"""Versions whose internals the fast decoder was written against: at least the first, below the second."""


def installed_version() -> tuple[int, ...] | None:
    """The installed llama-cpp-python version as numbers (``None`` if it is not installed as a package)."""
    try:
        text = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


@cache
def fast_path() -> bool:
    """Whether the installed llama-cpp-python is one whose internals the fast decoder may use.

    >>> isinstance(fast_path(), bool)
    True
    """
    version = installed_version()
    low, high = TESTED_VERSIONS
    return version is not None and low <= version < high


def vocab(llm: Any) -> Any:
    """The model's ``llama_vocab`` pointer (for grammar samplers and end-of-generation checks)."""
    return llm._model.vocab


def token_text(llm: Any, token: int) -> str:
    """The text of one vocabulary entry, as the model file spells it (``<0xC3>`` for a byte token)."""
    return str(llm._model.token_get_text(token))


def forget_from(llm: Any, position: int) -> None:
    """Drop the KV cache from ``position`` on (all sequences)."""
    llm._ctx.kv_cache_seq_rm(-1, position, -1)


def evaluate(llm: Any, tokens: list[int], n_past: int) -> None:
    """Run ``tokens`` through the model after ``n_past`` cached ones, in batches of ``n_batch``."""
    batch, size = llm._batch, int(llm.n_batch)
    for start in range(0, len(tokens), size):
        chunk = tokens[start : start + size]
        batch.set_batch(batch=chunk, n_past=n_past + start, logits_all=False)
        llm._ctx.decode(batch)


def last_logits(llm: Any, n_vocab: int) -> npt.NDArray[np.single]:
    """A copy of the logits after the last evaluated token."""
    pointer = llm._ctx.get_logits_ith(-1)
    return np.ctypeslib.as_array(pointer, shape=(n_vocab,)).copy()


@contextmanager
def quiet_swa_notice(lib: Any) -> Iterator[None]:
    """While a model loads, drop llama.cpp's "using full-size SWA cache" notice (logged at error level on
    every load of a Gemma 3 model with ``swa_full``); every other message goes to llama-cpp-python's handler.

    Outside the tested versions nothing is filtered: the notice then shows on stderr.
    """
    if not fast_path():
        yield
        return
    from llama_cpp import _logger  # the handler to forward to and to put back

    @lib.llama_log_callback  # type: ignore[untyped-decorator]
    def callback(level: int, text: bytes, user_data: Any) -> None:
        if b"full-size SWA cache" not in text:
            _logger.llama_log_callback(level, text, user_data)

    lib.llama_log_set(callback, ctypes.c_void_p(0))
    try:
        yield
    finally:
        lib.llama_log_set(_logger.llama_log_callback, ctypes.c_void_p(0))
