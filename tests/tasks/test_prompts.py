"""Shared prompt pieces: answer schemas that grammar converters accept, mode and context sentences."""

from __future__ import annotations

from typing import Any

import pytest

from rescue_bench.records import Instance
from rescue_bench.tasks import prompts
from rescue_bench.tasks.base import MODES

# JSON-schema keywords that llama.cpp's schema-to-grammar conversion and OpenAI structured outputs both take.
SIMPLE_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "minItems", "maxItems",
    "maxLength", "minimum", "maximum",
}  # fmt: skip


def keywords(schema: Any) -> set[str]:
    """Every keyword used anywhere in a schema (property names are not keywords)."""
    if not isinstance(schema, dict):
        return set()
    found = set(schema)
    for key, value in schema.items():
        if key == "properties":
            for sub in value.values():
                found |= keywords(sub)
        elif key == "items":
            found |= keywords(value)
    return found


def conforms(value: Any, schema: dict[str, Any]) -> bool:
    """A small validator for exactly the keywords above."""
    kind = schema.get("type")
    if "enum" in schema and value not in schema["enum"]:
        return False
    if kind == "string":
        return isinstance(value, str) and len(value) <= schema.get("maxLength", len(value))
    if kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
        return ok and schema.get("minimum", value) <= value <= schema.get("maximum", value)
    if kind == "array":
        if not isinstance(value, list) or not schema.get("minItems", 0) <= len(value) <= schema.get(
            "maxItems", 99
        ):
            return False
        return all(conforms(v, schema["items"]) for v in value)
    if kind == "object":
        props = schema["properties"]
        if not isinstance(value, dict) or not set(schema.get("required", ())) <= set(value):
            return False
        if schema.get("additionalProperties") is False and not set(value) <= set(props):
            return False
        return all(conforms(v, props[k]) for k, v in value.items() if k in props)
    raise AssertionError(f"unexpected schema type {kind!r}")


def test_answer_schema_has_one_entry_per_opaque_id_and_a_bounded_reason() -> None:
    schema = prompts.answer_schema(("c1", "c2"), {"should_speak": {"type": "string", "enum": ["yes", "no"]}})
    assert keywords(schema) <= SIMPLE_KEYWORDS
    good = {"predictions": [{"id": "c1", "should_speak": "yes", "reason": "r"},
                            {"id": "c2", "should_speak": "no", "reason": "r"}]}  # fmt: skip
    assert conforms(good, schema)
    assert not conforms({"predictions": good["predictions"][:1]}, schema)
    too_long = {"predictions": [{**good["predictions"][0], "reason": "x" * 201}, good["predictions"][1]]}
    assert not conforms(too_long, schema)
    assert not conforms({"predictions": [{**p, "id": "c3"} for p in good["predictions"]]}, schema)


def test_ranking_field_never_asks_for_more_labels_than_exist() -> None:
    assert prompts.ranking_field(("a", "b"))["maxItems"] == 2
    assert prompts.ranking_field(("a", "b", "c", "d"))["maxItems"] == 3


def test_template_hash_changes_with_any_part() -> None:
    base = prompts.template_hash("system", "shape")
    assert base == prompts.template_hash("system", "shape")
    assert base != prompts.template_hash("system", "shape ")
    assert base != prompts.template_hash("systems", "hape")


def test_taxonomy_text_covers_every_definition() -> None:
    text = prompts.taxonomy_text()
    assert "cross_generational_coalition" in text and "goal_align" in text and "not an uncertainty" in text


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_has_guidance_and_a_line_format(mode: str) -> None:
    assert prompts.MODE_GUIDANCE[mode].startswith(f"Mode: {mode}.")  # type: ignore[index]
    text = prompts.line_format(mode)  # type: ignore[arg-type]
    assert ("tone:" in text) is (mode in ("audio", "audiovisual"))
    assert ("posture:" in text) is (mode in ("visual", "audiovisual"))


@pytest.mark.parametrize(
    ("size", "sentence"),
    [(-1, "Each item shows every row of the session before X."), (0, "No rows before X are shown."),
     (5, "Each item shows at most the 5 rows before X.")],
)  # fmt: skip
def test_context_sentence_states_the_window(size: int, sentence: str) -> None:
    assert prompts.context_sentence(size, "X") == sentence


def test_batches_must_be_one_task_and_one_sample() -> None:
    def inst(sample: str, task: str = "itp") -> Instance:
        return Instance(f"{sample}::{task}::1", task, sample, "couple", 1, "no")

    prompts.check_batch([inst("a"), inst("a")], "itp")
    for bad in ([], [inst("a"), inst("b")], [inst("a", "rpp")]):
        with pytest.raises(ValueError, match="itp"):
            prompts.check_batch(bad, "itp")
