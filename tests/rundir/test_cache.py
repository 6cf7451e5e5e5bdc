"""The response cache: what hits, what misses, and safety across processes."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer

from rescue_bench.models.base import Generation
from rescue_bench.records import Reply, Request, Usage
from rescue_bench.rundir.cache import ResponseCache, cache_dir, cache_key

IDENTITY = {"provider": "openai", "base_url": "https://api.example.org/v1", "model": "gpt-x"}
SCHEMA = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}}
REQUEST = Request(
    task="itp",
    messages=({"role": "user", "content": "Should the therapist speak?"},),
    response_schema=SCHEMA,
    instance_ids=("s::itp::1",),
    max_tokens=100,
)
PARAMS = Generation()
REPLY = Reply(text='{"answer": "yes"}', reasoning="because", usage=Usage(10, 3, 2), finish_reason="stop")


def test_identical_request_hits(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite3") as cache:
        key = cache_key(IDENTITY, REQUEST, PARAMS)
        assert cache.get(key) is None
        cache.put(key, REPLY, IDENTITY, {"masked": False})
        # a freshly built but equal request has the same key
        same = Request(
            task="itp",
            messages=({"role": "user", "content": "Should the therapist speak?"},),
            response_schema=dict(SCHEMA),
            instance_ids=("s::itp::1",),
            max_tokens=100,
        )
        hit = cache.get(cache_key(dict(IDENTITY), same, Generation()))
    assert hit is not None
    reply, meta = hit
    assert (reply.text, reply.reasoning, reply.usage, reply.finish_reason) == (
        '{"answer": "yes"}',
        "because",
        Usage(10, 3, 2),
        "stop",
    )
    assert reply.cached and meta == {"masked": False}


def test_any_change_misses() -> None:
    base = cache_key(IDENTITY, REQUEST, PARAMS)
    message = ({"role": "user", "content": "Should the therapist speak now?"},)
    variants = {
        "model": cache_key({**IDENTITY, "model": "gpt-y"}, REQUEST, PARAMS),
        "provider": cache_key({**IDENTITY, "provider": "vllm"}, REQUEST, PARAMS),
        "base_url": cache_key({**IDENTITY, "base_url": "http://localhost:8000/v1"}, REQUEST, PARAMS),
        "message": cache_key(IDENTITY, replace(REQUEST, messages=message), PARAMS),
        "schema": cache_key(IDENTITY, replace(REQUEST, response_schema={"type": "object"}), PARAMS),
        "max_tokens": cache_key(IDENTITY, replace(REQUEST, max_tokens=101), PARAMS),
        # every generation setting, set: tests/models/test_generation_config.py
        "settings": cache_key(IDENTITY, REQUEST, Generation(temperature=0.7)),
    }
    assert base not in variants.values()
    assert len(set(variants.values())) == len(variants)


LOCAL = {
    "provider": "local",
    "model": "gemma-3-270m",
    "base_url": None,
    "sha256": "a" * 64,
    "runtime": "llama-cpp-python 0.3.9",
    "prompt_format": "gemma-v1",
    "max_string_length": 400,
}


def test_every_identity_field_changes_the_key() -> None:
    """Same provider, model and path but another model file (or format, cap, runtime): never a stale hit."""
    base = cache_key(LOCAL, REQUEST, PARAMS)
    changed = {
        "sha256": "b" * 64,
        "runtime": "llama-cpp-python 0.3.10",
        "prompt_format": "gemma-v2",
        "max_string_length": 200,
    }
    keys = [cache_key({**LOCAL, field: value}, REQUEST, PARAMS) for field, value in changed.items()]
    assert base not in keys and len(set(keys)) == len(keys)


def test_secret_named_fields_never_reach_the_key() -> None:
    base = cache_key(IDENTITY, REQUEST, PARAMS)
    for field in ("api_key", "Authorization", "token", "client_secret"):
        assert cache_key({**IDENTITY, field: "sk-live-123"}, REQUEST, PARAMS) == base


def test_instance_ids_do_not_change_the_key() -> None:
    # The prompt is what the model sees; the ids behind the opaque c1.. labels never reach it.
    assert cache_key(IDENTITY, replace(REQUEST, instance_ids=("other",)), PARAMS) == cache_key(
        IDENTITY, REQUEST, PARAMS
    )


def test_failures_are_not_stored(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite3") as cache:
        cache.put("k", Reply.failure("HTTP 500"), IDENTITY)
        assert cache.get("k") is None
        assert cache.stats().entries == 0


def test_stats_and_clear(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite3") as cache:
        cache.put("a", REPLY, IDENTITY)
        cache.put("b", REPLY, {**IDENTITY, "model": "other"})
        stats = cache.stats()
        assert stats.entries == 2 and stats.by_model == {"openai/gpt-x": 1, "openai/other": 1}
        assert cache.clear("openai/other") == 1
        assert cache.get("a") is not None and cache.get("b") is None
        assert cache.clear() == 1 and cache.stats().entries == 0


def test_location_follows_the_environment(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RESCUE_BENCH_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert cache_dir() == tmp_path / "elsewhere"
    with ResponseCache() as cache:
        assert cache.path.parent == tmp_path / "elsewhere"
    assert (tmp_path / "elsewhere" / "responses.sqlite3").exists()


def _writer(path: str, prefix: str, n: int) -> None:
    with ResponseCache(Path(path)) as cache:
        for i in range(n):
            cache.put(f"{prefix}{i}", REPLY, IDENTITY)
            assert cache.get(f"{prefix}{i}") is not None


@pytest.mark.subprocess
def test_concurrent_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite3")
    ResponseCache(Path(path)).close()
    ctx: Any = multiprocessing.get_context("spawn" if os.name == "nt" else "fork")
    workers = [ctx.Process(target=_writer, args=(path, f"p{k}-", 150)) for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert [w.exitcode for w in workers] == [0, 0, 0, 0]
    with ResponseCache(Path(path)) as cache:
        assert cache.stats().entries == 600


def test_keys_are_those_of_key_version_4(tmp_path: Path) -> None:
    """The key, serialized in parts, hashes the bytes of its documented form: the settings not at their
    defaults, the public identity, the request's content key and the key version."""

    def version_4(identity: dict[str, Any], request: Request, params: Generation) -> str:
        public = {k: v for k, v in identity.items() if k != "api_key"}
        settings = params.model_dump(mode="json", exclude_defaults=True)
        blob = json.dumps(
            {"v": 4, "provider": public, "request": request.content_key(), "params": settings},
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    identities = [IDENTITY, {**IDENTITY, "sha256": "ab", "api_key": "sk-x", "nom": "modèle ü"}]
    extra = {"top_k": 9, "stop": ["é", "\n"]}
    sampled = Generation(temperature=0.7, seed=99, response_format="text", disable_thinking=True, top_p=0.9)
    params = [PARAMS, sampled.model_copy(update={"extra_body": extra, "max_tokens": 5})]
    messages = ({"role": "user", "content": "Ça va? \u2014 \U0001f600"},)
    for identity in identities:
        for p in params:
            for request in (REQUEST, replace(REQUEST, messages=messages)):
                assert cache_key(identity, request, p) == version_4(identity, request, p)


def test_a_damaged_row_is_a_counted_miss_and_is_replaced(tmp_path: Path, caplog: Any) -> None:
    path = tmp_path / "c.sqlite3"
    keys = [cache_key(IDENTITY, replace(REQUEST, max_tokens=n), PARAMS) for n in (1, 2, 3, 4)]
    with ResponseCache(path) as cache:
        for key in keys:
            cache.put(key, REPLY, IDENTITY)
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE responses SET meta = '{' WHERE key = ?", (keys[0],))
        db.execute("UPDATE responses SET text = x'ff00' WHERE key = ?", (keys[1],))  # a blob
        db.execute("UPDATE responses SET prompt_tokens = 'x' WHERE key = ?", (keys[2],))
    db.close()
    with ResponseCache(path) as cache:
        assert [cache.get(k) is None for k in keys] == [True, True, True, False]
        assert cache.damaged == 3 and cache.usable
        assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
        assert "holds a damaged entry" in caplog.records[0].message
        assert "rescue-bench cache clear" in caplog.records[0].message
        cache.put(keys[0], REPLY, IDENTITY)  # asked again: the good reply takes the damaged row's place
        hit = cache.get(keys[0])
        assert hit is not None and hit[0].text == REPLY.text


@pytest.mark.subprocess
def test_a_run_over_a_damaged_cache_finishes_and_asks_only_the_damaged(tmp_path: Path) -> None:
    env = {**os.environ, "RESCUE_BENCH_CACHE_DIR": str(tmp_path / "cache")}
    with FakeOpenAIServer() as server:
        command = [
            sys.executable, "-c", "from rescue_bench.cli.main import main; main()", "run",
            "--model", "vllm/x", "--base-url", server.base_url, "--tasks", "itp", "--limit-samples", "1",
            "-q",
        ]  # fmt: skip
        first = subprocess.run(
            [*command, "--out", str(tmp_path / "a")], env=env, capture_output=True, text=True
        )
        assert first.returncode == 0, first.stderr
        asked = len(server.requests)
        db = sqlite3.connect(tmp_path / "cache" / "responses.sqlite3")
        with db:
            db.execute(
                "UPDATE responses SET meta = 'not json' WHERE rowid IN (SELECT rowid FROM responses LIMIT 2)"
            )
        db.close()
        second = subprocess.run(
            [*command, "--out", str(tmp_path / "b")], env=env, capture_output=True, text=True
        )
        assert second.returncode == 0, second.stderr
        assert len(server.requests) == asked + 2
    assert "Traceback" not in second.stderr and second.stderr.count("damaged entry") == 1
    assert second.stderr.count("2 damaged entries were asked again") == 1
    scores = json.loads((tmp_path / "b" / "scores.json").read_text())
    assert scores == json.loads((tmp_path / "a" / "scores.json").read_text())
