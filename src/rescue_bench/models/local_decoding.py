"""Decoding for the in-process llama.cpp model: schema-constrained, greedy, and fast on a small CPU.

* :func:`grammar_for` turns a request's JSON schema into a GBNF grammar, after :func:`tighten` made it
  stricter (integer ranges as enums, capped free text, one batch item per id, in order), without optional
  whitespace.
* :class:`GrammarConstraint` applies that grammar to the likeliest tokens only. llama.cpp's own sampler
  checks all 262k tokens of Gemma's vocabulary at every step (about 50 ms, four times the forward pass);
  checking the best token first, then the ``top_k`` best, and the whole vocabulary only when none fits gives
  the same greedy choice for a fraction of the cost.
* :class:`Decoder` owns the model's KV cache. It keeps the longest common token prefix of consecutive prompts
  (the shared instructions), and it jumps over text the grammar forces (JSON keys, punctuation, the rest of
  an id): that text is evaluated in one batch, like prompt text, instead of one forward pass per token. In
  the tasks' replies most tokens are forced (46 of 72 in an ITP reply), and a forward pass costs the same
  whether its token is forced or not; an ITP request went from 3.0 s to 1.7 s of CPU time. A forced run is
  split into tokens by the tokenizer, and the split can differ from the one the model would have sampled;
  the run's last token is left to the model so that it can merge the run with what follows (``","``
  rather than ``"`` then ``,``).

Prompt-lookup speculation was tried as well and made decoding slower here: verifying a drafted token needs
the output projection over Gemma's 262k-token vocabulary, which is most of the cost of a decoding step.
"""

from __future__ import annotations

import ctypes
import json
import logging
import re
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, ValidationError

from rescue_bench.models import llama_adapter
from rescue_bench.models.base import ResponseFormat
from rescue_bench.records import Json

log = logging.getLogger(__name__)

MAX_INTEGER_ENUM: Final = 200
"""Integer ranges up to this size are spelt out as enums so the grammar enforces them."""
SAMPLING_TOP_K: Final = 40
_SPACE_RULE = re.compile(r"^space ::= .*$", re.MULTILINE)
_BYTE_TOKEN = re.compile(r"<0x[0-9A-F]{2}>")
_BYTE_LEVEL_LEADS = frozenset(chr(byte) for byte in range(0xC2, 0x100))
"""How a byte-level BPE vocabulary spells the tokens of UTF-8 lead bytes 0xC2-0xFF: GPT-2's byte-to-character
map sends each of these bytes to the character of the same code point."""
_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


class _Node(BaseModel):
    """The keywords of one JSON-schema node that :func:`tighten` reads, with the types JSON Schema gives them.

    The node itself stays the dict it is, with every keyword kept as written; this is how the rules read it.
    A node whose keywords have other types (``"minimum": "0"``) is not one these rules can prove anything
    about, and is left as written."""

    model_config = ConfigDict(frozen=True, strict=True)  # no "0" read as 0; other keywords are not read

    type: str | list[str] | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    maxLength: int | None = None
    minItems: int | None = None
    maxItems: int | None = None
    enum: list[Json] | None = None
    items: _Node | bool | list[Json] | None = None
    properties: dict[str, _Node | bool] | None = None
    """Subschemas; ``true`` and ``false`` are schemas too."""

    @property
    def types(self) -> set[str | None]:
        return set(self.type) if isinstance(self.type, list) else {self.type}

    def item_ids(self) -> list[Json]:
        """The ``id`` enum of this array's objects (``[]`` when they have none)."""
        match self.items:
            case _Node(properties={"id": _Node(enum=[*ids])}):
                return ids
        return []


def tighten(schema: Json, max_string_length: int | None = None) -> Json:
    """A stricter copy of a JSON schema for the grammar; every value it admits is valid under the original.

    * small bounded integer ranges become enums (llama.cpp's converter ignores ``minimum``/``maximum``);
    * free-text strings get ``maxLength`` at most ``max_string_length`` (the local model's budget);
    * an array of exactly as many objects as its items' ``id`` enum has values becomes a tuple with one id per
      position, in order, so a batch reply can neither repeat nor skip an item.

    The schema is any request's (a task's answer, a judge's verdict, an annotation draft, a caller's own), so
    every node is walked, whatever its keywords.

    >>> tighten({"properties": {"n": {"type": "integer", "minimum": 0, "maximum": 3}}})
    {'properties': {'n': {'enum': [0, 1, 2, 3]}}}
    >>> tighten({"type": ["integer", "null"], "minimum": 1, "maximum": 2})
    {'enum': [1, 2, None]}
    >>> tighten({"type": "string", "maxLength": 200}, 60)
    {'type': 'string', 'maxLength': 60}
    >>> item = {"type": "object", "properties": {"id": {"enum": ["c1", "c2"]}}}
    >>> [i["properties"]["id"] for i in tighten({"items": item, "minItems": 2, "maxItems": 2})["items"]]
    [{'const': 'c1'}, {'const': 'c2'}]
    >>> tighten({"type": "integer", "minimum": "0", "maximum": 3})
    {'type': 'integer', 'minimum': '0', 'maximum': 3}
    >>> tighten({"items": {"properties": {"id": {"enum": ["c1"]}, "x": True}}, "minItems": 1, "maxItems": 1})
    {'items': [{'properties': {'id': {'const': 'c1'}, 'x': True}}]}
    """
    if isinstance(schema, list):
        return [tighten(item, max_string_length) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: tighten(value, max_string_length) for key, value in schema.items()}
    try:
        node = _Node.model_validate(out)
    except ValidationError:
        return out
    types = node.types
    if "integer" in types and types <= {"integer", "null"}:
        return _integer_enum(out, node)
    if types == {"string"} and not {"enum", "const", "pattern", "format"} & out.keys() and max_string_length:
        return {**out, "maxLength": min(node.maxLength or max_string_length, max_string_length)}
    return _ordered_ids(out, node)


def _integer_enum(out: dict[str, Json], node: _Node) -> dict[str, Json]:
    low, high = node.minimum, node.maximum
    if "enum" in out or not (isinstance(low, int) and isinstance(high, int)):
        return out
    if not 0 <= high - low < MAX_INTEGER_ENUM:
        return out
    rest = {k: v for k, v in out.items() if k not in ("type", "minimum", "maximum")}
    return {**rest, "enum": [*range(low, high + 1), *([None] if "null" in node.types else [])]}


def _ordered_ids(out: dict[str, Json], node: _Node) -> dict[str, Json]:
    ids = node.item_ids()
    items = out["items"] if ids and node.minItems == node.maxItems == len(ids) else None
    if not isinstance(items, dict) or not isinstance(props := items["properties"], dict):
        return out
    tuple_items = [{**items, "properties": {**props, "id": {"const": value}}} for value in ids]
    return {**{k: v for k, v in out.items() if k not in ("minItems", "maxItems")}, "items": tuple_items}


def grammar_for(
    schema: dict[str, Json], response_format: ResponseFormat, max_string_length: int | None = None
) -> str | None:
    """GBNF text for the requested output format; ``None`` means unconstrained.

    JSON is generated without optional whitespace (a quarter fewer tokens). A schema the converter cannot
    handle falls back to plain JSON (logged), so the reply still parses.
    """
    from llama_cpp.llama_grammar import JSON_GBNF, json_schema_to_gbnf

    if response_format == "text":
        return None
    if response_format == "json_object" or not schema:
        return str(JSON_GBNF)
    try:
        gbnf = str(json_schema_to_gbnf(json.dumps(tighten(schema, max_string_length))))
    except Exception as exc:  # the converter raises bare Exceptions and KeyErrors on unsupported keywords
        log.warning("JSON schema not convertible to a grammar (%s); constraining to plain JSON", exc)
        return str(JSON_GBNF)
    return _SPACE_RULE.sub('space ::= ""', gbnf)


@dataclass(frozen=True)
class CharProbe:
    """Tokens that stand for one character each: every ASCII character, the UTF-8 lead bytes and EOS.

    A lead byte is a ``<0xNN>`` token in a SentencePiece vocabulary with byte fallback (Gemma), and the
    character of code point NN in a byte-level BPE one."""

    ids: npt.NDArray[np.intc]
    chars: dict[int, str]
    """ASCII token id -> its character."""

    @classmethod
    def for_model(cls, llm: Any) -> CharProbe:
        chars: dict[int, str] = {}
        for code in [*range(32, 127), 9, 10, 13]:
            tokens = llm.tokenize(chr(code).encode(), add_bos=False, special=False)
            if len(tokens) == 1:
                chars[int(tokens[0])] = chr(code)
        text = llama_adapter.token_text
        leads = [i for i in range(int(llm.n_vocab())) if _BYTE_TOKEN.fullmatch(text(llm, i) or "")]
        lead_ids = [i for i in leads if int(text(llm, i)[3:5], 16) >= 0xC2]
        if not leads:  # a byte-level BPE vocabulary (GPT-2 style, e.g. SmolLM2): no <0xNN> tokens
            lead_ids = [i for i in range(int(llm.n_vocab())) if text(llm, i) in _BYTE_LEVEL_LEADS]
        ids = np.array(sorted({*chars, *lead_ids, int(llm.token_eos())}), dtype=np.intc)
        return cls(ids, chars)


class GrammarConstraint:
    """A GBNF grammar applied token by token, checking as few vocabulary entries as it can.

    It wraps one llama.cpp grammar sampler: :meth:`accept` advances it by the token the reply took,
    :meth:`best` is the greedy choice among the tokens it allows, :meth:`candidates` the allowed tokens among
    the likeliest (for sampling). A token the grammar does not allow is never returned, so llama.cpp (which
    aborts the process on such a token) is never asked to accept one.
    """

    def __init__(
        self, lib: Any, vocab: Any, gbnf: str, *, probe: CharProbe, eos: int, top_k: int = 1024
    ) -> None:
        self._lib = lib
        self._sampler = lib.llama_sampler_init_grammar(vocab, gbnf.encode(), b"root")
        if not self._sampler:
            raise ValueError("llama.cpp could not parse the grammar")
        self._probe, self._eos, self._top_k = probe, eos, top_k
        self.full_checks = 0

    def close(self) -> None:
        if self._sampler:
            self._lib.llama_sampler_free(self._sampler)
            self._sampler = None

    def accept(self, token: int) -> None:
        self._lib.llama_sampler_accept(self._sampler, token)

    def forced_text(self, limit: int) -> str:
        """The next characters the grammar allows no alternative to (JSON keys, punctuation, the rest of an
        id), at most ``limit``. The grammar itself is not advanced.

        The next character is forced when exactly one probe token is allowed and it is an ASCII character:
        every token starts with some character, so no other token can be allowed then. UTF-8 lead bytes and
        end-of-sequence are probed too, so a non-ASCII or finishing alternative is never cut off.
        """
        forced: list[str] = []
        ids = self._probe.ids
        scout = self._lib.llama_sampler_clone(self._sampler)
        try:
            while len(forced) < limit:
                kept = _apply(self._lib, scout, ids, np.zeros(len(ids), dtype=np.single))
                if kept.size != 1 or int(kept["id"][0]) not in self._probe.chars:
                    break
                token = int(kept["id"][0])
                self._lib.llama_sampler_accept(scout, token)
                forced.append(self._probe.chars[token])
        finally:
            self._lib.llama_sampler_free(scout)
        return "".join(forced)

    def finished(self) -> bool:
        """Whether the grammar is complete: end-of-sequence is the only probe token it allows."""
        kept = self._allowed(self._probe.ids, np.zeros(len(self._probe.ids), dtype=np.single))
        return kept.size == 1 and int(kept["id"][0]) == self._eos

    def best(self, logits: npt.NDArray[np.single]) -> int | None:
        """The highest-scoring token the grammar allows; ``None`` if it allows none."""
        top = int(np.argmax(logits))
        if self._allowed(np.array([top]), logits[[top]]).size:
            return top
        kept = self.candidates(logits)
        return int(kept["id"][np.argmax(kept["logit"])]) if kept.size else None

    def candidates(self, logits: npt.NDArray[np.single]) -> npt.NDArray[Any]:
        """Allowed tokens (``id``, ``logit``) among the ``top_k`` likeliest plus end-of-sequence, or among all
        tokens when none of those is allowed."""
        k = min(self._top_k, len(logits) - 1)
        ids = np.unique(np.append(np.argpartition(logits, -k)[-k:], self._eos))
        kept = self._allowed(ids, logits[ids])
        if not kept.size:
            self.full_checks += 1
            kept = self._allowed(np.arange(len(logits)), logits)
        return kept

    def _allowed(self, ids: npt.NDArray[Any], logits: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return _apply(self._lib, self._sampler, ids, logits)


def _apply(lib: Any, sampler: Any, ids: npt.NDArray[Any], logits: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The (``id``, ``logit``) pairs that ``sampler`` leaves finite."""
    data = np.zeros(len(ids), dtype=_TOKEN_DATA)
    data["id"], data["logit"] = ids, logits
    array = lib.llama_token_data_array(
        data=data.ctypes.data_as(ctypes.POINTER(lib.llama_token_data)),
        size=len(ids),
        selected=-1,
        sorted=False,
    )
    lib.llama_sampler_apply(sampler, ctypes.byref(array))
    kept: npt.NDArray[Any] = data[np.isfinite(data["logit"])]
    return kept


@dataclass(frozen=True, slots=True)
class Decoded:
    """One decoded reply and what it cost."""

    text: str
    finish_reason: str
    """``stop`` (end of sequence; with a grammar, the JSON is complete) or ``length`` (hit max_tokens)."""
    prompt_tokens: int
    completion_tokens: int
    reused_tokens: int
    """Prompt tokens whose KV cache was kept from the previous request."""
    forced_tokens: int
    """Reply tokens the grammar dictated, evaluated in one batch instead of sampled one by one."""
    full_checks: int


class Decoder:
    """Decoding on one ``llama_cpp.Llama``: prefix re-use, forced-text jumps, greedy or sampled choices.

    It drives llama-cpp-python's context and batch objects directly, through
    :mod:`rescue_bench.models.llama_adapter`, because ``create_completion`` re-evaluates every token one by
    one and runs llama.cpp's full-vocabulary grammar check at each step.
    """

    def __init__(self, lib: Any, llm: Any) -> None:
        self._lib, self._llm = lib, llm
        self._vocab = llama_adapter.vocab(llm)
        self._n_vocab = int(llm.n_vocab())
        self.probe = CharProbe.for_model(llm)
        self._cached: list[int] = []
        """Tokens whose keys and values are in the context's KV cache, in position order."""

    def generate(
        self,
        prompt: list[int],
        *,
        max_tokens: int,
        constraint: GrammarConstraint | None,
        temperature: float = 0.0,
        rng: np.random.Generator | None = None,
    ) -> Decoded:
        reused = self._keep_prefix(prompt)
        logits = self._eval(prompt[reused:])
        out: list[int] = []
        forced_count = 0
        finish = "length"
        while len(out) < max_tokens:
            if constraint:
                # The last token of a forced run is left to the model, so that it can merge the forced
                # characters with what follows (`","` rather than `"` then `,`), as it would unconstrained.
                forced = self._tokens(constraint.forced_text(4 * (max_tokens - len(out))))[:-1]
                if forced:
                    forced = forced[: max_tokens - len(out)]
                    for forced_token in forced:
                        constraint.accept(forced_token)
                    out.extend(forced)
                    forced_count += len(forced)
                    logits = self._eval(forced)
                    continue
                if constraint.finished():
                    finish = "stop"
                    break
            token = self._choose(logits, constraint, temperature, rng)
            if token is None or self._lib.llama_vocab_is_eog(self._vocab, token):
                finish = "stop"
                break
            out.append(token)
            if constraint:
                constraint.accept(token)
            logits = self._eval([token])
        text = self._llm.detokenize(out, prev_tokens=prompt).decode("utf-8", errors="replace")
        checks = constraint.full_checks if constraint else 0
        return Decoded(text, finish, len(prompt), len(out), reused, forced_count, checks)

    def _tokens(self, text: str) -> list[int]:
        if not text:
            return []
        return [int(t) for t in self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)]

    def _choose(
        self,
        logits: npt.NDArray[np.single],
        constraint: GrammarConstraint | None,
        temperature: float,
        rng: np.random.Generator | None,
    ) -> int | None:
        if temperature <= 0.0 or rng is None:
            return constraint.best(logits) if constraint else int(np.argmax(logits))
        if constraint:
            kept = constraint.candidates(logits)
            ids, scores = kept["id"], kept["logit"].astype(np.float64)
        else:
            ids, scores = np.arange(len(logits)), logits.astype(np.float64)
        if not ids.size:
            return None
        top = np.argsort(scores)[-SAMPLING_TOP_K:]
        weights = np.exp((scores[top] - scores[top].max()) / temperature)
        return int(ids[top][rng.choice(len(top), p=weights / weights.sum())])

    def _keep_prefix(self, prompt: list[int]) -> int:
        """Keep the cached KV of the longest common prefix; the last prompt token is always evaluated again,
        for fresh logits."""
        common = 0
        for a, b in zip(self._cached, prompt[:-1], strict=False):
            if a != b:
                break
            common += 1
        if common < len(self._cached):
            llama_adapter.forget_from(self._llm, common)
            del self._cached[common:]
        return common

    def _eval(self, tokens: list[int]) -> npt.NDArray[np.single]:
        """Run ``tokens`` through the model after the cached ones; the logits after the last one."""
        llama_adapter.evaluate(self._llm, tokens, len(self._cached))
        self._cached.extend(tokens)
        return llama_adapter.last_logits(self._llm, self._n_vocab)
