"""Fuzzing subtitle parsing: any file gives a track with located issues, or a one-line DataError, no other.

Documented outcomes (:func:`rescue_bench.annotate.subtitles.read_subtitles`): problems in cues are returned
as issues naming the file, line and cue number; only a file that cannot be read at all (missing, not UTF-8,
a ``.vtt`` without its header) raises :class:`DataError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.fuzz.conftest import FUZZ, TEXT, corpus_files

from rescue_bench.errors import DataError

subtitles = pytest.importorskip("rescue_bench.annotate.subtitles", reason="subtitle parsing is not available")

PEOPLE = ["Ana", "Ben"]


def read(path: Path) -> Any:
    try:
        track = subtitles.read_subtitles(path, PEOPLE, ["Dr. Reed"])
    except DataError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
        return exc
    lines = (
        path.read_bytes().replace(b"\r\n", b"\n").replace(b"\r", b"\n").count(b"\n") + 1
    )  # CR ends lines too
    for issue in track.issues:
        assert issue.file == str(path) and issue.severity in ("error", "warning")
        assert issue.line is None or 1 <= issue.line <= lines, issue.render()
        assert "\n" not in issue.render()
    starts = [cue.start for cue in track.cues]
    assert starts == sorted(starts)
    for cue in track.cues:
        assert 0 <= cue.start < cue.end and cue.turns
        assert all(turn.text and turn.text == turn.text.strip() for turn in cue.turns)
    return track


@pytest.mark.parametrize("path", corpus_files("subtitles"), ids=lambda p: p.name)
def test_corpus_subtitles(path: Path) -> None:
    read(path)


def test_injection_in_a_cue_stays_cue_text() -> None:
    track = read(Path(__file__).parent / "corpus" / "subtitles" / "markup_and_injection.srt")
    assert [t.speaker for c in track.cues for t in c.turns] == ["Therapist", "Ana"]
    assert "ignore previous instructions" in track.cues[0].text and "<i>" not in track.cues[0].text


def _clock(ms: int, sep: str) -> str:
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}{sep}{ms % 1000:03d}"


CUES = st.lists(
    st.tuples(
        st.integers(0, 10_000_000),
        st.integers(-2000, 20_000),
        st.sampled_from(["", "ANA: ", "- Ben: ", "[THERAPIST] ", "<v Ana>", "Listen: ", "DR. REED: "]),
        TEXT,
    ),
    min_size=1,
    max_size=6,
)


def document(cues: list[tuple[int, int, str, str]], kind: str) -> str:
    sep = "," if kind == "srt" else "."
    blocks = [
        (f"{n}\n" if kind == "srt" else "")
        + f"{_clock(start, sep)} --> {_clock(max(0, start + length), sep)}\n"
        f"{label}{text}"
        for n, (start, length, label, text) in enumerate(cues, start=1)
    ]
    return ("WEBVTT\n\n" if kind == "vtt" else "") + "\n\n".join(blocks) + "\n"


@FUZZ
@given(
    cues=CUES,
    kind=st.sampled_from(["srt", "vtt"]),
    cut=st.integers(0, 400),
    junk=TEXT,
    drop=st.integers(0, 30),
)
def test_fuzz_damaged_files(
    tmp_path: Path, cues: list[Any], kind: str, cut: int, junk: str, drop: int
) -> None:
    text = document(cues, kind)
    cut = min(cut, len(text))
    path = tmp_path / f"cues.{kind}"
    path.write_text(text[:cut] + junk + text[cut + drop :], encoding="utf-8", errors="surrogatepass")
    read(path)


@FUZZ
@given(data=st.binary(max_size=300), suffix=st.sampled_from([".srt", ".vtt", ".txt"]))
def test_fuzz_arbitrary_bytes(tmp_path: Path, data: bytes, suffix: str) -> None:
    path = tmp_path / f"any{suffix}"
    path.write_bytes(data)
    read(path)
