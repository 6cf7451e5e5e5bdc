"""A spec dump written as TOML (``--print-spec``, a study file): the few TOML forms a spec needs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rescue_bench.errors import ConfigError

FREE_TABLE = "extra_body"
"""The table whose values are sent as given (every other ``None`` of a spec dump is a default, left out)."""


def to_toml(data: Mapping[str, Any]) -> str:
    """TOML of a spec dump: tables, arrays, strings, numbers and booleans; ``None`` values are left out.

    >>> print(to_toml({"tasks": ["itp"], "out": None, "model": {"name": "a/b", "temperature": 0.0}}), end="")
    tasks = ["itp"]
    <BLANKLINE>
    [model]
    name = "a/b"
    temperature = 0.0
    """
    return "".join(_toml_table(data, ()))


def _toml_table(data: Mapping[str, Any], path: tuple[str, ...]) -> list[str]:
    if FREE_TABLE in path:  # sent as given: a null there is data, not a default left out
        no_null(data, path)
    plain = [f"{_key(k)} = {_value(v)}\n" for k, v in data.items() if v is not None and not _is_table(v)]
    lines = ([f"\n[{'.'.join(_key(p) for p in path)}]\n"] if path else []) + plain
    if path and not plain and any(_is_table(v) for v in data.values()):
        lines = []  # a table holding only tables needs no header of its own
    for k, v in data.items():
        if isinstance(v, Mapping):
            lines += _toml_table(v, (*path, k))
        elif _is_table(v):
            for item in v:
                lines.append(f"\n[[{'.'.join(_key(p) for p in (*path, k))}]]\n")
                if FREE_TABLE in item:
                    no_null(item[FREE_TABLE], (*path, k, FREE_TABLE))
                lines += [f"{_key(ik)} = {_value(iv)}\n" for ik, iv in item.items() if iv is not None]
    return lines


def no_null(value: object, path: tuple[str, ...]) -> None:
    """Refuse a null anywhere in ``value``: TOML has none, and leaving it out would print another spec."""
    if value is None:
        raise ConfigError(
            f"{'.'.join(path)} is null, which a TOML spec cannot hold: leave the key out, or give the spec "
            "in Python"
        )
    if isinstance(value, Mapping):
        for key, item in value.items():
            no_null(item, (*path, str(key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            no_null(item, (*path, str(index)))


def _is_table(value: object) -> bool:
    """A mapping, or a non-empty array of mappings (an array of tables)."""
    if isinstance(value, Mapping):
        return True
    return isinstance(value, list | tuple) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _key(key: str) -> str:
    return key if key and all(c.isalnum() or c in "-_" for c in key) else _string(key)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):  # inside an array of tables (a judge's extra_body): an inline table
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise ConfigError(f"cannot write {type(value).__name__} as TOML")


def _string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(c if c >= " " or c == "\t" else f"\\u{ord(c):04x}" for c in escaped)
    return f'"{escaped}"'
