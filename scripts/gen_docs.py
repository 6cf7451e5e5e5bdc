"""Write the tables generated from the code into the docs (today: the presets' tables of docs/reasoning.md)::

    PYTHONPATH=src .venv/bin/python scripts/gen_docs.py

The tables sit between ``<!-- name:start -->`` and ``<!-- name:end -->`` markers; the text around them is
left as it is. ``tests/models/test_preset_docs.py`` fails while the file differs from what this writes.
"""

from __future__ import annotations

from pathlib import Path

from rescue_bench.models.preset_docs import refresh

DOCS = Path(__file__).resolve().parent.parent / "docs" / "reasoning.md"


def main() -> None:
    text = DOCS.read_text(encoding="utf-8")
    fresh = refresh(text)
    if fresh != text:
        DOCS.write_text(fresh, encoding="utf-8")
    print(f"{DOCS}: {'rewritten' if fresh != text else 'already current'}")


if __name__ == "__main__":
    main()
