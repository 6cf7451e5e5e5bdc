"""Fuzz compaction: whatever lines ``predictions.jsonl`` holds, none leaves it unaccounted for (issue 13).

Every complete line goes one of three ways: it is the kept (latest) line of a planned instance, it is an
older line of a planned instance (superseded, by the resume rule), or it is in ``predictions.rejected.jsonl``
with a warning naming its line number. Junk, foreign instances and misspelt fields are generated at random.
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from tests.fuzz.conftest import FUZZ

from rescue_bench.rundir import RunStore

PLANNED = [f"s::itp::{i}" for i in range(1, 6)]
FOREIGN = ["s::itp::99", "other::zz::1"]


def good(iid: str, valid: bool) -> bytes:
    return json.dumps({"instance_id": iid, "task": iid.split("::")[1], "valid": valid}).encode() + b"\n"


junk = st.one_of(
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"") + b"\n"),
    st.sampled_from([b"[1, 2]\n", b'"text"\n', b"{}\n", b'{"instance_id": 3, "task": "itp"}\n', b"\n"]),
    st.sampled_from(PLANNED).map(lambda i: good(i, True)[:-2] + b', "prediciton": 1}\n'),
)
line = st.one_of(
    st.builds(good, st.sampled_from(PLANNED), st.booleans()),
    st.builds(good, st.sampled_from(FOREIGN), st.booleans()),
    junk,
)


@FUZZ
@given(st.lists(line, max_size=25))
def test_compaction_accounts_for_every_line(lines: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "run")
        store.root.mkdir()
        store.predictions_file.write_bytes(b"".join(lines))
        handler = _Collect()
        logging.getLogger("rescue_bench.rundir").addHandler(handler)
        try:
            records = store.compact_predictions(PLANNED)
        finally:
            logging.getLogger("rescue_bench.rundir").removeHandler(handler)
        kept = _lines(store.predictions_file)
        rejected = _lines(store.root / "predictions.rejected.jsonl")

    latest: dict[str, bytes] = {}
    expected_rejects: list[tuple[int, bytes]] = []
    for number, raw in enumerate(lines, start=1):
        record = _record(raw)
        if record is not None and record["instance_id"] in PLANNED:
            latest[str(record["instance_id"])] = raw
        elif record is None:
            expected_rejects.append((number, raw))
    last_foreign = {str(r["instance_id"]): (n, raw) for n, raw in enumerate(lines, 1) if (r := _record(raw))}
    expected_rejects += [v for k, v in last_foreign.items() if k not in PLANNED]
    expected_rejects.sort()

    assert [json.loads(x) for x in kept] == [json.loads(latest[i]) for i in PLANNED if i in latest]
    assert [r.instance_id for r in records] == [i for i in PLANNED if i in latest]
    assert [json.loads(x) for x in rejected if _record(x)] == [
        json.loads(raw) for _, raw in expected_rejects if _record(raw)
    ]
    assert [x for x in rejected if not _record(x)] == [raw for _, raw in expected_rejects if not _record(raw)]
    named = " ".join(handler.messages)
    for number, _ in expected_rejects[:5]:
        assert f"predictions.jsonl:{number}:" in named
    if len(expected_rejects) > 5:
        assert f"{len(expected_rejects) - 5} more lines set aside" in named


def _lines(path: Path) -> list[bytes]:
    """Lines split on newlines only, as JSONL (``bytes.splitlines`` would also split on a carriage return)."""
    data = path.read_bytes() if path.exists() else b""
    return [part + b"\n" for part in data.split(b"\n")[:-1]]


def _record(raw: bytes) -> dict[str, object] | None:
    """The record when the line is a readable prediction line, else ``None`` (junk)."""
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    ok = (
        isinstance(record, dict)
        and set(record) == {"instance_id", "task", "valid"}
        and isinstance(record["instance_id"], str)
    )
    return record if ok else None


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
