"""The response cache: SQLite in WAL mode, shared by every run of the user.

The key is a sha256 over everything that can change an answer: the provider's whole identity (provider, base
URL, model, and for ``local/`` the model file's sha256, prompt format, string cap and runtime), the full
messages, every generation setting not at its default, the response format and schema, and the request's
token limit. A cache that ignores the model serves model B the answers of model A (lm-eval #4063); this one
cannot.
Only successful replies are stored (raw text, reasoning, finish reason, usage), never keys or failures.

WAL mode plus a busy timeout make the file safe for several processes at once; within a process the engine
calls it from one event-loop thread.

The cache only saves requests, so it never stops a run: a file that cannot be opened or read (damaged, not a
database) or written (a full disk) is named in one warning, with the way to clear it, and the run goes on
without the cache. ``cache stats`` and ``cache clear --model`` on a damaged file are a one-line
:class:`CacheError`; ``cache clear`` (everything) removes the damaged file.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import platformdirs

from rescue_bench.errors import BenchError
from rescue_bench.records import Json, Reply, Request, Usage


class Settings(Protocol):
    """What the key takes of a generation's settings (``models.base.Generation``): those not at their
    defaults, so a setting added later keeps every key (and cache entry) it had."""

    def settings(self) -> dict[str, Json]: ...


log = logging.getLogger("rescue_bench.rundir.cache")

CACHE_ENV = "RESCUE_BENCH_CACHE_DIR"
KEY_VERSION = 4
"""4: the key holds the settings not at their defaults (``models.base.Generation.settings``)."""
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
    identity: dict[str, Json], request: Request, params: Settings, content_key: str | None = None
) -> str:
    """The cache key of one request: any change of identity, message, parameter or schema changes it.

    Every field of the provider's ``identity()`` counts (a different model file at the same path must not be
    served stale replies), except fields named like a secret, which never change an answer.

    ``content_key`` is ``request.content_key()`` (messages, schema, token limit) when the caller has it
    already.

    >>> class Given:  # a generation's settings, as ``models.base.Generation.settings`` gives them
    ...     def __init__(self, **given: Json) -> None:
    ...         self.given = given
    ...     def settings(self) -> dict[str, Json]:
    ...         return self.given
    >>> msgs = ({"role": "user", "content": "hi"},)
    >>> req = Request(task="t", messages=msgs, response_schema={}, instance_ids=("a",))
    >>> ident = {"provider": "openai", "base_url": "https://x/v1", "model": "m"}
    >>> cache_key(ident, req, Given()) == cache_key(dict(ident), req, Given())
    True
    >>> cache_key(ident, req, Given()) == cache_key(ident, req, Given(temperature=0.5))
    False
    >>> other_file = {**ident, "sha256": "ab"}
    >>> cache_key(ident, req, Given()) == cache_key(other_file, req, Given())
    False
    """
    return CacheKeys(identity, params).of(content_key or request.content_key())


class CacheKeys:
    """:func:`cache_key` for one provider identity and one set of parameters (those of a run's engine).

    The key hashes ``{"params", "provider", "request", "v"}`` as sorted-key JSON; all but the request is the
    same for every request of a run, so it is serialized once here.
    """

    def __init__(self, identity: dict[str, Json], params: Settings) -> None:
        provider, settings = _json(_public_identity(identity)), _json(params.settings())
        self._head = f'{{"params":{settings},"provider":{provider},'
        self._tail = f',"v":{KEY_VERSION}}}'

    def of(self, content_key: str, repeat: int = 0) -> str:
        """The key of the request whose ``content_key()`` this is, asked for the ``repeat``-th time.

        Repeat 0 has no ``repeat`` field, so its key is that of a run without repeats; any other repeat is its
        own entry, never a hit of another repeat's reply.
        """
        again = f'"repeat":{repeat},' if repeat > 0 else ""
        body = f'{self._head}{again}"request":{_json(content_key)}{self._tail}'
        return hashlib.sha256(body.encode()).hexdigest()


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


class CacheError(BenchError):
    """The cache file cannot be used (damaged, unreadable) for a command that needs it."""


CacheFailure = (sqlite3.Error, OSError)
"""What a cache file can raise: a damaged or foreign file, a full disk, a read-only or vanished directory."""


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=60.0, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA busy_timeout = 60000")
        db.execute("PRAGMA journal_mode = WAL")
        # NORMAL keeps the cache consistent across crashes of the process; only a power cut can lose the
        # newest rows, which are then asked again.
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute(_SCHEMA)
    except CacheFailure:
        db.close()
        raise
    return db


def _row_reply(row: tuple[Any, ...]) -> tuple[Reply, dict[str, Json]] | None:
    """The reply and meta of a stored row, or ``None`` when the row is damaged (a field of the wrong type,
    meta that is not a JSON object): a damaged row is a miss, never a crash or a wrong answer."""
    text, reasoning, finish, p_tok, c_tok, r_tok, meta = row
    tokens = (p_tok, c_tok, r_tok)
    if (
        not isinstance(text, str)
        or not all(v is None or isinstance(v, str) for v in (reasoning, finish))
        or not all(type(t) is int and t >= 0 for t in tokens)
        or not isinstance(meta, str)
    ):
        return None
    try:
        extra = json.loads(meta)
    except (ValueError, RecursionError):
        return None
    if not isinstance(extra, dict):
        return None
    reply = Reply(
        text=text,
        reasoning=reasoning,
        usage=Usage(p_tok, c_tok, r_tok),
        finish_reason=finish,
        cached=True,
        attempts=0,
    )
    return reply, extra


class ResponseCache:
    """A handle on the cache file; cheap lookups and single-row inserts, each its own transaction.

    :attr:`usable` turns false, after one warning, when the file fails: lookups then miss and stores are
    dropped, so the run goes on without the cache.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_cache_path()
        self._pending: dict[str, tuple[Any, ...]] = {}
        self._flush_scheduled = False
        self.failure: str | None = None
        """Why the cache was given up, once it was."""
        self.damaged = 0
        """Rows found that could not be read (each a miss, warned about once)."""
        self._db: sqlite3.Connection | None = None
        try:
            self._db = _connect(self.path)
        except CacheFailure as exc:
            self._give_up(exc, "cannot be opened")

    @property
    def usable(self) -> bool:
        return self._db is not None

    def _give_up(self, exc: BaseException, doing: str) -> None:
        """Stop using the file for the rest of this handle's life, saying so once."""
        db, self._db = self._db, None
        self._pending.clear()
        if db is not None:
            with contextlib.suppress(*CacheFailure):  # closing a failed handle may fail the same way
                db.close()
        if self.failure is None:
            self.failure = f"{exc.__class__.__name__}: {exc}"
            log.warning(
                "warning: response cache %s %s (%s); going on without the cache. To clear it, run "
                "`rescue-bench cache clear` or delete the file",
                self.path,
                doing,
                self.failure,
            )

    def _require(self) -> sqlite3.Connection:
        if self._db is None:
            raise self._unusable()
        return self._db

    def _unusable(self) -> CacheError:
        return CacheError(
            f"response cache {self.path} cannot be used ({self.failure}); "
            f"clear it with `rescue-bench cache clear`, or delete {self.path}"
        )

    def get(self, key: str) -> tuple[Reply, dict[str, Json]] | None:
        """The stored reply (marked ``cached``) and its meta, or ``None`` (also when the cache failed)."""
        pending = self._pending.get(key)
        if pending is not None:
            row = pending[4:]
        elif self._db is None:
            return None
        else:
            try:
                row = self._db.execute(_SELECT, (key,)).fetchone()
            except CacheFailure as exc:
                self._give_up(exc, "cannot be read")
                return None
        if row is None:
            return None
        found = _row_reply(row)
        if found is None:
            self._damaged_row(key)
        return found

    def _damaged_row(self, key: str) -> None:
        """Count a row that cannot be read (a miss: the request is asked again and its row replaced)."""
        self.damaged += 1
        if self.damaged == 1:
            log.warning(
                "warning: response cache %s holds a damaged entry (key %s...); it is asked again and "
                "replaced. To clear the cache, run `rescue-bench cache clear` or delete the file",
                self.path,
                key[:12],
            )

    def put(
        self, key: str, reply: Reply, identity: dict[str, Json], meta: dict[str, Json] | None = None
    ) -> None:
        """Store a successful reply; failures are never cached.

        Inside an event loop, the rows stored during one loop iteration are written together right after it
        (replies of a burst arrive together), so one transaction serves many replies, and a reply is on disk
        before anything else can await: a process killed later cannot lose it. Outside a loop, each row is
        written at once.
        """
        if not reply.ok or self._db is None:
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
        """Write the pending rows in one transaction; a failure (a full disk) gives the cache up."""
        self._flush_scheduled = False
        if self._pending and self._db is not None:
            rows = list(self._pending.values())
            try:
                with self._db:
                    self._db.execute("BEGIN")
                    self._db.executemany(
                        "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows
                    )
            except CacheFailure as exc:
                self._give_up(exc, "cannot be written")
            self._pending.clear()

    def stats(self) -> CacheStats:
        """What the cache holds.

        Raises:
            CacheError: the file cannot be used (named, with how to clear it).
        """
        self.flush()
        try:
            return self._stats(self._require())
        except CacheFailure as exc:
            self._give_up(exc, "cannot be read")
            raise self._unusable() from None

    def _stats(self, db: sqlite3.Connection) -> CacheStats:
        entries = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        by_model = dict(
            db.execute(
                "SELECT provider || '/' || model, COUNT(*) FROM responses GROUP BY 1 ORDER BY 2 DESC"
            ).fetchall()
        )
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return CacheStats(self.path, int(entries), size, {str(k): int(v) for k, v in by_model.items()})

    def clear(self, model: str | None = None) -> int:
        """Delete every entry, or those of one ``provider/model``; return how many went.

        A damaged file cannot be cleared entry by entry: clearing everything removes it (0 is returned, its
        entries could not be counted); clearing one model raises :class:`CacheError`.
        """
        self.flush()
        if self._db is None and model is None:
            self._remove_files()
            return 0
        db = self._require()
        try:
            if model is None:
                cursor = db.execute("DELETE FROM responses")
            else:
                cursor = db.execute("DELETE FROM responses WHERE provider || '/' || model = ?", (model,))
            deleted = cursor.rowcount
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db.execute("VACUUM")
        except CacheFailure as exc:
            self._give_up(exc, "cannot be cleared")
            raise self._unusable() from None
        return int(deleted)

    def _remove_files(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            path = self.path.with_name(self.path.name + suffix)
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                raise CacheError(f"cannot delete {path} ({exc.strerror}); delete it by hand") from None
        log.warning("warning: removed the damaged response cache %s", self.path)

    def close(self) -> None:
        self.flush()
        if self.damaged > 1:  # the first was named when found; the count says how many more there were
            log.warning(
                "warning: response cache %s: %d damaged entries were asked again", self.path, self.damaged
            )
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
