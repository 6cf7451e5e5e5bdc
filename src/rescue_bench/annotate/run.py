"""``annotate draft`` over a whole work directory, through the engine (cache, concurrency, retries).

Segments go in groups of :data:`SEGMENTS_PER_ROUND`: all first-round requests of a group are sent at once,
then the repair requests, then the group's drafts are written. A segment with a ``draft.json`` is skipped
unless ``force``; a segment whose request failed gets no draft and is asked again on the next run (replies
already received come from the response cache, so they are not paid twice).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rescue_bench.annotate.draft import (
    Chunk,
    Counts,
    DraftResult,
    DraftSettings,
    assemble,
    build_request,
    chunk_indices,
    evaluate,
    repair_request,
    row_frames,
)
from rescue_bench.annotate.rules import RuleContext
from rescue_bench.engine.execute import EngineOptions, execute_requests
from rescue_bench.models.base import Generation, Provider
from rescue_bench.pricing import Prices, TaskEstimate, TokenCounter, estimate_requests
from rescue_bench.records import Reply, Request
from rescue_bench.rundir.cache import ResponseCache
from rescue_bench.workdir import (
    DRAFT_FILE,
    SegmentManifest,
    WorkdirInfo,
    manifest_paths,
    read_info,
    read_manifest,
    write_draft,
    write_info,
)

SEGMENTS_PER_ROUND = 8


@dataclass(frozen=True, slots=True)
class Pending:
    segments: tuple[SegmentManifest, ...]
    skipped: tuple[str, ...]


def pending_segments(root: Path, *, force: bool) -> Pending:
    """Segments to draft (all with ``force``, else those without ``draft.json``) and the skipped ids."""
    todo: list[SegmentManifest] = []
    skipped: list[str] = []
    for path in manifest_paths(root):
        segment = read_manifest(path)
        if (path.parent / DRAFT_FILE).is_file() and not force:
            skipped.append(segment.segment_id)
        else:
            todo.append(segment)
    return Pending(tuple(todo), tuple(skipped))


def first_requests(
    root: Path, segment: SegmentManifest, info: WorkdirInfo, settings: DraftSettings
) -> list[Chunk]:
    """The first-round chunks of one segment (with frames extracted when ``settings.frames``)."""
    chunks = []
    for indices in chunk_indices(len(segment.rows), settings.rows_per_request):
        frames = row_frames(root, segment, indices, settings) if settings.frames else None
        request = build_request(segment, indices, info.video_duration_sec, settings, frames)
        chunks.append(Chunk(segment, indices, request))
    return chunks


def rule_context(segment: SegmentManifest, info: WorkdirInfo) -> RuleContext:
    return RuleContext(
        segment.scenario, segment.participants, {r.index: r for r in segment.rows}, info.video_duration_sec
    )


async def draft_workdir(
    root: Path,
    provider: Provider,
    params: Generation,
    settings: DraftSettings,
    *,
    force: bool = False,
    engine_options: EngineOptions | None = None,
    cache: ResponseCache | None = None,
    log: Callable[[str], None] = print,
    prices: Prices | None = None,
    counts: Counts | None = None,
) -> Counts:
    """Draft every pending segment of ``root``; see the module docstring.

    With ``prices``, the spend of each finished group is added to ``workdir.json`` (``draft_spend_usd``), so
    it adds up over interrupted and resumed sessions. ``counts`` is filled in as the work goes (the caller
    keeps it to report an interruption).
    """
    info = read_info(root)
    pending = pending_segments(root, force=force)
    counts = counts if counts is not None else Counts()
    counts.skipped = list(pending.skipped)
    segments = pending.segments
    for start in range(0, len(segments), SEGMENTS_PER_ROUND):
        group = segments[start : start + SEGMENTS_PER_ROUND]
        chunks = [chunk for segment in group for chunk in first_requests(root, segment, info, settings)]
        results = await _rounds(chunks, info, provider, params, engine_options, cache, counts)
        for segment in group:
            own = [r for r in results if r.chunk.segment.segment_id == segment.segment_id]
            _finish(root, segment, own, provider.name, counts, log)
        if prices is not None:
            record_spend(root, prices, counts)
    if prices is not None and counts.spent_usd is None:  # nothing to draft: still report the total
        record_spend(root, prices, counts)
    return counts


def record_spend(root: Path, prices: Prices, counts: Counts) -> None:
    """Add the cost of the tokens received since the last call to ``counts`` and to ``workdir.json``."""
    prompt = counts.prompt_tokens - counts.priced_prompt_tokens
    completion = counts.completion_tokens - counts.priced_completion_tokens
    cost = prices.cost(prompt, completion)
    counts.priced_prompt_tokens, counts.priced_completion_tokens = (
        counts.prompt_tokens,
        counts.completion_tokens,
    )
    counts.spent_usd = (counts.spent_usd or 0.0) + cost
    info = read_info(root)
    total = (info.draft_spend_usd or 0.0) + cost
    if cost:
        write_info(root, replace(info, draft_spend_usd=total))
    counts.spent_total_usd = total


async def _rounds(
    chunks: Sequence[Chunk],
    info: WorkdirInfo,
    provider: Provider,
    params: Generation,
    options: EngineOptions | None,
    cache: ResponseCache | None,
    counts: Counts,
) -> list[DraftResult]:
    results = [DraftResult(chunk) for chunk in chunks]
    replies = await _ask([c.request for c in chunks], provider, params, options, cache, counts)
    for result, reply in zip(results, replies, strict=True):
        if reply.ok:
            result.first = evaluate(reply.text, result.chunk, rule_context(result.chunk.segment, info))
        else:
            result.error = reply.error
    to_repair = [r for r in results if r.first is not None and r.first.violations]
    repairs = [repair_request(r.chunk, r.first) for r in to_repair if r.first is not None]
    counts.repairs += len(repairs)
    for result, reply in zip(
        to_repair, await _ask(repairs, provider, params, options, cache, counts), strict=True
    ):
        # A failed repair request leaves the first answer standing, with its violations listed.
        if reply.ok:
            result.repaired = evaluate(reply.text, result.chunk, rule_context(result.chunk.segment, info))
    return results


async def _ask(
    requests: Sequence[Request],
    provider: Provider,
    params: Generation,
    options: EngineOptions | None,
    cache: ResponseCache | None,
    counts: Counts,
) -> list[Reply]:
    if not requests:
        return []
    replies = await execute_requests(requests, provider, params, engine_options=options, cache=cache)
    counts.requests += len(replies)
    for reply in replies:
        counts.cached += reply.cached
        if not reply.cached:
            counts.prompt_tokens += reply.usage.prompt_tokens
            counts.completion_tokens += reply.usage.completion_tokens
    return replies


def _finish(
    root: Path,
    segment: SegmentManifest,
    results: Sequence[DraftResult],
    model: str,
    counts: Counts,
    log: Callable[[str], None],
) -> None:
    failed = [r for r in results if r.error is not None]
    if failed:
        counts.failed.append(segment.segment_id)
        log(f"{segment.segment_id}: request failed ({failed[0].error}); no draft written, re-run to retry")
        return
    draft = assemble(segment, results, model)
    write_draft(root, segment.segment_id, draft)
    flagged = len(draft.violations)
    counts.drafted.append(segment.segment_id)
    counts.rows += len(draft.rows)
    counts.flagged_rows += flagged
    repaired = sum(1 for r in results if r.repaired is not None)
    log(
        f"{segment.segment_id}: {len(draft.rows)} rows, {flagged} with open violations, "
        f"{repaired}/{len(results)} request(s) repaired ({draft.status})"
    )


def estimate_workdir(
    root: Path, settings: DraftSettings, counter: TokenCounter, *, force: bool
) -> TaskEstimate:
    """First-round requests and prompt tokens of the pending segments (repairs and images come on top)."""
    info = read_info(root)
    text_only = replace(settings, frames=0)
    segments = pending_segments(root, force=force).segments
    requests = [
        build_request(segment, indices, info.video_duration_sec, text_only)
        for segment in segments
        for indices in chunk_indices(len(segment.rows), settings.rows_per_request)
    ]
    return estimate_requests("annotate", sum(len(s.rows) for s in segments), requests, counter)
