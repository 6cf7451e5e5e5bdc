"""Read SRT and WebVTT subtitles into timed cues with speakers, reporting every bad cue by number and line.

Subtitles are the timing ground truth of the benchmark. The libraries (``srt``, ``webvtt-py``) parse the
timing; this module adds what they leave out:

* **bad cues are located, not skipped**: the file is split into blank-line separated blocks and each block is
  parsed alone, so a malformed cue becomes an error naming its cue number (its position among the file's cues)
  and its line, and the other cues are still read (``webvtt-py`` alone drops a cue with a broken timestamp
  silently);
* a cue that ends before it starts, or has no duration, is an error; so is a last cue cut off by the end of
  the file (no line end after its last line, which does not end a sentence: the file was truncated; a
  warning when it does end one); a cue without text is a warning and
  gives no row; cues that overlap, or come out of order, are warnings (cues are then sorted by start time);
* a UTF-8 byte-order mark and Windows line ends are accepted;
* **speakers**: from a VTT voice tag (``<v Alan>``) or a leading label (``ALAN: ...``, ``- Alan: ...``,
  ``[ALAN] ...``). A label counts when it names someone known (a participant, ``Therapist`` or a therapist
  name, in any case) or is written in capitals; other ``word:`` openings are left as text. A cue whose lines
  carry different speakers gives one turn per speaker.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import srt
import webvtt

from rescue_bench.errors import DataError

Severity = Literal["error", "warning"]
SubtitleFormat = Literal["srt", "vtt"]

_VOICE = re.compile(r"^\s*<v(?:\.[\w.-]+)*\s+([^>]+)>")
_TAG = re.compile(r"<[^>]*>")
_LABEL = re.compile(
    r"""^\s*(?:-\s*)?                                   # an optional dialogue dash
    (?:\[(?P<bracket>[^\]]{1,40})\]\s*:?                # [ALAN] or [ALAN]:
      |(?P<name>[^\W\d_][\w .'’-]{0,38}?)\s*:)          # ALAN: or Dr. Reed:
    \s+(?P<rest>\S.*)$""",
    re.VERBOSE,
)
_DASH = re.compile(r"^\s*-\s+")
_SPACES = re.compile(r"\s+")
_ENTITIES = {"&amp;": "&", "&lt;": "<", "&gt;": ">", "&nbsp;": " ", "&lrm;": "", "&rlm;": ""}


@dataclass(frozen=True, slots=True)
class Issue:
    """A problem in a subtitle file, located by cue number and line."""

    severity: Severity
    message: str
    file: str
    line: int | None = None
    cue: int | None = None

    def render(self) -> str:
        """``error: talk.srt:31: cue 7: ...``"""
        where = f"{self.file}:{self.line}" if self.line else self.file
        cue = f" cue {self.cue}:" if self.cue is not None else ""
        return f"{self.severity}: {where}:{cue} {self.message}"


@dataclass(frozen=True, slots=True)
class Turn:
    """What one speaker says inside a cue; ``speaker`` is ``None`` when the subtitles do not say."""

    speaker: str | None
    text: str


@dataclass(frozen=True, slots=True)
class Cue:
    """One subtitle cue: its number (1-based position in the file), first line, times in seconds, turns."""

    number: int
    line: int
    start: float
    end: float
    turns: tuple[Turn, ...]

    @property
    def text(self) -> str:
        return " ".join(turn.text for turn in self.turns)


@dataclass(frozen=True, slots=True)
class SubtitleTrack:
    """The cues of a file, sorted by start time, and every problem found while reading it."""

    path: str
    format: SubtitleFormat
    cues: tuple[Cue, ...]
    issues: tuple[Issue, ...]

    @property
    def errors(self) -> tuple[Issue, ...]:
        return tuple(i for i in self.issues if i.severity == "error")

    @property
    def warnings(self) -> tuple[Issue, ...]:
        return tuple(i for i in self.issues if i.severity == "warning")


def speaker_aliases(
    participants: Sequence[str],
    therapist_names: Sequence[str] = (),
    speaker_map: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Case-folded spellings that name someone known, mapped to the name used in annotations;
    ``speaker_map`` adds labels of the subtitles (``Alna``) for a participant or the therapist (``Alan``).

    >>> speaker_aliases(["Alan"], ["Dr. Reed"], {"Alna": "Alan"})
    {'alan': 'Alan', 'therapist': 'Therapist', 'dr. reed': 'Therapist', 'alna': 'Alan'}
    """
    aliases = {name.strip().casefold(): name.strip() for name in participants if name.strip()}
    for name in ("Therapist", *therapist_names):
        if name.strip():
            aliases[name.strip().casefold()] = "Therapist"
    for label, name in (speaker_map or {}).items():
        aliases[label.strip().casefold()] = aliases.get(name.strip().casefold(), name.strip())
    return aliases


def one_edit_apart(a: str, b: str) -> bool:
    """Whether ``a`` becomes ``b`` by one inserted, deleted, replaced or swapped (adjacent) letter, case
    aside.

    >>> [one_edit_apart("Alna", "Alan"), one_edit_apart("Ala", "Alan"), one_edit_apart("Allan", "Alan")]
    [True, True, True]
    >>> [one_edit_apart("Alan", "alan"), one_edit_apart("Bob", "Alan"), one_edit_apart("Aln", "Alna")]
    [False, False, True]
    """
    a, b = a.casefold(), b.casefold()
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        swapped = (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
        return len(diff) == 1 or swapped
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def split_speaker(line: str, aliases: Mapping[str, str]) -> tuple[str | None, str]:
    """The speaker a subtitle line opens with (if any) and the rest of the line.

    >>> aliases = {"alan": "Alan", "therapist": "Therapist"}
    >>> split_speaker("ALAN: I said no.", aliases), split_speaker("- Therapist: Go on.", aliases)
    (('Alan', 'I said no.'), ('Therapist', 'Go on.'))
    >>> split_speaker("DR. REED: Hello.", aliases), split_speaker("Listen: it matters.", aliases)
    (('Dr. Reed', 'Hello.'), (None, 'Listen: it matters.'))
    """
    match = _LABEL.match(line)
    if match is None:
        return None, line.strip()
    label = _SPACES.sub(" ", (match["bracket"] or match["name"] or "").strip())
    known = aliases.get(label.casefold())
    if known is not None:
        return known, match["rest"].strip()
    if label.upper() == label and any(ch.isalpha() for ch in label):
        return label.title(), match["rest"].strip()
    return None, line.strip()


def clean_text(text: str) -> str:
    """Cue text without markup, entities or repeated whitespace.

    >>> clean_text("<i>Hello</i> &amp;  bye")
    'Hello & bye'
    """
    for entity, char in _ENTITIES.items():
        text = text.replace(entity, char)
    return _SPACES.sub(" ", _TAG.sub("", text)).strip()


def cue_turns(lines: Sequence[str], aliases: Mapping[str, str]) -> tuple[Turn, ...]:
    """The turns of a cue's raw lines: a new turn starts at each line that names a speaker.

    >>> cue_turns(["ALAN: You never ask.", "- EVELYN: I do!"], {})
    (Turn(speaker='Alan', text='You never ask.'), Turn(speaker='Evelyn', text='I do!'))
    >>> cue_turns(["<v Alan>Fine.", "really."], {"alan": "Alan"})
    (Turn(speaker='Alan', text='Fine. really.'),)
    """
    turns: list[list[str | None]] = []
    for raw in lines:
        tagged = _VOICE.match(raw)
        speaker = aliases.get(tagged[1].strip().casefold(), tagged[1].strip()) if tagged else None
        labelled, rest = split_speaker(clean_text(raw), aliases)
        speaker = speaker or labelled
        text = clean_text(_DASH.sub("", rest))
        if not text:
            continue
        if speaker is not None or not turns:
            turns.append([speaker, text])
        else:
            turns[-1][1] = f"{turns[-1][1]} {text}"
    return tuple(Turn(speaker, str(text)) for speaker, text in turns)


def read_subtitles(
    path: Path,
    participants: Sequence[str] = (),
    therapist_names: Sequence[str] = (),
    speaker_map: Mapping[str, str] | None = None,
) -> SubtitleTrack:
    """Read an SRT or VTT file (by suffix; other suffixes by content). Problems are returned, not raised.

    Raises:
        DataError: the file cannot be read at all (missing, not UTF-8, a .vtt without the WEBVTT header).
    """
    text = _read_text(path)
    kind = _format(path, text)
    aliases = speaker_aliases(participants, therapist_names, speaker_map)
    cues: list[Cue] = []
    issues: list[Issue] = []
    blocks = list(_cue_blocks(text, kind))
    for number, (line, block) in enumerate(blocks, start=1):
        cut = _cut_short(text, number, line, block, len(blocks), str(path))
        cue, found = _parse_block(block, kind, number, line, aliases, str(path))
        issues.extend(found)
        if cut is not None and not any(i.severity == "error" for i in found):
            issues.append(cut)
        if cue is not None and (cut is None or cut.severity == "warning"):
            cues.append(cue)
    ordered = sorted(cues, key=lambda c: (c.start, c.number))
    issues.extend(_order_issues(cues, ordered, str(path)))
    issues.extend(_speaker_issues(ordered, aliases, str(path)))
    if not ordered and not any(i.severity == "error" for i in issues):
        issues.append(Issue("error", "no cues with text found", str(path)))
    return SubtitleTrack(str(path), kind, tuple(ordered), tuple(issues))


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: no such subtitle file") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 (bad byte at offset {exc.start}); re-save it as UTF-8") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _format(path: Path, text: str) -> SubtitleFormat:
    suffix = path.suffix.lower()
    header = text.lstrip().startswith("WEBVTT")
    if suffix == ".vtt" and not header:
        raise DataError(f"{path}:1: a WebVTT file must start with 'WEBVTT'")
    if suffix == ".srt":
        return "srt"
    return "vtt" if header else "srt"


def _cue_blocks(text: str, kind: SubtitleFormat) -> Iterator[tuple[int, str]]:
    """(first line, text) of each cue block; the VTT header and NOTE/STYLE/REGION blocks are skipped."""
    lines = text.split("\n")
    start: int | None = None
    for number, line in enumerate([*lines, ""], start=1):
        if line.strip() and start is None:
            start = number
        elif not line.strip() and start is not None:
            block = "\n".join(lines[start - 1 : number - 1])
            first = block.lstrip().split("\n", 1)[0]
            skip = kind == "vtt" and (first.startswith("WEBVTT") or first.split(" ", 1)[0] in _VTT_META)
            if not skip:
                yield start, block
            start = None


_VTT_META = frozenset({"NOTE", "STYLE", "REGION"})


def _cut_short(text: str, number: int, line: int, block: str, count: int, file: str) -> Issue | None:
    """A problem when the file stops inside its last cue (no line end after the cue's last line).

    Writers end every line, the last included, so a file that stops mid-line was probably cut (a copy or
    download that did not finish) and its last cue would be ingested with half its words. When the last
    line still ends like a sentence the cue is likely whole (some editors drop the final line break): a
    warning, and the cue is kept; otherwise an error.
    """
    if number != count or text.endswith("\n"):
        return None
    last = block.rstrip("\n").split("\n")
    tail = last[-1].strip()
    where = f"no line end after line {line + len(last) - 1}, {tail[-40:]!r}"
    if len(last) > 1 and clean_text(tail).endswith(_SENTENCE_ENDS):
        return Issue("warning", f"the file ends without a line break ({where}): check that it is complete",
                     file, line, number)  # fmt: skip
    return Issue(
        "error",
        f"the file ends in the middle of this cue ({where}): it was probably cut short. Restore the whole "
        "file; if it is complete, end it with a line break",
        file, line, number,
    )  # fmt: skip


_SENTENCE_ENDS = (".", "!", "?", "…", '"', "'", "”", "’", ")", "]", "♪")


def _parse_block(
    block: str, kind: SubtitleFormat, number: int, line: int, aliases: Mapping[str, str], file: str
) -> tuple[Cue | None, list[Issue]]:
    def issue(severity: Severity, message: str) -> Issue:
        return Issue(severity, message, file, line, number)

    parsed = _parse_srt(block) if kind == "srt" else _parse_vtt(block)
    if isinstance(parsed, str):
        return None, [issue("error", parsed)]
    start, end, lines = parsed
    if end < start:
        return None, [issue("error", f"ends before it starts ({_clock(start)} --> {_clock(end)})")]
    if end == start:
        return None, [issue("error", f"has no duration ({_clock(start)} --> {_clock(end)})")]
    turns = cue_turns(lines, aliases)
    if not turns:
        return None, [issue("warning", "has no text; it gives no row")]
    return Cue(number, line, start, end, turns), []


def _parse_srt(block: str) -> tuple[float, float, list[str]] | str:
    try:
        subs = list(srt.parse(block + "\n"))
    except (srt.SRTParseError, OverflowError, ValueError):  # a clock too large for a timedelta overflows
        expected = "an index line, then 'HH:MM:SS,mmm --> HH:MM:SS,mmm'"
        return f"not a valid SRT cue (expected {expected}): {_head(block)}"
    if len(subs) != 1:
        return f"not a valid SRT cue: {_head(block)}"
    sub = subs[0]
    return sub.start.total_seconds(), sub.end.total_seconds(), sub.content.split("\n")


def _parse_vtt(block: str) -> tuple[float, float, list[str]] | str:
    timing = next((row for row in block.split("\n")[:2] if "-->" in row), None)
    if timing is None:
        return f"no timing line ('HH:MM:SS.mmm --> HH:MM:SS.mmm'): {_head(block)}"
    try:
        captions = webvtt.from_string("WEBVTT\n\n" + block + "\n").captions
    except Exception:  # webvtt-py raises several unrelated types for a bad cue
        captions = []
    if len(captions) != 1:
        return f"not a valid WebVTT cue timing: {timing.strip()!r}"
    caption = captions[0]
    return _seconds(caption.start_time), _seconds(caption.end_time), list(caption.lines)


def _seconds(stamp: webvtt.models.Timestamp) -> float:
    return float(stamp.hours * 3600 + stamp.minutes * 60 + stamp.seconds) + stamp.milliseconds / 1000


def _head(block: str) -> str:
    first = " / ".join(row.strip() for row in block.strip().split("\n")[:2])
    return repr(first if len(first) <= 80 else first[:77] + "...")


def _clock(seconds: float) -> str:
    """
    >>> _clock(3725.5), _clock(1.9996)
    ('01:02:05.500', '00:00:02.000')
    """
    whole, millis = divmod(round(seconds * 1000), 1000)
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}.{millis:03d}"


def _order_issues(read: Sequence[Cue], ordered: Sequence[Cue], file: str) -> Iterator[Issue]:
    for before, cue in itertools.pairwise(read):
        if cue.start < before.start:
            yield Issue(
                "warning", f"starts before cue {before.number} (out of order; cues are sorted by time)", file,
                cue.line, cue.number,
            )  # fmt: skip
    for before, cue in itertools.pairwise(ordered):
        if cue.start < before.end:
            yield Issue(
                "warning",
                f"overlaps cue {before.number} by {before.end - cue.start:.3f} s "
                f"({_clock(cue.start)} starts before {_clock(before.end)})",
                file, cue.line, cue.number,
            )  # fmt: skip


def _speaker_issues(cues: Sequence[Cue], aliases: Mapping[str, str], file: str) -> Iterator[Issue]:
    known = set(aliases.values())
    for cue in cues:
        for turn in cue.turns:
            if turn.speaker is not None and turn.speaker not in known:
                yield Issue("warning", _unknown_speaker(turn.speaker, known), file, cue.line, cue.number)


def _unknown_speaker(speaker: str, known: set[str]) -> str:
    """The warning for a speaker label nobody is known by, with the name it is one letter away from."""
    near = sorted(name for name in known if one_edit_apart(speaker, name))
    if near:
        return (
            f"speaker {speaker!r} is neither a participant nor the therapist; did you mean {near[0]!r}? "
            f"(--speaker-map '{speaker}={near[0]}' reads it as {near[0]})"
        )
    return (
        f"speaker {speaker!r} is neither a participant nor the therapist "
        "(add it to --participants, to --therapist-names if it is the therapist, "
        "or map it with --speaker-map)"
    )
