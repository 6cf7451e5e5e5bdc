"""Bad input: a located one-line message, the right exit code, no traceback; and fuzzing of the loader."""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.data.load import load_samples, read_source
from rescue_bench.data.schema import Row
from rescue_bench.errors import DataError

MakeSample = Callable[..., dict[str, Any]]
runner = CliRunner()


def _run(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def _one_line_error(path: Path | str, code: int = 1) -> str:
    """Run `data stats` on ``path``; it must fail with exactly one `error: ...` line on stderr."""
    result = _run("data", "stats", str(path), "--format", "json")
    assert result.exit_code == code
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ")
    return line


def _validate(path: Path | str, *flags: str) -> Any:
    return _run("data", "validate", str(path), *flags)


def _sample_line(make_sample: MakeSample, **extra: Any) -> str:
    return json.dumps(make_sample(**extra))


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n  \n")
    assert _one_line_error(path) == f"error: {path}: file is empty: expected one JSON sample per line"
    assert _validate(path).exit_code == 1


def test_non_json_line(tmp_path: Path, make_sample: MakeSample) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(_sample_line(make_sample) + "\n{'single': 'quotes'}\n")
    line = _one_line_error(path)
    assert line.startswith(f"error: {path}:2: not valid JSON: ") and "column 2" in line
    result = _validate(path)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == line
    assert result.stdout.splitlines()[-1].endswith("1 usable samples, 5 rows: 1 error, 0 warnings")


def test_truncated_last_line(tmp_path: Path, make_sample: MakeSample) -> None:
    path = tmp_path / "cut.jsonl"
    text = _sample_line(make_sample, sample_id="a") + "\n" + _sample_line(make_sample, sample_id="b")
    path.write_text(text[:-40])
    line = _one_line_error(path)
    assert line.startswith(f"error: {path}:2: not valid JSON") and line.endswith(
        "(the last line looks truncated)"
    )


def test_utf8_bom_is_accepted_with_a_warning(tmp_path: Path, make_sample: MakeSample) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + _sample_line(make_sample).encode() + b"\n")
    result = _validate(path)
    assert result.exit_code == 0
    assert (
        result.stdout.splitlines()[0]
        == f"warning: {path}:1: file starts with a UTF-8 byte-order mark (ignored)"
    )
    assert _validate(path, "--strict").exit_code == 1
    assert _run("data", "stats", str(path), "--format", "json").exit_code == 0


def test_string_where_a_list_is_expected(tmp_path: Path, make_sample: MakeSample) -> None:
    sample = make_sample()
    sample["rows"][1]["internal_emotion"] = "angry"
    path = tmp_path / "shape.jsonl"
    path.write_text(json.dumps(sample) + "\n")
    line = _one_line_error(path)
    assert line.startswith(f"error: {path}:1 sample ann_and_bo/001 row 2 rows[1].internal_emotion: ")
    assert line.endswith("(got string)")


def test_five_megabyte_line(tmp_path: Path, make_sample: MakeSample) -> None:
    sample = make_sample()
    sample["rows"][0]["dialogue_cleaned"] = "word " * 1_000_000
    big = tmp_path / "big.jsonl"
    big.write_text(json.dumps(sample) + "\n")
    assert big.stat().st_size > 5_000_000
    result = _run("data", "stats", str(big), "--format", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)["all"]["samples"] == 1
    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"rows": "' + "x" * 5_000_000 + "\n")
    line = _one_line_error(junk)
    assert line.startswith(f"error: {junk}:1: not valid JSON") and len(line) < 300


def test_directory_without_samples(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing here")
    (tmp_path / "manifest.json").write_text("{}")
    line = _one_line_error(tmp_path)
    assert line == f"error: {tmp_path}: directory holds no sample files (*.json with a 'rows' list)"


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    assert _one_line_error(missing, code=2).startswith(f"error: {missing}: no such file or directory")
    result = _validate(missing)
    assert result.exit_code == 2 and result.stderr.startswith("error: ")


def test_invalid_utf8(tmp_path: Path, make_sample: MakeSample) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(_sample_line(make_sample).encode() + b"\n" + '{"rows": "café"}\n'.encode("latin-1"))
    assert _one_line_error(path) == f"error: {path}:2: invalid UTF-8 at byte 13"


def test_nan_is_not_json(tmp_path: Path, make_sample: MakeSample) -> None:
    sample = make_sample()
    sample["rows"][0]["start_time"] = float("nan")
    path = tmp_path / "nan.jsonl"
    path.write_text(json.dumps(sample) + "\n")  # json.dumps writes the non-standard NaN token
    assert _one_line_error(path) == f"error: {path}:1: not valid JSON: NaN is not valid JSON"


def test_bad_flags_are_usage_errors(tmp_path: Path) -> None:
    assert _run("data", "validate", str(tmp_path), "--format", "xml").exit_code == 2
    assert _run("data", "stats", str(tmp_path), "--no-such-flag").exit_code == 2
    assert _run("data", "validate").exit_code == 2


# -- fuzzing -------------------------------------------------------------------------------------------------

_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_row_keys = st.sampled_from([*Row.model_fields, "extra_key"])
_rows = st.lists(st.dictionaries(_row_keys, _json, max_size=8) | _json, max_size=4)
_sample_keys = st.sampled_from(["sample_id", "scenario", "participants", "source_file", "rows"])
_samples = st.dictionaries(_sample_keys, _json, max_size=5).flatmap(
    lambda base: st.builds(lambda rows: {**base, "rows": rows}, _rows) | st.just(base)
)
_fuzz = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _load_never_fails_unexpectedly(path: Path) -> None:
    report = read_source(path)  # content problems are reported, never raised
    assert report.samples or report.errors
    try:
        load_samples(path)
    except DataError as exc:
        assert exc.problems and "\n" not in str(exc)


@_fuzz
@given(value=_json | _samples)
def test_fuzz_jsonl_lines(tmp_path: Path, value: Any) -> None:
    path = tmp_path / "fuzz.jsonl"
    path.write_text(json.dumps(value) + "\n", encoding="utf-8")
    _load_never_fails_unexpectedly(path)


def test_a_newline_in_a_sample_id_stays_escaped_in_the_error(tmp_path: Path) -> None:
    """The case the directory fuzzer found: ``{"sample_id": "\\n", "rows": []}``."""
    root = tmp_path / "tree"
    root.mkdir()
    (root / "A.json").write_text(json.dumps({"sample_id": "\n", "rows": []}), encoding="utf-8")
    _load_never_fails_unexpectedly(root)
    with pytest.raises(DataError, match=r"sample \\n rows: 'rows' is empty"):
        load_samples(root)


@_fuzz
@given(value=_json | _samples, name=st.text(string.ascii_letters + "._-", min_size=1, max_size=10))
def test_fuzz_directory_files(tmp_path: Path, value: Any, name: str) -> None:
    root = tmp_path / "tree"
    root.mkdir(exist_ok=True)
    for old in root.iterdir():
        old.unlink()
    (root / f"{name}.json").write_text(json.dumps(value), encoding="utf-8")
    _load_never_fails_unexpectedly(root)


@_fuzz
@given(data=st.binary(max_size=200))
def test_fuzz_arbitrary_bytes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "bytes.jsonl"
    path.write_bytes(data)
    _load_never_fails_unexpectedly(path)


@_fuzz
@given(data=st.binary(max_size=200))
def test_fuzz_arbitrary_bytes_in_a_directory_file(tmp_path: Path, data: bytes) -> None:
    root = tmp_path / "bytes_tree"
    root.mkdir(exist_ok=True)
    (root / "sample.json").write_bytes(data)
    _load_never_fails_unexpectedly(root)
