"""The chaos server: seeded fault rates, deterministic answers, keys, sessions, hooks and the freeze."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from collections import Counter
from typing import Any

import pytest
from tests.fakes.chaos_server import (
    NO_FAULTS,
    ChaosServer,
    FaultRates,
    Outcome,
    chaos_reply,
    plan_outcome,
)

from rescue_bench.engine.execute import Engine, EngineOptions
from rescue_bench.models.base import Generation
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import get_preset
from rescue_bench.records import Request

ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "predictions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "enum": ["c1", "c2", "c3"]},
                    "should_speak": {"type": "string", "enum": ["yes", "no"]},
                    "ranked": {
                        "type": "array",
                        "items": {"type": "string", "enum": list("abcdef")},
                        "maxItems": 3,
                    },
                    "intensity": {"type": "integer", "minimum": 0, "maximum": 10},
                    "reason": {"type": "string"},
                },
            },
        }
    },
}


def test_fault_frequencies_follow_the_rates() -> None:
    rates = FaultRates()
    n = 40_000
    seen: Counter[str] = Counter(plan_outcome(7, f"key{i}", 1, rates, 0, 3) for i in range(n))
    expected = {
        "http_500": rates.server_error,
        "http_429": rates.rate_limit,
        "timeout": rates.timeout,
        "truncated_json": rates.bad_body / 2,
        "html_body": rates.bad_body / 2,
        "reset": rates.reset,
    }
    for outcome, rate in expected.items():
        assert abs(seen[outcome] / n - rate) < 0.005, (outcome, seen[outcome] / n)
    assert abs(seen["ok"] / n - (1 - rates.total)) < 0.01


def test_faults_are_seeded_and_capped() -> None:
    rates = FaultRates(server_error=1.0)
    assert [plan_outcome(1, "k", n, rates, n - 1, 3) for n in range(1, 5)] == ["http_500"] * 3 + ["ok"]
    storm = FaultRates()
    first = [plan_outcome(3, f"k{i}", 2, storm, 0, 3) for i in range(500)]
    assert first == [plan_outcome(3, f"k{i}", 2, storm, 0, 3) for i in range(500)]
    assert first != [plan_outcome(4, f"k{i}", 2, storm, 0, 3) for i in range(500)]


def test_replies_depend_on_content_only_and_are_sometimes_flawed() -> None:
    styles: Counter[str] = Counter()
    for i in range(600):
        messages = [{"role": "user", "content": f"conversation {i}"}]
        text = chaos_reply(messages, ITEM_SCHEMA)
        assert text == chaos_reply(json.loads(json.dumps(messages)), ITEM_SCHEMA)
        try:
            payload = json.loads(text[text.find("{") : text.rfind("}") + 1]) if "{" in text else None
        except ValueError:
            payload = None
        if payload is None:
            styles["prose"] += 1
            continue
        entries = payload["predictions"]
        styles["missing"] += len(entries) < 3
        styles["bad_label"] += any("not_a_label" in json.dumps(e) for e in entries)
        styles["fenced"] += text.startswith("Here")
        for entry in entries:
            assert 0 <= entry["intensity"] <= 10 and entry["should_speak"] in ("yes", "no", "not_a_label")
    assert all(styles[k] > 0 for k in ("prose", "missing", "bad_label", "fenced")), styles
    assert styles["prose"] + styles["missing"] + styles["bad_label"] < 120


def post(url: str, body: dict[str, Any], timeout: float = 5.0) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def body(text: str) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [{"role": "user", "content": text}],
        "max_tokens": 50,
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": ITEM_SCHEMA}},
    }


def settled(server: ChaosServer) -> list[Any]:
    """The log once the server has marked its last answer delivered (it does so right after writing it)."""
    for _ in range(100):
        entries = server.entries()
        if entries[-1].delivered:
            break
        threading.Event().wait(0.01)
    return entries


def test_sessions_label_connections_and_hooks_fire() -> None:
    fired: list[int] = []
    with ChaosServer(rates=NO_FAULTS, latency=0.0) as server:
        server.begin_session(4)
        server.hook_at(2, lambda: fired.append(server.admitted()))
        for i in range(3):
            status, raw = post(server.base_url, body(f"hello {i}"))
            assert status == 200
            assert json.loads(raw)["choices"][0]["message"]["content"] == server.entries()[-1].reply
        entries = settled(server)
    assert [e.session for e in entries] == [4, 4, 4]
    assert all(e.delivered and e.outcome == "ok" and e.nth == 1 for e in entries)
    assert fired == [2]


def test_freeze_holds_responses_until_the_session_ends() -> None:
    results: list[Any] = []
    with ChaosServer(rates=NO_FAULTS, latency=0.0) as server:
        server.begin_session(1)
        server.freeze_at(1)

        def call() -> None:
            try:
                results.append(post(server.base_url, body("held"), timeout=10))
            except Exception as exc:  # the abandoned connection is closed without an answer
                results.append(exc)

        thread = threading.Thread(target=call)
        thread.start()
        while server.frozen_since is None:
            thread.join(0.01)
        thread.join(0.5)
        assert thread.is_alive(), "a frozen server answered"
        held = server.entries()
        server.begin_session(2)
        thread.join(5)
        status, _ = post(server.base_url, body("after"))
        entries = settled(server)
    assert len(held) == 1 and not held[0].delivered
    assert isinstance(results[0], Exception), results
    assert not entries[0].delivered and entries[1].delivered and entries[1].session == 2 and status == 200


KINDS: dict[str, set[Outcome]] = {
    "server_error": {"http_500"},
    "rate_limit": {"http_429"},
    "timeout": {"timeout"},
    "bad_body": {"truncated_json", "html_body"},
    "reset": {"reset"},
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_engine_retries_every_fault_and_records_the_server_attempts(kind: str) -> None:
    """Each fault kind twice in a row, then the answer: 3 attempts, and the engine gets the clean text."""
    rates = FaultRates(**{name: float(name == kind) for name in KINDS})
    with ChaosServer(rates=rates, latency=0.0, hang=1.0, retry_after=0.05, max_streak=2) as server:
        outcomes = asyncio.run(_ask_three(server))
        entries = server.entries()
    by_key = Counter(e.key for e in entries)
    for outcome in outcomes:
        key = outcome.request.content_key()
        assert outcome.reply.ok, outcome.reply.error
        assert outcome.reply.attempts == by_key[key]
        assert outcome.reply.text == next(e.reply for e in entries if e.key == key and e.outcome == "ok")
    assert len(entries) == 9
    assert {e.outcome for e in entries if e.outcome != "ok"} <= KINDS[kind]


async def _ask_three(server: ChaosServer) -> list[Any]:
    provider = OpenAICompatProvider(
        "m", preset=get_preset("vllm"), base_url=server.base_url, api_key="sk-test", timeout=0.5
    )
    options = EngineOptions(
        concurrency=4, adaptive=False, retry_base=0.01, retry_cap=0.05, max_retries=4, use_cache=False
    )
    engine = Engine(provider, Generation(), options)
    requests = [
        Request(
            task="t",
            messages=({"role": "user", "content": f"item {i}"},),
            response_schema=ITEM_SCHEMA,
            instance_ids=(f"i{i}",),
            max_tokens=64,
        )
        for i in range(3)
    ]
    try:
        return list(await asyncio.gather(*(engine.ask(r) for r in requests)))
    finally:
        await provider.aclose()
