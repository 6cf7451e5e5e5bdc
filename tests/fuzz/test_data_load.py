"""Fuzzing the data loader: any file gives samples or a :class:`DataError` with located problems, no other."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.fuzz.conftest import CORPUS, FUZZ, JSON_VALUES, PATHS, corpus_files, expand_recipe, mutate
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.data.load import load_samples, read_source
from rescue_bench.data.synth import synthetic_samples
from rescue_bench.errors import DataError

BASE: dict[str, Any] = next(synthetic_samples(1, seed=4))
BASE["rows"] = BASE["rows"][:6]

EXPECTED_ERRORS = {
    "deeply_nested.jsonl": [(1, "nested too deeply"), (2, "nested too deeply")],
    "invalid_utf8.jsonl": [(1, "invalid UTF-8"), (2, "invalid UTF-8")],
    "nan_infinity.jsonl": [(1, "NaN is not valid JSON"), (2, "Infinity is not valid JSON"), (3, "Infinity")],
    "huge_integer.jsonl": [(1, "not valid JSON")],
    "truncated_last_line.jsonl": [(2, "truncated")],
}


def load(path: Path) -> list[Any] | DataError:
    """The samples, or the DataError; any other exception fails the test."""
    try:
        return load_samples(path)
    except DataError as exc:
        return exc


@pytest.mark.parametrize("name", sorted(EXPECTED_ERRORS))
def test_corpus_files_give_located_errors(name: str) -> None:
    path = CORPUS / "data" / name
    result = load(path)
    assert isinstance(result, DataError)
    assert "\n" not in str(result) and str(path) in str(result)
    for line, text in EXPECTED_ERRORS[name]:
        assert any(p.line == line and p.file == str(path) and text in p.message for p in result.problems), (
            line,
            text,
            [p.render() for p in result.problems],
        )


def test_duplicate_keys_take_the_last_value_like_the_json_module() -> None:
    # Deterministic and the same as the reference scripts' json.load; the loader warns about the repeated key.
    result = load(CORPUS / "data" / "duplicate_keys.jsonl")
    if isinstance(result, DataError):
        assert all(p.line == 1 for p in result.problems)
    else:
        assert [s.sample_id for s in result] == ["duplicate/second_id"]


def test_injection_samples_are_ordinary_data() -> None:
    for name in ("prompt_injection.jsonl", "name_injection.jsonl"):
        result = load(CORPUS / "data" / name)
        assert not isinstance(result, DataError), [p.render() for p in result.problems]


def test_every_corpus_file_is_one_error_line_in_the_cli() -> None:
    runner = CliRunner()
    for path in corpus_files("data", "*.jsonl"):
        result = runner.invoke(app, ["data", "validate", str(path)])
        assert result.exit_code in (0, 1, 2), (path.name, result.exit_code, result.output[-500:])
        assert "Traceback" not in result.output and not isinstance(result.exception, RecursionError)
        if result.exit_code:
            assert "error" in result.output.lower(), result.output[-500:]


def test_a_fifty_megabyte_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "huge.jsonl"
    size = expand_recipe(CORPUS / "recipes" / "huge_line.json", path)
    assert size >= 50 * 1024 * 1024
    started = time.perf_counter()
    with caplog.at_level(logging.WARNING, logger="rescue_bench.data"):
        samples = load(path)
    elapsed = time.perf_counter() - started
    assert not isinstance(samples, DataError), samples.problems[:3]
    # announced before any caller can send it to a model: sample, row and size in one warning line
    [notice] = [r.getMessage() for r in caplog.records]
    assert notice.startswith(f"warning: {path}:1 sample {samples[0].sample_id} row 1 rows[0].")
    assert "characters of text" in notice
    assert len(samples[0].rows[0].dialogue_cleaned or "") > 49 * 1024 * 1024
    assert elapsed < 30, f"loading one 50 MB line took {elapsed:.1f} s"
    # the same line cut in the middle: a located error that says the last line looks truncated
    with path.open("r+b") as handle:
        handle.truncate(size // 2)
    result = load(path)
    assert isinstance(result, DataError) and "truncated" in str(result) and f"{path}:1" in str(result)


@FUZZ
@given(path=PATHS, value=JSON_VALUES, delete=st.booleans())
def test_fuzz_mutated_samples(tmp_path: Path, path: list[Any], value: Any, delete: bool) -> None:
    target = tmp_path / "mutated.jsonl"
    line = json.dumps(mutate(BASE, path, value, delete), ensure_ascii=False)
    target.write_text(json.dumps(BASE) + "\n" + line + "\n", encoding="utf-8", errors="surrogatepass")
    check(target)


@FUZZ
@given(cut=st.integers(0, 10_000), junk=st.binary(max_size=40), drop=st.integers(0, 40))
def test_fuzz_damaged_bytes(tmp_path: Path, cut: int, junk: bytes, drop: int) -> None:
    raw = json.dumps(BASE).encode()
    cut %= len(raw)
    target = tmp_path / "damaged.jsonl"
    target.write_bytes(raw + b"\n" + raw[:cut] + junk + raw[cut + drop :] + b"\n")
    check(target)


def check(path: Path) -> None:
    result = load(path)
    lines = path.read_bytes().count(b"\n")
    if isinstance(result, DataError):
        assert result.problems and "\n" not in str(result)
        for problem in result.problems:
            assert problem.file == str(path), problem.render()
            assert (problem.line is not None and 1 <= problem.line <= lines) or problem.sample_id, (
                problem.render()
            )
    else:
        assert [s.sample_id for s in result][:1] == [BASE["sample_id"]]


# -- hostile values and trees (issue 13) ---------------------------------------------------------------------

_TYPED_FIELDS = {
    "row_index": (int,),
    "start_time": (int, float),
    "end_time": (int, float),
    "relation_cycle_evidence_rows": (list,),
}


@FUZZ
@given(
    field=st.sampled_from(sorted(_TYPED_FIELDS)),
    value=st.one_of(
        st.booleans(),
        st.integers(-3, 40),
        st.floats(-5, 500),
        st.text(max_size=6),
        st.lists(st.integers(0, 9)),
    ),
    row=st.integers(0, 5),
)
def test_fuzz_row_values_are_never_converted_silently(
    tmp_path: Path, field: str, value: Any, row: int
) -> None:
    sample = json.loads(json.dumps(BASE))
    sample["rows"][row][field] = value
    target = tmp_path / "typed.jsonl"
    target.write_text(json.dumps(sample) + "\n", encoding="utf-8")
    report = read_source(target)
    if not report.samples:
        assert report.errors
        return
    read = getattr(report.samples[0].rows[row], field)
    same = type(value) in _TYPED_FIELDS[field] and (
        field != "relation_cycle_evidence_rows" or list(read) == value
    )
    if not same and read is not None and read != ():
        assert any(w.path and w.path.startswith(f"rows[{row}].{field}") for w in report.warnings), (
            value,
            read,
            [w.render() for w in report.warnings],
        )


@FUZZ
@given(
    sample_id=JSON_VALUES,
    participants=JSON_VALUES,
)
def test_fuzz_sample_keys_of_a_wrong_type_are_reported(
    tmp_path: Path, sample_id: Any, participants: Any
) -> None:
    sample = {**BASE, "sample_id": sample_id, "participants": participants}
    target = tmp_path / "keys.jsonl"
    target.write_text(json.dumps(sample) + "\n", encoding="utf-8")
    report = read_source(target)
    paths = {w.path for w in report.warnings}
    if report.samples:
        if sample_id is not None and not isinstance(sample_id, str):
            assert "sample_id" in paths
        good = participants is None or (
            isinstance(participants, list) and all(isinstance(p, str) for p in participants)
        )
        assert good or "participants" in paths


_ENTRY_KINDS = ("sample", "sample", "broken_link", "loop_link", "fifo", "denied_dir", "denied_file", "notes")


@FUZZ
@given(kinds=st.lists(st.sampled_from(_ENTRY_KINDS), min_size=1, max_size=8))
def test_fuzz_hostile_trees_name_every_bad_entry_and_never_block(
    tmp_path_factory: pytest.TempPathFactory, kinds: list[str]
) -> None:
    """A tree of good samples, broken and looping links, FIFOs and unreadable entries (denied by patching
    ``os.scandir`` / ``os.open`` for those paths, since root can read anything): every bad entry is one error
    naming it, every good sample is read, and nothing waits on a FIFO."""
    root = tmp_path_factory.mktemp("tree")
    bad: set[Path] = set()
    denied: set[Path] = set()
    good = 0
    for i, kind in enumerate(kinds):
        folder = root / f"d{i}"
        folder.mkdir()
        entry = folder / "s.json"
        if kind in ("sample", "denied_dir", "denied_file"):
            entry.write_text(json.dumps(BASE["rows"]), encoding="utf-8")
            good += kind == "sample"
        elif kind == "broken_link":
            entry.symlink_to(folder / "missing.json")
        elif kind == "loop_link":
            entry.symlink_to(entry)
        elif kind == "fifo":
            os.mkfifo(entry)
        else:
            (folder / "notes.txt").write_text("not a sample")
            continue
        if kind == "denied_dir":
            denied.add(folder)
            bad.add(folder)
        elif kind != "sample":
            denied.update({entry} if kind == "denied_file" else set())
            bad.add(entry)
    real_scandir, real_open = os.scandir, os.open

    def scandir(path: Any) -> Any:
        if Path(path) in denied:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    def open_(path: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(path) in denied:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "scandir", scandir)
        patch.setattr(os, "open", open_)
        started = time.perf_counter()
        report = read_source(root)
    assert time.perf_counter() - started < 10
    assert len(report.samples) == good
    if bad:
        assert sorted(Path(e.file or "") for e in report.errors) == sorted(bad)
    elif not good:
        assert [e.message for e in report.errors] == [
            "directory holds no sample files (*.json with a 'rows' list)"
        ]
    else:
        assert report.errors == ()
