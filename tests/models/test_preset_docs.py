"""The presets' tables in docs/reasoning.md are the ones rendered from the records, and follow them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rescue_bench.models.preset_docs import efforts_table, presets_table, refresh
from rescue_bench.models.presets import PRESETS, SCHEMA_KEEPER

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "reasoning.md"


def test_the_docs_hold_the_tables_generated_from_the_presets() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert refresh(text) == text, "docs/reasoning.md differs from the presets: run scripts/gen_docs.py"
    assert presets_table() in text and efforts_table() in text


def test_a_hand_edit_of_a_table_is_caught() -> None:
    text = DOCS.read_text(encoding="utf-8")
    edited = text.replace("| `openai` |", "| `openai` | extra |", 1)
    assert edited != text and refresh(edited) == text


def test_a_changed_record_changes_its_rows() -> None:
    changed = replace(PRESETS["vllm"], key_required=True, best_format="json_object", json_object_schema=True)
    presets = [changed if p.name == "vllm" else p for p in PRESETS.values()]
    rows = {row.split(" | ")[0]: row for row in presets_table(presets).splitlines()}
    assert "VLLM_API_KEY |" in rows["| `vllm`"] and "json_object + schema" in rows["| `vllm`"]
    assert presets_table(presets) != presets_table()
    styled = replace(PRESETS["ollama"], reasoning="openai")
    openai_row = efforts_table([PRESETS["openai"]]).splitlines()[2]
    assert efforts_table([styled]).splitlines()[2] == openai_row.replace("`openai`", "`ollama`")


def test_every_preset_has_a_row_in_each_table() -> None:
    for table in (presets_table(), efforts_table()):
        names = [row.split("`")[1] for row in table.splitlines()[2:]]
        assert names == list(PRESETS)


@pytest.mark.parametrize("broken", ["", "<!-- presets:start -->\n<!-- presets:end -->\n" * 2])
def test_missing_or_doubled_markers_are_refused(broken: str) -> None:
    with pytest.raises(ValueError, match="presets:start/end"):
        refresh(broken + "<!-- efforts:start -->\n<!-- efforts:end -->\n")


def test_the_readme_names_every_preset() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert [name for name in PRESETS if f"`{name}/`" not in readme] == []


def test_serving_your_own_model_names_real_presets_and_the_readme_links_it() -> None:
    serving = (ROOT / "docs" / "serving.md").read_text(encoding="utf-8")
    rows = [line for line in serving.splitlines() if line.startswith("| ") and "`" in line]
    named = {cell.strip().strip("`").rstrip("/") for row in rows for cell in row.split("|")[-2:-1]}
    assert named == {"llamacpp-server", "vllm", "ollama"} and named <= set(PRESETS)
    assert (
        "llamacpp-server/" in SCHEMA_KEEPER
    )  # the preset the step-down's warning names is the one documented
    for server in ("llama-server", "llama_cpp.server", "vllm serve", "ollama serve"):
        assert server in serving
    assert "--limit-samples 1" in serving and "rescue-bench view" in serving
    assert "(docs/serving.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
