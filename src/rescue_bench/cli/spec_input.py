"""What a run spec takes from the command line beside its flags' rows: a flag's value as a spec file would
give it, a JSON flag, a ``--sample-ids`` file; and the effective spec printed back (``--print-spec``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from rescue_bench.cli.flags import Flag, Path_
from rescue_bench.errors import ConfigError
from rescue_bench.printable import echo
from rescue_bench.redaction import scrub
from rescue_bench.spec import RunSpec, to_toml

__all__ = [
    "SAMPLE_IDS",
    "SampleIdsFile",
    "json_object",
    "parse_sample_ids",
    "plain_value",
    "print_spec",
    "put",
    "written",
]


def json_object(flag: str, text: str) -> dict[str, Any]:
    """The JSON object a flag gives, or a one-line :class:`ConfigError` naming the flag.

    >>> json_object("--extra-body", '{"top_k": 20}')
    {'top_k': 20}
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{flag}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{flag}: give a JSON object, such as '{{\"top_k\": 20}}'")
    return value


def written(flag: Flag, value: object) -> str:
    """The flag as the user wrote it: ``--no-bertscore`` for the off side of ``--bertscore/--no-bertscore``.

    >>> written(Flag(("--bertscore/--no-bertscore",), "bertscore", (), bool, ""), False)
    '--no-bertscore'
    """
    on, _, off = flag.decls[0].partition("/")
    return off if off and value is False else on


def plain_value(flag: Flag, value: object) -> object:
    """The flag's value as a spec file would give it (paths as strings, repeated flags as lists)."""
    if flag.value is not None:
        return flag.value
    if flag.parse is not None:
        return flag.parse(str(value))
    if flag.multiple and isinstance(value, list | tuple):
        return [str(v) if isinstance(v, Path) else v for v in value]
    return str(value) if isinstance(value, Path) else value


def put(data: dict[str, Any], path: Path_, value: object) -> None:
    """Set ``value`` at ``path`` of a spec table, copying the tables on the way (a spec file's table is not
    changed in place)."""
    for key in path[:-1]:
        inner = data.get(key)
        if isinstance(inner, str) and key == "model":
            inner = {"name": inner}  # a spec file may name the model alone
        data[key] = inner = dict(inner) if isinstance(inner, dict) else {}
        data = inner
    data[path[-1]] = value


def print_spec(spec: RunSpec) -> None:
    # As every writer: no URL secret (a --base-url query key) and no credential-looking value is shown.
    echo(to_toml(scrub(spec.model_dump(mode="json"))), nl=False)


class SampleIdsFile(BaseModel):
    """A ``--sample-ids`` file written as ``{"sample_ids": [...]}`` (other keys are let be)."""

    model_config = ConfigDict(frozen=True)

    sample_ids: list[str]


SAMPLE_IDS: Final = TypeAdapter(list[str] | SampleIdsFile)
"""The JSON forms of a ``--sample-ids`` file: a list of ids, or an object holding one."""


def parse_sample_ids(path: Path) -> tuple[str, ...]:
    """Sample ids from a JSON list, a ``{"sample_ids": [...]}`` object, or lines (``#`` comments)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--sample-ids: cannot read {path} ({exc.__class__.__name__})") from None
    stripped = text.strip()
    if stripped.startswith(("[", "{")):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--sample-ids: {path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
        try:
            given = SAMPLE_IDS.validate_python(data, strict=True)
        except ValidationError:
            raise ConfigError(
                f"--sample-ids: {path} must hold a list of strings or {{'sample_ids': [...]}}"
            ) from None
        return tuple(given if isinstance(given, list) else given.sample_ids)
    return tuple(
        line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    )
