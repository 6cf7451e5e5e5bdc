"""Pre-annotation end to end against the fake OpenAI-compatible server (real SDK, real HTTP, real engine)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.annotate.workdirs import (
    PEOPLE,
    answer,
    asked_rows,
    broken_rows,
    good_row,
    good_rows,
    make_workdir,
    manifest,
    without_note,
)
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, Script, server_error

from rescue_bench.annotate import prompt
from rescue_bench.annotate.draft import DraftSettings, assemble, chunk_indices, read_answer
from rescue_bench.annotate.run import Counts, draft_workdir, estimate_workdir
from rescue_bench.data.checks import check_sample
from rescue_bench.data.load import build_sample
from rescue_bench.engine.execute import EngineOptions
from rescue_bench.models.base import Generation
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import get_preset
from rescue_bench.pricing import chars_counter
from rescue_bench.workdir import read_draft

Handler = Callable[[ChatRequest], "Script | str | dict[str, Any]"]
FAST = EngineOptions(
    concurrency=4, adaptive=False, max_retries=1, retry_base=0.01, retry_cap=0.02, jitter_seed=0
)


def is_repair(request: ChatRequest) -> bool:
    return request.messages[-1]["role"] == "user" and "breaks these rules" in str(
        request.messages[-1]["content"]
    )


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], FakeOpenAIServer]]:
    servers: list[FakeOpenAIServer] = []

    def start(handler: Handler) -> FakeOpenAIServer:
        servers.append(FakeOpenAIServer(handler).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def run(server: FakeOpenAIServer, root: Path, settings: DraftSettings | None = None, **kw: Any) -> Counts:
    provider = OpenAICompatProvider(
        "drafter", preset=get_preset("vllm"), base_url=server.base_url, api_key="sk-test", timeout=5.0
    )

    async def go() -> Counts:
        try:
            return await draft_workdir(
                root, provider, Generation(), settings or DraftSettings(), engine_options=FAST,
                log=lambda _: None, **kw,
            )  # fmt: skip
        finally:
            await provider.aclose()

    return asyncio.run(go())


def loads_cleanly(root: Path, segment_id: str = "ep_seg01") -> list[str]:
    """Load the draft with the package's loader and validator; return every problem found."""
    draft = read_draft(root / "segments" / segment_id / "draft.json")
    assert draft is not None
    obj = {"sample_id": "s", "scenario": "couple", "participants": list(PEOPLE), "rows": list(draft.rows)}
    sample, problems = build_sample(obj, fallback_id="s", file=None, line=None)
    assert sample is not None, [p.render() for p in problems]
    return [p.render() for p in (*problems, *check_sample(sample, file=None, line=None))]


def test_a_valid_draft_passes_without_repair(
    tmp_path: Path, serve: Callable[[Handler], FakeOpenAIServer]
) -> None:
    root = make_workdir(tmp_path / "work")
    server = serve(lambda req: answer(good_rows(asked_rows(req))))
    counts = run(server, root)
    assert server.count == 1 and counts.repairs == 0
    draft = read_draft(root / "segments" / "ep_seg01" / "draft.json")
    assert draft is not None and draft.status == "clean" and draft.violations == {}
    assert draft.model == "vllm/drafter"
    assert list(draft.rows) == [without_note(good_row(i)) for i in range(1, 6)]
    assert loads_cleanly(root) == []
    # the request: system rules + the segment as JSON lines, and a schema with one row per asked index
    body = server.requests[0].body
    assert body["response_format"]["type"] == "json_schema"
    assert "Generic labels such as validation" in body["messages"][0]["content"]
    assert (
        '"speaker": "Nora", "text": "He never plans anything with me.", "annotate": true'
        in body["messages"][1]["content"]
    )
    assert counts.drafted == ["ep_seg01"] and counts.flagged_rows == 0


def test_a_rule_breaking_draft_is_sent_back_with_its_violations_and_the_repair_passes(
    tmp_path: Path, serve: Callable[[Handler], FakeOpenAIServer]
) -> None:
    root = make_workdir(tmp_path / "work")
    server = serve(
        lambda req: answer(good_rows(asked_rows(req)) if is_repair(req) else broken_rows(asked_rows(req)))
    )
    counts = run(server, root)
    assert server.count == 2 and counts.repairs == 1
    repair = server.requests[1].messages
    assert repair[-2] == {"role": "assistant", "content": answer(broken_rows([1, 2, 3, 4, 5]))}
    listing = repair[-1]["content"]
    assert "- row 2: target[0]: 'Dr. Reed' is outside the closed set" in listing
    assert "- row 4: support_strategy[0].strategy_type: 'validation' is a generic label" in listing
    assert "- row 5: dialogue_cleaned: must keep the subtitle's words" in listing
    assert "rows 1-5" in listing
    draft = read_draft(root / "segments" / "ep_seg01" / "draft.json")
    assert draft is not None and draft.status == "clean" and draft.violations == {}
    assert loads_cleanly(root) == []


def test_a_draft_that_stays_wrong_is_kept_with_its_violations(
    tmp_path: Path, serve: Callable[[Handler], FakeOpenAIServer]
) -> None:
    root = make_workdir(tmp_path / "work")
    server = serve(lambda req: answer(broken_rows(asked_rows(req))))
    run(server, root)
    assert server.count == 2
    draft = read_draft(root / "segments" / "ep_seg01" / "draft.json")
    assert draft is not None and draft.status == "violations"
    assert draft.rows[1]["target"] == ["Dr. Reed"]  # the model's values are kept for the reviewers
    assert draft.rows[3]["support_strategy"][0]["strategy_type"] == "validation"  # type: ignore[index]
    assert sorted(draft.violations) == ["2", "4", "5"]
    assert draft.violations["2"][0].startswith("target[0]: 'Dr. Reed' is outside the closed set")
    assert any("generic label" in v for v in draft.violations["4"])
    # the validator's warnings on the kept rows are the same problems, seen from the release format
    assert any("names nobody in the sample" in p for p in loads_cleanly(root))


def test_unreadable_answers_give_an_unusable_draft_filled_from_the_subtitles(
    tmp_path: Path, serve: Callable[[Handler], FakeOpenAIServer]
) -> None:
    root = make_workdir(tmp_path / "work")
    server = serve(lambda req: "I cannot help with that.")
    run(server, root)
    assert server.count == 2  # one repair round, then it stops
    assert 'not a JSON object with a "rows" list' in server.requests[1].messages[-1]["content"]
    draft = read_draft(root / "segments" / "ep_seg01" / "draft.json")
    assert draft is not None and draft.status == "unusable"
    assert [r["dialogue_cleaned"] for r in draft.rows] == [r.text for r in manifest().rows]
    assert draft.segment_violations == ('the answer is not a JSON object with a "rows" list',)
    assert all(
        v == ["no usable row from the model; filled from the subtitles"] for v in draft.violations.values()
    )
    assert loads_cleanly(root) == []


def test_failed_requests_write_no_draft_and_a_rerun_resumes(
    tmp_path: Path, serve: Callable[[Handler], FakeOpenAIServer]
) -> None:
    root = make_workdir(tmp_path / "work", ("ep_seg01", "ep_seg02"))
    failing = serve(
        lambda req: server_error(500) if "ep_seg02" in req.text else answer(good_rows(asked_rows(req)))
    )
    counts = run(failing, root)
    assert counts.drafted == ["ep_seg01"] and counts.failed == ["ep_seg02"]
    assert not (root / "segments" / "ep_seg02" / "draft.json").exists()
    healthy = serve(lambda req: answer(good_rows(asked_rows(req))))
    again = run(healthy, root)
    assert again.skipped == ["ep_seg01"] and again.drafted == ["ep_seg02"]
    assert healthy.count == 1
    # --force drafts everything again; what this endpoint already answered comes from the response cache
    # (ep_seg01 was answered by the other server, whose address is part of the cache key)
    forced = run(healthy, root, force=True)
    assert forced.drafted == ["ep_seg01", "ep_seg02"] and forced.cached == 1 and healthy.count == 2


def test_segments_are_asked_in_chunks(tmp_path: Path, serve: Callable[[Handler], FakeOpenAIServer]) -> None:
    root = make_workdir(tmp_path / "work")
    server = serve(lambda req: answer(good_rows(asked_rows(req))))
    run(server, root, DraftSettings(rows_per_request=2, tokens_per_row=100))
    assert sorted(asked_rows(r) for r in server.requests) == [[1, 2], [3, 4], [5]]
    assert sorted(r.body["max_tokens"] for r in server.requests) == [600, 700, 700]
    draft = read_draft(root / "segments" / "ep_seg01" / "draft.json")
    assert draft is not None and [r["row_index"] for r in draft.rows] == [1, 2, 3, 4, 5]
    assert draft.status == "clean"


def test_answers_with_missing_extra_and_unloadable_rows() -> None:
    rows = good_rows([1, 2, 3])
    rows[2]["body_posture"] = "slumped"  # a string where a list belongs: loadable as a cue, kept
    rows[1]["internal_emotion"] = {"person": "Nora"}  # an object where a list belongs: not loadable
    rows[0]["split_note"] = "turns from Nora to Eli half-way"
    text = answer([*rows, good_row(5)])
    attempt = read_answer(text, [1, 2, 3, 4])
    assert [(v.row_index, v.message) for v in attempt.violations] == [
        (None, "row_index 5 is not a row asked for"),
        (4, "missing from the answer"),
    ]
    assert attempt.notes == {1: "turns from Nora to Eli half-way"}
    assert "split_note" not in attempt.rows[1]
    from rescue_bench.annotate.draft import Chunk, DraftResult
    from rescue_bench.records import Request

    chunk = Chunk(manifest(), (1, 2, 3, 4), Request("annotate", (), {}, ("x",)))
    draft = assemble(manifest(rows=4), [DraftResult(chunk, first=attempt)], "m")
    assert "internal_emotion" not in draft.rows[1]
    assert draft.violations["2"] == [
        "internal_emotion: unreadable, left out of the draft (enter it during review)"
    ]
    assert draft.violations["1"] == ["should be split (model's note): turns from Nora to Eli half-way"]
    assert draft.violations["4"] == ["missing from the answer"]
    assert draft.rows[3] == {
        "row_index": 4, "start_time": 4.5, "end_time": 6.0, "primary_speaker": "Therapist",
        "dialogue_cleaned": "Tell him, not me.",
    }  # fmt: skip
    assert draft.segment_violations == ("rows[3]: row_index 5 is not a row asked for",)


def test_estimate_counts_first_round_requests_and_tokens(tmp_path: Path) -> None:
    root = make_workdir(tmp_path / "work", ("ep_seg01", "ep_seg02"))
    estimate = estimate_workdir(root, DraftSettings(rows_per_request=2), chars_counter(), force=False)
    assert (estimate.instances, estimate.requests) == (10, 6)
    system = prompt.system_prompt("couple", False)
    assert estimate.prompt_tokens > 6 * len(system) // 4
    assert chunk_indices(5, 2) == [(1, 2), (3, 4), (5,)]


@pytest.mark.ffmpeg
def test_frames_are_sent_as_image_parts_in_row_order(
    tmp_path: Path, test_video: Path, srt_file: Path, serve: Callable[[Handler], FakeOpenAIServer]
) -> None:
    from rescue_bench.annotate.ingest import IngestSettings, ingest

    root = tmp_path / "work"
    subs = tmp_path / "three.srt"  # the first two cues: three rows
    subs.write_text("\n\n".join(srt_file.read_text(encoding="utf-8").split("\n\n")[:2]), encoding="utf-8")
    ingest(test_video, subs, root, IngestSettings("couple", PEOPLE, min_segment_sec=1), log=lambda _: None)
    server = serve(lambda req: answer([]))
    run(server, root, DraftSettings(frames=2, frame_width=64, rows_per_request=3))
    first = min(server.requests, key=lambda r: asked_rows(r))
    parts = first.messages[1]["content"]
    assert parts[0]["type"] == "text" and '"annotate": true' in parts[0]["text"]
    labels = [p["text"] for p in parts[1:] if p["type"] == "text"]
    assert labels == [
        "Row 1: 2 frames over 1.5 s",
        "Row 2: 2 frames over 2.2 s",
        "Row 3: 2 frames over 2.2 s",
    ]
    images = [p for p in parts if p["type"] == "image_url"]
    assert len(images) == 6
    assert all(p["image_url"]["url"].startswith("data:image/jpeg;base64,/9j/") for p in images)
    assert [p["type"] for p in parts[1:4]] == ["text", "image_url", "image_url"]
    assert "Still frames of the rows to annotate follow" in first.messages[0]["content"]
