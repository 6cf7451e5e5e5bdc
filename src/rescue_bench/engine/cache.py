"""The response cache: SQLite in WAL mode, shared by every run of the user.

The key is a sha256 over everything that can change an answer: the provider's whole identity (provider, base
URL, model, and for ``local/`` the model file's sha256, prompt format, string cap and runtime), the full
messages, every generation parameter, the response format and schema, and the request's token limit. A cache
that ignores the model serves model B the answers of model A (lm-eval #4063); this one cannot.
Only successful replies are stored (raw text, reasoning, finish reason, usage), never keys or failures.

WAL mode plus a busy timeout make the file safe for several processes at once; within a process the engine
calls it from one event-loop thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import platformdirs

from rescue_bench.models.base import GenerationParams
from rescue_bench.records import Json, Reply, Request, Usage

CACHE_ENV = "RESCUE_BENCH_CACHE_DIR"
KEY_VERSION = 3
_SECRET_WORDS = ("key", "token", "secret", "password", "authorization", "credential")
"""Identity fields whose name holds one of these are left out of the key: by contract there are none."""
_SELECT = (
    "SELECT text, reasoning, finish_reason, prompt_tokens, completion_tokens, reasoning_tokens, meta "
    "FROM responses WHERE key = ?"
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY, created REAL NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL, text TEXT NOT
    NULL, reasoning TEXT, finish_reason TEXT, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT
    NULL, reasoning_tokens INTEGER NOT NULL, meta TEXT NOT NULL
)
"""


def cache_dir() -> Path:
    """``$RESCUE_BENCH_CACHE_DIR`` or the platform's user cache dir for rescue-bench."""
    override = os.environ.get(CACHE_ENV)
    return Path(override) if override else Path(platformdirs.user_cache_dir("rescue-bench"))


def default_cache_path() -> Path:
    return cache_dir() / "responses.sqlite3"


def cache_key(
    identity: dict[str, Json], request: Request, params: GenerationParams, content_key: str | None = None
) -> str:
    """The cache key of one request: any change of identity, message, parameter or schema changes it.

    Every field of the provider's ``identity()`` counts (a different model file at the same path must not be
    served stale replies), except fields named like a secret, which never change an answer.

    ``content_key`` is ``request.content_key()`` (messages, schema, token limit) when the caller has it
    already.

    >>> msgs = ({"role": "user", "content": "hi"},)
    >>> req = Request(task="t", messages=msgs, response_schema={}, instance_ids=("a",))
    >>> ident = {"provider": "openai", "base_url": "https://x/v1", "model": "m"}
    >>> cache_key(ident, req, GenerationParams()) == cache_key(dict(ident), req, GenerationParams())
    True
    >>> cache_key(ident, req, GenerationParams()) == cache_key(ident, req, GenerationParams(temperature=0.5))
    False
    >>> other_file = {**ident, "sha256": "ab"}
    >>> cache_key(ident, req, GenerationParams()) == cache_key(other_file, req, GenerationParams())
    False
    """
    return CacheKeys(identity, params).of(content_key or request.content_key())


class CacheKeys:
    """:func:`cache_key` for one provider identity and one set of parameters (those of a run's engine).

    The key hashes ``{"params", "provider", "request", "v"}`` as sorted-key JSON; all but the request is the
    same for every request of a run, so it is serialized once here.
    """

    def __init__(self, identity: dict[str, Json], params: GenerationParams) -> None:
        provider, settings = _json(_public_identity(identity)), _json(asdict(params))
        self._head = f'{{"params":{settings},"provider":{provider},"request":'
        self._tail = f',"v":{KEY_VERSION}}}'

    def of(self, content_key: str) -> str:
        """The key of the request whose ``content_key()`` this is."""
        return hashlib.sha256((self._head + _json(content_key) + self._tail).encode()).hexdigest()


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _public_identity(identity: dict[str, Json]) -> dict[str, Json]:
    """``identity`` without fields named like a secret.

    >>> _public_identity({"model": "m", "api_key": "sk-1", "Auth_Token": "t"})
    {'model': 'm'}
    """
    return {k: v for k, v in identity.items() if not any(w in k.lower() for w in _SECRET_WORDS)}


@dataclass(frozen=True, slots=True)
class CacheStats:
    path: Path
    entries: int
    size_bytes: int
    by_model: dict[str, int]


class ResponseCache:
    """A handle on the cache file; cheap lookups and single-row inserts, each its own transaction."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA busy_timeout = 60000")
        self._db.execute("PRAGMA journal_mode = WAL")
        # NORMAL keeps the cache consistent across crashes of the process; only a power cut can lose the
        # newest rows, which are then asked again.
        self._db.execute("PRAGMA synchronous = NORMAL")
        self._db.execute(_SCHEMA)
        self._pending: dict[str, tuple[Any, ...]] = {}
        self._flush_scheduled = False

    def get(self, key: str) -> tuple[Reply, dict[str, Json]] | None:
        """The stored reply (marked ``cached``) and its meta, or ``None``."""
        pending = self._pending.get(key)
        row = pending[4:] if pending is not None else self._db.execute(_SELECT, (key,)).fetchone()
        if row is None:
            return None
        text, reasoning, finish, p_tok, c_tok, r_tok, meta = row
        reply = Reply(
            text=text,
            reasoning=reasoning,
            usage=Usage(p_tok, c_tok, r_tok),
            finish_reason=finish,
            cached=True,
            attempts=0,
        )
        return reply, json.loads(meta)

    def put(
        self, key: str, reply: Reply, identity: dict[str, Json], meta: dict[str, Json] | None = None
    ) -> None:
        """Store a successful reply; failures are never cached.

        Inside an event loop, the rows stored during one loop iteration are written together right after it
        (replies of a burst arrive together), so one transaction serves many replies, and a reply is on disk
        before anything else can await: a process killed later cannot lose it. Outside a loop, each row is
        written at once.
        """
        if not reply.ok:
            return
        self._pending[key] = (
            key,
            time.time(),
            str(identity.get("provider", "")),
            str(identity.get("model", "")),
            reply.text,
            reply.reasoning,
            reply.finish_reason,
            reply.usage.prompt_tokens,
            reply.usage.completion_tokens,
            reply.usage.reasoning_tokens,
            json.dumps(meta or {}, sort_keys=True),
        )
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        if not self._flush_scheduled:
            self._flush_scheduled = True
            loop.call_soon(self.flush)

    def flush(self) -> None:
        """Write the pending rows in one transaction."""
        self._flush_scheduled = False
        if self._pending:
            rows = list(self._pending.values())
            with self._db:
                self._db.execute("BEGIN")
                self._db.executemany(
                    "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows
                )
            self._pending.clear()

    def stats(self) -> CacheStats:
        self.flush()
        entries = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        by_model = dict(
            self._db.execute(
                "SELECT provider || '/' || model, COUNT(*) FROM responses GROUP BY 1 ORDER BY 2 DESC"
            ).fetchall()
        )
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return CacheStats(self.path, int(entries), size, {str(k): int(v) for k, v in by_model.items()})

    def clear(self, model: str | None = None) -> int:
        """Delete every entry, or those of one ``provider/model``; return how many went."""
        self.flush()
        if model is None:
            cursor = self._db.execute("DELETE FROM responses")
        else:
            cursor = self._db.execute("DELETE FROM responses WHERE provider || '/' || model = ?", (model,))
        deleted = cursor.rowcount
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._db.execute("VACUUM")
        return int(deleted)

    def close(self) -> None:
        self.flush()
        self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
