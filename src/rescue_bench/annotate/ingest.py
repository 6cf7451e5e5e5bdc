"""``annotate ingest``: a video and its subtitles in, a work directory of segment manifests and row clips out.

Steps:

1. read the subtitles (:mod:`rescue_bench.annotate.subtitles`); malformed cues stop the ingest with every one
   of them listed, unless ``allow_bad_cues`` turns them into warnings and leaves those cues out;
2. fit the cues to the video: a cue that starts at or after the video's end is an error (the same switch
   applies); a cue that ends after it is cut back to the end, with a warning;
3. split into segments: by default the whole file is one segment (the paper cut its segments by hand, one
   video and subtitle file each); with ``split_gap`` a new segment starts wherever the silence between two
   cues is longer than that many seconds. Segments shorter than ``min_segment_sec`` (120 s, the paper's rule)
   are dropped and reported;
4. one row per speaker turn: a cue gives one row, or one row per speaker when its lines name several (each
   keeps the cue's times, because the subtitles say nothing finer);
5. cut one clip per row with ffmpeg, measure it with ffprobe, and write the manifests and ``workdir.json``.

Times stay those of the subtitle file, in seconds. Re-running the same command on the same work directory
resumes: clips already cut with the right duration are kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from rescue_bench import media
from rescue_bench.annotate.subtitles import Cue, Issue, SubtitleTrack, read_subtitles
from rescue_bench.errors import ConfigError, DataError
from rescue_bench.taxonomy import NON_CLIENT_SPEAKERS, Scenario
from rescue_bench.workdir import (
    CLIPS_DIR,
    DRAFT_FILE,
    WORKDIR_FILE,
    ManifestRow,
    SegmentManifest,
    WorkdirInfo,
    read_info,
    read_manifest,
    segment_dir,
    write_info,
    write_manifest,
)

DURATION_TOLERANCE = 0.1
"""Seconds a kept clip may differ from its row before it is cut again."""


@dataclass(frozen=True, slots=True)
class IngestSettings:
    scenario: Scenario
    participants: tuple[str, ...]
    therapist_names: tuple[str, ...] = ()
    min_segment_sec: float = 120.0
    split_gap: float | None = None
    """Start a new segment at a silence longer than this (seconds); ``None``: one segment per file."""
    id_prefix: str | None = None
    """Sample ids are ``<prefix>/segNN``; default: the video's file name without suffix."""
    allow_bad_cues: bool = False
    jobs: int = 2
    """ffmpeg processes at once."""
    speaker_map: tuple[tuple[str, str], ...] = ()
    """(subtitle label, participant or Therapist): labels the subtitles spell otherwise."""


@dataclass(frozen=True, slots=True)
class IngestResult:
    root: Path
    segments: tuple[SegmentManifest, ...]
    dropped: tuple[str, ...]
    warnings: tuple[str, ...]
    clips_cut: int
    clips_kept: int


def check_settings(settings: IngestSettings) -> None:
    """Participants and thresholds that can work; :class:`ConfigError` otherwise."""
    names = settings.participants
    reserved = [n for n in names if n in NON_CLIENT_SPEAKERS]
    if reserved:
        raise ConfigError(f"--participants: {reserved[0]!r} is reserved; list only the people on screen")
    if len(set(names)) != len(names) or not all(n.strip() for n in names):
        raise ConfigError("--participants: names must be non-empty and distinct")
    low, high = (2, 3) if settings.scenario == "couple" else (2, None)
    if len(names) < low or (high is not None and len(names) > high):
        wanted = "2 or 3" if high else "at least 2"
        raise ConfigError(
            f"--participants: a {settings.scenario} segment has {wanted} people (got {len(names)})"
        )
    if settings.min_segment_sec < 0 or (settings.split_gap is not None and settings.split_gap <= 0):
        raise ConfigError("--min-segment-sec must be >= 0 and --split-gap > 0")
    if settings.jobs < 1:
        raise ConfigError(f"--jobs must be at least 1 (got {settings.jobs})")
    for label, name in settings.speaker_map:
        if not label.strip() or name not in (*names, "Therapist"):
            raise ConfigError(
                f"--speaker-map {label}={name}: map a subtitle label to one of "
                f"{', '.join([*names, 'Therapist'])}"
            )


def fit_to_video(cues: Sequence[Cue], duration: float, file: str) -> tuple[list[Cue], list[Issue]]:
    """Cues that lie within the video: later starts are errors, later ends are cut back (with a warning)."""
    kept: list[Cue] = []
    issues: list[Issue] = []
    for cue in cues:
        if cue.start >= duration:
            message = f"starts at {cue.start:.3f} s, at or after the end of the video ({duration:.3f} s)"
            issues.append(Issue("error", message, file, cue.line, cue.number))
            continue
        if cue.end > duration:
            message = (
                f"ends at {cue.end:.3f} s, after the end of the video ({duration:.3f} s); cut back to it"
            )
            issues.append(Issue("warning", message, file, cue.line, cue.number))
            cue = replace(cue, end=duration)
        kept.append(cue)
    return kept, issues


def split_segments(cues: Sequence[Cue], gap: float | None) -> list[tuple[Cue, ...]]:
    """Runs of cues separated by silences longer than ``gap`` seconds (one run when ``gap`` is ``None``)."""
    segments: list[list[Cue]] = []
    for cue in cues:
        if segments and (gap is None or cue.start - max(c.end for c in segments[-1]) <= gap):
            segments[-1].append(cue)
        else:
            segments.append([cue])
    return [tuple(s) for s in segments]


def segment_rows(cues: Sequence[Cue]) -> tuple[ManifestRow, ...]:
    """One row per speaker turn, numbered from 1, without clips yet."""
    rows: list[ManifestRow] = []
    for cue in cues:
        for turn in cue.turns:
            rows.append(
                ManifestRow(len(rows) + 1, cue.start, cue.end, turn.speaker, turn.text, cue=cue.number)
            )
    return tuple(rows)


def slug(text: str) -> str:
    """A file-system friendly id.

    >>> slug("Alan & Evelyn (ep. 1)"), slug("couple_therapy/alan")
    ('Alan-Evelyn-ep.-1', 'couple_therapy-alan')
    """
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "video"


def plan_segments(
    cues: Sequence[Cue], settings: IngestSettings, prefix: str
) -> tuple[list[SegmentManifest], list[str]]:
    """Segment manifests (no clips yet) and one message per dropped segment.

    Segments are numbered over all segments, dropped ones included, so that an id does not change when
    ``min_segment_sec`` does.
    """
    kept: list[SegmentManifest] = []
    dropped: list[str] = []
    for number, run in enumerate(split_segments(cues, settings.split_gap), start=1):
        start, end = run[0].start, max(c.end for c in run)
        segment_id = f"{slug(prefix)}_seg{number:02d}"
        if end - start < settings.min_segment_sec:
            dropped.append(
                f"dropped segment {segment_id} (cues {run[0].number}-{run[-1].number}, {end - start:.1f} s): "
                f"shorter than {settings.min_segment_sec:g} s"
            )
            continue
        kept.append(
            SegmentManifest(
                segment_id=segment_id,
                sample_id=f"{prefix}/seg{number:02d}",
                scenario=settings.scenario,
                participants=settings.participants,
                start_time=start,
                end_time=end,
                rows=segment_rows(run),
            )
        )
    return kept, dropped


def usable_cues(
    track: SubtitleTrack, duration: float, settings: IngestSettings
) -> tuple[list[Cue], list[str]]:
    """The cues to build rows from, and the warnings to show; :class:`DataError` for blocking problems."""
    cues, fitted = fit_to_video(track.cues, duration, track.path)
    problems = [*track.issues, *fitted]
    errors = [i for i in problems if i.severity == "error"]
    if errors and not settings.allow_bad_cues:
        listing = "\n".join(i.render() for i in errors[:20])
        more = f"\n(and {len(errors) - 20} more)" if len(errors) > 20 else ""
        raise DataError(
            f"{track.path}: {len(errors)} cue problem(s); fix them, or pass --skip-bad-cues to leave those "
            f"cues out:\n{listing}{more}"
        )
    warnings = [i.render() if i.severity == "warning" else f"{i.render()} (skipped)" for i in problems]
    if not cues:
        raise DataError(f"{track.path}: no usable cues")
    return cues, warnings


def ingest(
    video: Path, subtitles: Path, out: Path, settings: IngestSettings, log: Callable[[str], None] = print
) -> IngestResult:
    """Build (or resume) the work directory ``out``; see the module docstring."""
    check_settings(settings)
    tools = media.find_tools()
    if not video.is_file():
        raise DataError(f"{video}: no such video file")
    duration = media.probe_duration(video, tools)
    track = read_subtitles(
        subtitles, settings.participants, settings.therapist_names, dict(settings.speaker_map)
    )
    cues, warnings = usable_cues(track, duration, settings)
    prefix = settings.id_prefix or slug(video.stem)
    segments, dropped = plan_segments(cues, settings, prefix)
    if not segments:
        raise DataError(
            f"{subtitles}: every segment is shorter than {settings.min_segment_sec:g} s "
            f"({'; '.join(dropped)}); lower --min-segment-sec or set --split-gap"
        )
    info = WorkdirInfo(
        scenario=settings.scenario,
        participants=settings.participants,
        video=str(video.resolve()),
        subtitles=str(subtitles.resolve()),
        created=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        video_duration_sec=round(duration, 3),
        settings=_settings_record(settings),
    )
    _prepare(out, info, segments)
    with ThreadPoolExecutor(max_workers=settings.jobs) as pool:
        clipped = [_with_clips(out, video, segment, pool, tools) for segment in segments]
    cut = kept = 0
    for done, reused in clipped:
        write_manifest(out, done)
        cut, kept = cut + len(done.rows) - reused, kept + reused
        log(f"{done.segment_id}: {len(done.rows)} rows, {done.duration:.1f} s ({reused} clips kept)")
    write_info(out, info)
    return IngestResult(out, tuple(r[0] for r in clipped), tuple(dropped), tuple(warnings), cut, kept)


def _settings_record(settings: IngestSettings) -> dict[str, object]:
    return {
        "therapist_names": list(settings.therapist_names),
        "min_segment_sec": settings.min_segment_sec,
        "split_gap": settings.split_gap,
        "id_prefix": settings.id_prefix,
        "allow_bad_cues": settings.allow_bad_cues,
    }


def _prepare(out: Path, info: WorkdirInfo, segments: Sequence[SegmentManifest]) -> None:
    """Refuse to mix inputs in one work directory, or to leave a draft behind its changed manifest."""
    if not out.exists():
        return
    if not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a directory")
    if not (out / WORKDIR_FILE).is_file():
        if any(out.iterdir()):
            raise ConfigError(f"--out {out}: directory is not empty and is not a work directory")
        return
    old = read_info(out)
    if (old.video, old.subtitles) != (info.video, info.subtitles):
        raise ConfigError(
            f"--out {out}: holds a work directory for {old.video} and {old.subtitles}; choose another --out"
        )
    for segment in segments:
        path = segment_dir(out, segment.segment_id)
        if (path / DRAFT_FILE).is_file() and (path / "manifest.json").is_file():
            before = read_manifest(path / "manifest.json")
            if [(r.start_time, r.end_time, r.speaker, r.text) for r in before.rows] != [
                (r.start_time, r.end_time, r.speaker, r.text) for r in segment.rows
            ]:
                raise ConfigError(
                    f"--out {out}: segment {segment.segment_id} has a draft made from different rows; "
                    "ingest into a new directory instead"
                )


def _with_clips(
    root: Path, video: Path, segment: SegmentManifest, pool: ThreadPoolExecutor, tools: media.Tools
) -> tuple[SegmentManifest, int]:
    """The segment with every row's clip cut (or kept) and measured; the count of kept clips."""

    def clip(row: ManifestRow) -> tuple[ManifestRow, bool]:
        relative = f"{CLIPS_DIR}/{segment.segment_id}/row_{row.index:04d}.mp4"
        path = root / relative
        wanted = row.end_time - row.start_time
        if path.is_file():
            try:
                measured = media.probe_duration(path, tools)
            except DataError:
                measured = -1.0
            if abs(measured - wanted) <= DURATION_TOLERANCE:
                return replace(row, clip_path=relative, duration_sec=round(measured, 3)), True
        measured = media.cut_clip(video, row.start_time, row.end_time, path, tools)
        return replace(row, clip_path=relative, duration_sec=round(measured, 3)), False

    results = list(pool.map(clip, segment.rows))
    rows = tuple(row for row, _ in results)
    return replace(segment, rows=rows), sum(1 for _, reused in results if reused)
