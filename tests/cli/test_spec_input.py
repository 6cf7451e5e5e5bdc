"""A ``--sample-ids`` file in each of its forms, and a clear error naming the file for any other."""

from __future__ import annotations

from pathlib import Path

import pytest

from rescue_bench.cli.spec_input import parse_sample_ids
from rescue_bench.errors import ConfigError


def test_an_object_of_sample_ids_may_hold_other_keys(tmp_path: Path) -> None:
    path = tmp_path / "ids.json"
    path.write_text('{"sample_ids": ["s1", "s2"], "note": "the hard ones"}')
    assert parse_sample_ids(path) == ("s1", "s2")


@pytest.mark.parametrize("text", ['["s1", 2]', '{"sample_ids": "s1"}', '{"sample_ids": [1]}', "[null]", "{}"])
def test_ids_that_are_not_a_list_of_strings_are_named_with_the_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "ids.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"^--sample-ids: .*ids\.json must hold a list of strings"):
        parse_sample_ids(path)


def test_a_broken_json_file_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "ids.json"
    path.write_text('[\n"s1",\n"s2" "s3"\n]\n')
    with pytest.raises(ConfigError, match=r"ids\.json:3: not valid JSON"):
        parse_sample_ids(path)
