"""Fuzzing the review app's row-editor form handlers: any posted form gives a row and a list of errors.

Documented outcome (:mod:`rescue_bench.review.forms`): ``row_from_state(state_from_form(form), ...)`` returns
the edited row and the problems found (shown to the annotator); when there are none, the row is a valid
release row. Nothing raises, whatever a browser (or anyone with curl) posts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.fuzz.conftest import FUZZ, NASTY_TEXT, corpus_files

from rescue_bench.data.schema import Row
from rescue_bench.data.synth import synthetic_samples

forms = pytest.importorskip("rescue_bench.review.forms", reason="the review app is not installed")

SAMPLE: dict[str, Any] = next(synthetic_samples(1, seed=4))
ROWS: list[dict[str, Any]] = SAMPLE["rows"][:12]
PARTICIPANTS: list[str] = SAMPLE["participants"]


def form_of(state: Any) -> dict[str, list[str]]:
    """The form a browser posts for ``state`` (what the editor template renders)."""
    form: dict[str, list[str]] = {}
    for spec in forms.SCALARS:
        value = state.scalars[spec.key]
        form[f"f-{spec.key}"] = list(value) if spec.multi else [value]
    for spec in forms.LISTS:
        for i, entry in enumerate(state.lists[spec.key]):
            form[f"{spec.key}-{i}-src"] = ["" if entry.src is None else str(entry.src)]
            for f in spec.fields:
                value = entry.values[f.key]
                form[f"{spec.key}-{i}-{f.key}"] = list(value) if f.multi else [value]
    for name in forms.RELATION_FIELDS:
        form[f"rel-{name}"] = [getattr(state.relation, name)]
    return form


def submit(form: Mapping[str, list[str]], base: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    row, errors = forms.row_from_state(forms.state_from_form(form), base, "couple", PARTICIPANTS)
    assert all(isinstance(e, str) and e for e in errors)
    if not errors:
        Row.model_validate(row)
    return row, errors


def test_an_unchanged_form_changes_nothing() -> None:
    for base in ROWS:
        row, errors = submit(form_of(forms.state_from_row(base)), base)
        assert errors == [] and row == base


@pytest.mark.parametrize("path", corpus_files("forms"), ids=lambda p: p.name)
def test_corpus_forms(path: Path) -> None:
    posted = json.loads(path.read_text(encoding="utf-8"))
    for base in ROWS[:4]:
        submit(posted, base)


def test_unicode_digits_are_a_form_error_not_a_crash() -> None:
    # str.isdigit() accepts "¹", which int() refuses: found by fuzzing.
    _, errors = submit({"rel-evidence": ["\u00b9"]}, ROWS[0])
    assert errors


def test_overlong_numbers_are_not_read_as_numbers() -> None:
    # int() refuses more than 4,300 digits: found by fuzzing.
    submit({"internal_emotion-0-src": ["9" * 5000], "internal_emotion-0-person": ["Ana"]}, ROWS[0])


VALUES = st.one_of(
    NASTY_TEXT, st.text(max_size=30), st.sampled_from([*PARTICIPANTS, "Therapist", "Couple", "12"])
)


@FUZZ
@given(
    base=st.sampled_from(ROWS),
    changes=st.lists(st.tuples(st.integers(0, 10_000), st.lists(VALUES, max_size=3)), max_size=6),
    extra=st.dictionaries(st.text(max_size=30), st.lists(VALUES, max_size=2), max_size=3),
    drop=st.lists(st.integers(0, 10_000), max_size=4),
)
def test_fuzz_posted_forms(
    base: dict[str, Any], changes: list[tuple[int, list[str]]], extra: dict[str, list[str]], drop: list[int]
) -> None:
    form = form_of(forms.state_from_row(base))
    names = list(form)
    for index, values in changes:
        form[names[index % len(names)]] = values
    for index in drop:
        form.pop(names[index % len(names)], None)
    form.update(extra)
    submit(form, base)


@FUZZ
@given(
    base=st.sampled_from(ROWS),
    entries=st.lists(
        st.tuples(st.sampled_from([s.key for s in forms.LISTS]), st.integers(0, 9999), st.text(max_size=6)),
        max_size=6,
    ),
    value=VALUES,
)
def test_fuzz_new_list_entries(base: dict[str, Any], entries: list[tuple[str, int, str]], value: str) -> None:
    form = form_of(forms.state_from_row(base))
    for key, position, src in entries:
        spec = next(s for s in forms.LISTS if s.key == key)
        form[f"{key}-{position}-src"] = [src]
        for f in spec.fields:
            form[f"{key}-{position}-{f.key}"] = [value]
    submit(form, base)
