"""Settings from the environment and a ``.env`` file, API-key resolution, and where a key came from
(:class:`KeyOrigin`, for the 401 hint).

Keys are looked up, handed to the client, and otherwise never touched: nothing here logs, prints or stores a
key, and :func:`redact` (:mod:`rescue_bench.redaction`) scrubs one out of any text (an error body that
echoes it, say) before that text goes anywhere.

``.env`` follows the reference scripts' rules (protocol section 1.4): ``KEY=VALUE`` lines, ``#`` comments, one
pair of matching quotes stripped, ``$VARS`` and ``~`` expanded; real environment variables win over the file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rescue_bench.errors import ConfigError
from rescue_bench.redaction import redact

__all__ = ["KeyOrigin", "load_dotenv", "lookup", "parse_dotenv", "redact", "resolve_api_key"]


def parse_dotenv(text: str) -> dict[str, str]:
    """Parse ``.env`` text.

    >>> parse_dotenv('# comment\\nA=1\\nexport B="two words"\\nC=\\'x\\'\\nbad line\\n')
    {'A': '1', 'B': 'two words', 'C': 'x'}
    """
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.partition("=")
        name = name.strip().removeprefix("export ").strip()
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if name:
            out[name] = os.path.expanduser(os.path.expandvars(value))
    return out


def load_dotenv(path: Path | None = None) -> dict[str, str]:
    """Read ``path`` (default: ``./.env``); a missing file gives an empty mapping."""
    path = path or Path.cwd() / ".env"
    try:
        return parse_dotenv(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the .env file ({exc.__class__.__name__})") from None


def lookup(names: Sequence[str], *, dotenv: Mapping[str, str] | None = None) -> tuple[str | None, str | None]:
    """The first non-empty value among ``names`` (environment first, then ``.env``) and the name it came from.

    >>> lookup(["NOPE_1", "NOPE_2"], dotenv={"NOPE_2": "v"})
    ('v', 'NOPE_2')
    """
    file_values = load_dotenv() if dotenv is None else dotenv
    for name in names:
        value = os.environ.get(name) or file_values.get(name)
        if value:
            return value, name
    return None, None


def resolve_api_key(
    names: Sequence[str], *, required: bool, provider: str, dotenv: Mapping[str, str] | None = None
) -> str | None:
    """The API key from the first set variable in ``names``; a :class:`ConfigError` naming them when required.

    >>> resolve_api_key(["NO_SUCH_KEY_VAR"], required=False, provider="vllm", dotenv={}) is None
    True
    """
    value, _ = lookup(names, dotenv=dotenv)
    if value is None and required:
        listed = " or ".join(names)
        raise ConfigError(
            f"no API key for {provider}: set {listed} in the environment or in ./.env, "
            "or name another variable with --api-key-env"
        )
    return value


@dataclass(frozen=True, slots=True)
class KeyOrigin:
    """Where the key came from, for the 401 hint: the variable it was read from, or the variables to set."""

    variable: str | None
    """The environment / ``.env`` variable that held the key; ``None`` if none did."""
    candidates: tuple[str, ...] = ()
    """Variables that would have been read (the preset's, or ``--api-key-env``) when none was set."""

    def hint(self) -> str:
        """The 401 hint.

        >>> KeyOrigin("MY_KEY").hint()
        ' (check the key in MY_KEY)'
        >>> KeyOrigin(None, ("A", "B")).hint()
        ' (no key was sent: set A or B, or name a variable with --api-key-env)'
        """
        if self.variable:
            return f" (check the key in {self.variable})"
        if self.candidates:
            names = " or ".join(self.candidates)
            return f" (no key was sent: set {names}, or name a variable with --api-key-env)"
        return " (check the API key)"
