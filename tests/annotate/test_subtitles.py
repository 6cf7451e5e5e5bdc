from __future__ import annotations

from pathlib import Path

import pytest

from rescue_bench.annotate.subtitles import Turn, read_subtitles, split_speaker
from rescue_bench.errors import DataError

PEOPLE = ("Nora", "Eli")


def write(tmp_path: Path, name: str, text: str, *, bom: bool = False, crlf: bool = False) -> Path:
    body = text.replace("\n", "\r\n") if crlf else text
    path = tmp_path / name
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + body.encode("utf-8"))
    return path


def test_srt_times_speakers_and_multi_speaker_cue(srt_file: Path) -> None:
    track = read_subtitles(srt_file, PEOPLE)
    assert track.format == "srt"
    assert [(c.number, c.start, c.end) for c in track.cues] == [
        (1, 0.5, 2.0), (2, 2.0, 4.25), (3, 4.0, 5.5), (4, 5.5, 7.0), (5, 10.0, 11.8),
    ]  # fmt: skip
    assert track.cues[1].turns == (
        Turn("Nora", "He never plans anything with me."),
        Turn("Eli", "That is not fair."),
    )
    # a mixed-case label of a known person counts; italics around a label are markup, not words
    assert track.cues[2].turns == (Turn("Nora", "I just want a weekend."),)
    assert track.cues[3].turns == (Turn("Eli", "Then say so."),)
    assert track.cues[0].turns[0].speaker == "Therapist"
    assert track.errors == ()


def test_overlapping_cues_are_warnings_with_both_cue_numbers(srt_file: Path) -> None:
    track = read_subtitles(srt_file, PEOPLE)
    (overlap,) = [i for i in track.warnings if "overlaps" in i.message]
    assert overlap.cue == 3
    assert "overlaps cue 2 by 0.250 s" in overlap.message
    assert overlap.render().startswith(f"warning: {srt_file}:10: cue 3: overlaps cue 2")


def test_malformed_srt_cue_is_an_error_naming_cue_and_line_and_others_are_kept(tmp_path: Path) -> None:
    text = (
        "1\n00:00:01,000 --> 00:00:02,000\nNORA: One.\n\n"
        "2\n00:00:0x,000 --> 00:00:03,000\nNORA: Broken.\n\n"
        "3\n00:00:05,000 --> 00:00:04,000\nELI: Backwards.\n\n"
        "4\n00:00:06,000 --> 00:00:07,000\nELI: Four.\n"
    )
    track = read_subtitles(write(tmp_path, "bad.srt", text), PEOPLE)
    assert [c.number for c in track.cues] == [1, 4]
    assert [(e.cue, e.line) for e in track.errors] == [(2, 5), (3, 9)]
    assert "not a valid SRT cue" in track.errors[0].message
    assert "00:00:0x,000" in track.errors[0].message
    assert "ends before it starts" in track.errors[1].message


def test_bom_and_windows_line_ends_are_read(tmp_path: Path, srt_file: Path) -> None:
    plain = read_subtitles(srt_file, PEOPLE)
    path = write(tmp_path, "bom.srt", srt_file.read_text(encoding="utf-8"), bom=True, crlf=True)
    with_bom = read_subtitles(path, PEOPLE)
    assert with_bom.cues == plain.cues
    assert with_bom.errors == ()


VTT = """\
WEBVTT
Kind: captions

NOTE written for the tests

intro
00:00:00.500 --> 00:00:02.000 align:start
<v Therapist>What brings you both in?</v>

00:00:02.000 --> 00:00:04.000
<v.loud Nora>He never <i>plans</i>
anything.

00:00:03.500 --> 00:00:05.000
<v Eli>Not true.

00:00:0x.000 --> 00:00:06.000
<v Eli>Broken timestamp.

00:00:06.000 --> 00:00:07.000

00:00:07.000 --> 00:00:08.500
ELI: A label, no voice tag.
"""


def test_vtt_voice_tags_bom_malformed_and_overlap(tmp_path: Path) -> None:
    track = read_subtitles(write(tmp_path, "s.vtt", VTT, bom=True), PEOPLE)
    assert track.format == "vtt"
    assert [(c.number, c.start, c.end, c.turns) for c in track.cues] == [
        (1, 0.5, 2.0, (Turn("Therapist", "What brings you both in?"),)),
        (2, 2.0, 4.0, (Turn("Nora", "He never plans anything."),)),
        (3, 3.5, 5.0, (Turn("Eli", "Not true."),)),
        (6, 7.0, 8.5, (Turn("Eli", "A label, no voice tag."),)),
    ]
    (error,) = track.errors
    assert (error.cue, error.line) == (4, 17)
    assert "00:00:0x.000" in error.message
    messages = {(i.cue, i.message.split(" ")[0]) for i in track.warnings}
    assert (3, "overlaps") in messages
    assert (5, "has") in messages  # the cue without text gives no row, with a warning


def test_vtt_without_header_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"s\.vtt:1: a WebVTT file must start with 'WEBVTT'"):
        read_subtitles(write(tmp_path, "s.vtt", "00:00:01.000 --> 00:00:02.000\nhi\n"), PEOPLE)


def test_not_utf8_and_missing_files_are_clear_errors(tmp_path: Path) -> None:
    path = tmp_path / "latin.srt"
    path.write_bytes("1\n00:00:01,000 --> 00:00:02,000\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"latin\.srt: not UTF-8 \(bad byte at offset 35\)"):
        read_subtitles(path)
    with pytest.raises(DataError, match=r"nope\.srt: no such subtitle file"):
        read_subtitles(tmp_path / "nope.srt")


def test_unknown_capitalised_speaker_is_kept_and_warned(tmp_path: Path) -> None:
    text = "1\n00:00:01,000 --> 00:00:02,000\nDR. REED: Welcome.\n"
    track = read_subtitles(write(tmp_path, "s.srt", text), PEOPLE)
    assert track.cues[0].turns == (Turn("Dr. Reed", "Welcome."),)
    assert "speaker 'Dr. Reed' is neither a participant nor the therapist" in track.warnings[0].message
    named = read_subtitles(write(tmp_path, "s.srt", text), PEOPLE, therapist_names=("Dr. Reed",))
    assert named.cues[0].turns == (Turn("Therapist", "Welcome."),)
    assert named.warnings == ()


def test_out_of_order_cues_are_sorted_with_a_warning(tmp_path: Path) -> None:
    text = (
        "1\n00:00:05,000 --> 00:00:06,000\nNORA: Later.\n\n2\n00:00:01,000 --> 00:00:02,000\nELI: Sooner.\n"
    )
    track = read_subtitles(write(tmp_path, "s.srt", text), PEOPLE)
    assert [c.number for c in track.cues] == [2, 1]
    assert "out of order" in track.warnings[0].message


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("NORA: Fine.", ("Nora", "Fine.")),
        ("[ELI] Fine.", ("Eli", "Fine.")),
        ("- nora: fine.", ("Nora", "fine.")),
        ("Honestly: no.", (None, "Honestly: no.")),
        ("At 10:30 we left.", (None, "At 10:30 we left.")),
        ("No label here.", (None, "No label here.")),
    ],
)
def test_split_speaker(line: str, expected: tuple[str | None, str]) -> None:
    assert split_speaker(line, {"nora": "Nora", "eli": "Eli"}) == expected


def test_a_file_of_only_bad_cues_reports_them_and_no_extra_error(tmp_path: Path) -> None:
    track = read_subtitles(write(tmp_path, "s.srt", "garbage line\n"), PEOPLE)
    assert track.cues == ()
    assert [e.cue for e in track.errors] == [1]


# -- a file cut short (issue 13) -----------------------------------------------------------------------

WHOLE_SRT = (
    "1\n00:00:01,000 --> 00:00:02,000\nNORA: One.\n\n"
    "2\n00:00:03,000 --> 00:00:05,000\nELI: I never said that you were\nthe one who left.\n"
)


@pytest.mark.parametrize(
    ("cut_at", "line"),
    [
        ("the one who le", 8),  # in the middle of the cue's second text line
        ("I never said th", 7),  # in its first text line
        ("00:00:03,000 --> 00:00:05,000", 6),  # right after the timing line, before any text
    ],
)
def test_srt_cut_in_the_middle_of_a_cue_is_an_error_naming_file_cue_and_line(
    tmp_path: Path, cut_at: str, line: int
) -> None:
    text = WHOLE_SRT[: WHOLE_SRT.index(cut_at) + len(cut_at)]
    path = write(tmp_path, "cut.srt", text)
    track = read_subtitles(path, PEOPLE)
    assert [c.number for c in track.cues] == [1]  # the cut cue is not ingested
    (error,) = track.errors
    assert (error.cue, error.line) == (2, 5)
    assert error.render().startswith(f"error: {path}:5: cue 2: the file ends in the middle of this cue")
    assert f"no line end after line {line}" in error.message and "cut short" in error.message


def test_vtt_cut_in_the_middle_of_a_cue_is_an_error(tmp_path: Path) -> None:
    text = "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nNORA: One.\n\n00:00:03.000 --> 00:00:05.000\nELI: I nev"
    track = read_subtitles(write(tmp_path, "cut.vtt", text), PEOPLE)
    assert [c.number for c in track.cues] == [1]
    assert [(e.cue, e.line) for e in track.errors] == [(2, 6)]
    assert "ends in the middle of this cue" in track.errors[0].message


def test_whole_file_without_a_final_line_break_is_a_warning_and_kept(tmp_path: Path) -> None:
    track = read_subtitles(write(tmp_path, "whole.srt", WHOLE_SRT.rstrip("\n")), PEOPLE)
    assert [c.number for c in track.cues] == [1, 2] and track.errors == ()
    (warning,) = [w for w in track.warnings if "line break" in w.message]
    assert warning.cue == 2 and "check that it is complete" in warning.message
    assert read_subtitles(write(tmp_path, "ok.srt", WHOLE_SRT), PEOPLE).issues == ()


def test_ingest_stops_on_a_cut_file_unless_bad_cues_are_skipped(tmp_path: Path) -> None:
    from rescue_bench.annotate.ingest import IngestSettings, usable_cues

    path = write(tmp_path, "cut.srt", WHOLE_SRT[: WHOLE_SRT.index("the one") + 3])
    track = read_subtitles(path, PEOPLE)
    with pytest.raises(DataError, match=r"cut\.srt:5: cue 2: the file ends in the middle of this cue"):
        usable_cues(track, 60.0, IngestSettings("couple", PEOPLE, allow_bad_cues=False))
    cues, warnings = usable_cues(track, 60.0, IngestSettings("couple", PEOPLE, allow_bad_cues=True))
    assert [c.number for c in cues] == [1]
    assert any("cue 2: the file ends in the middle" in w and w.endswith("(skipped)") for w in warnings)
