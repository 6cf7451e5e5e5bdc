"""The short names ``--data`` takes besides a path, and the help text that lists them: one place for both.

This module imports nothing heavy, so the CLI can build its help from it without loading the data layer.
"""

from __future__ import annotations

from typing import Final

DEMO: Final = "demo"
"""The project's own fictional demo data, shipped with the package."""
RELEASE: Final = "rescue"
"""The official release, after ``rescue-bench data get`` put it in the user cache."""
HF: Final = "hf"
"""The Hugging Face dataset (``hf:<repo_id>`` for another repository)."""

NAMES: Final = (DEMO, RELEASE, HF)

SOURCE_HELP: Final = (
    "A release JSONL file, a directory of per-sample JSON files, 'demo' (bundled), 'rescue' (the official "
    "release, after `rescue-bench data get`) or 'hf' / 'hf:<repo_id>'."
)
GIVE: Final = "give a JSONL file, a directory, 'demo', 'rescue' or 'hf'"
"""What a user may pass instead, for error messages about a source that cannot be read."""


def is_named(text: str) -> bool:
    """Whether ``text`` names a source rather than a path.

    >>> [is_named(t) for t in ("demo", "rescue", "hf", "hf:someone/mirror", "data/x.jsonl")]
    [True, True, True, True, False]
    """
    return text in NAMES or text.startswith(f"{HF}:")


def public_name(source: str) -> str:
    """How exports and headings name a data source: a named source as it is, a path by its last part only
    (an absolute path says where a file sat on one machine, not what it holds; the content hash does that).

    >>> public_name("demo"), public_name("/home/ana/data/release.jsonl"), public_name("hf:someone/mirror")
    ('demo', 'release.jsonl', 'hf:someone/mirror')
    """
    if is_named(source):
        return source
    parts = [part for part in source.replace("\\", "/").split("/") if part]
    return parts[-1] if parts else source
