"""Accounts, sessions, CSRF tokens and the login rate limit.

* Passwords are stored as argon2id hashes (argon2-cffi); verification time does not reveal whether a name
  exists.
* A session is a cookie signed with itsdangerous: ``{"uid", "epoch", "csrf"}``. It carries no secret of its
  own; the signature stops forgery, ``max_age`` ends it, and bumping the user's ``session_epoch`` (logout,
  password change, deactivation) ends every session of that user at once.
* Every form carries the session's CSRF token; the login form carries one from a short-lived pre-login cookie.
* :class:`LoginLimiter` refuses logins for a while after repeated failures from one address, or for one
  name from one address: an attacker who guesses at the admin's name from one address locks only that
  address, never the admin signing in from elsewhere.
"""

from __future__ import annotations

import hmac
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from itsdangerous import BadSignature, URLSafeTimedSerializer
from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy.orm import Session

from rescue_bench.errors import ConfigError
from rescue_bench.review.db import User, user_by_name

ROLES = ("annotator", "adjudicator", "admin")
MIN_PASSWORD_LENGTH = 8
SESSION_COOKIE = "rb_session"
LOGIN_COOKIE = "rb_login"
_MAX_KEYS = 10_000
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def hash_password(password: str, hasher: PasswordHasher) -> str:
    return hasher.hash(password)


def verify_password(stored_hash: str | None, password: str, hasher: PasswordHasher) -> bool:
    """True when ``password`` matches; an unknown user (``None``) costs the same time and returns False."""
    try:
        return hasher.verify(stored_hash or _dummy_hash(hasher), password) and stored_hash is not None
    except (VerificationError, InvalidHashError):
        return False


_DUMMY: dict[tuple[int, int, int], str] = {}


def _dummy_hash(hasher: PasswordHasher) -> str:
    key = (hasher.time_cost, hasher.memory_cost, hasher.parallelism)
    if key not in _DUMMY:
        _DUMMY[key] = hasher.hash(secrets.token_hex(16))
    return _DUMMY[key]


def check_new_user(name: str, role: str, password: str) -> None:
    """Raise :class:`ConfigError` for a name, role or password that cannot be used.

    >>> check_new_user("ann", "annotator", "correct horse")
    >>> check_new_user("ann", "boss", "correct horse")
    Traceback (most recent call last):
    ...
    rescue_bench.errors.ConfigError: role must be one of annotator, adjudicator, admin (got 'boss')
    """
    if not _NAME.match(name):
        raise ConfigError(f"user name {name!r} is not allowed: use 1-64 letters, digits, '.', '_' or '-'")
    if role not in ROLES:
        raise ConfigError(f"role must be one of {', '.join(ROLES)} (got {role!r})")
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ConfigError(f"the password must have at least {MIN_PASSWORD_LENGTH} characters")


def create_user(session: Session, name: str, role: str, password: str, hasher: PasswordHasher) -> User:
    """Add a user; raise :class:`ConfigError` if the name is taken or the input is not allowed."""
    check_new_user(name, role, password)
    if user_by_name(session, name) is not None:
        raise ConfigError(f"user {name!r} already exists")
    user = User(
        name=name, role=role, password_hash=hash_password(password, hasher), active=True, session_epoch=0
    )
    session.add(user)
    session.commit()
    return user


def authenticate(session: Session, name: str, password: str, hasher: PasswordHasher) -> User | None:
    """The active user with this name and password, or ``None``."""
    user = user_by_name(session, name)
    ok = verify_password(user.password_hash if user else None, password, hasher)
    if not ok or user is None or not user.active:
        return None
    return user


# -- sessions and CSRF ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionData:
    user_id: int
    epoch: int
    csrf: str


class _Payload(BaseModel):
    """What the session cookie carries (signed, so never forged; only an old format can fail here)."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)
    uid: int
    epoch: int
    csrf: str


class SessionCodec:
    """Signs and reads the session cookie and the pre-login cookie."""

    def __init__(self, secret: str, max_age: int) -> None:
        self._session = URLSafeTimedSerializer(secret, salt="rescue-bench-review-session")
        self._login = URLSafeTimedSerializer(secret, salt="rescue-bench-review-login")
        self.max_age = max_age

    def new_session(self, user: User) -> str:
        return self._session.dumps(
            {"uid": user.id, "epoch": user.session_epoch, "csrf": secrets.token_urlsafe(32)}
        )

    def read_session(self, cookie: str | None) -> SessionData | None:
        if not cookie:
            return None
        try:
            raw = self._session.loads(cookie, max_age=self.max_age)
        except BadSignature:  # also covers SignatureExpired
            return None
        try:
            payload = _Payload.model_validate(raw)
        except ValidationError:  # signed by us, so only an older format could get here
            return None
        return SessionData(payload.uid, payload.epoch, payload.csrf)

    def new_login_token(self) -> tuple[str, str]:
        """A fresh CSRF token for the login form and the signed cookie that vouches for it."""
        token = secrets.token_urlsafe(32)
        return token, self._login.dumps(token)

    def read_login_token(self, cookie: str | None) -> str | None:
        if not cookie:
            return None
        try:
            token = self._login.loads(cookie, max_age=3600)
        except BadSignature:
            return None
        return token if isinstance(token, str) else None


def tokens_match(expected: str | None, given: object) -> bool:
    """Constant-time comparison of a CSRF token; a missing token never matches.

    >>> tokens_match("abc", "abc"), tokens_match("abc", "abd")
    (True, False)
    >>> tokens_match(None, ""), tokens_match("abc", None)
    (False, False)
    """
    if not expected or not isinstance(given, str) or not given:
        return False
    return hmac.compare_digest(expected.encode(), given.encode())


def safe_next(target: str | None) -> str:
    """A local path to go to after login; anything that could leave the site becomes ``/``.

    >>> safe_next("/segments/3"), safe_next("//evil.example/x")
    ('/segments/3', '/')
    >>> safe_next("https://evil.example"), safe_next(None)
    ('/', '/')
    """
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")) or "\\" in target:
        return "/"
    return target


# -- login rate limit ----------------------------------------------------------------------------------------


class LoginLimiter:
    """At most ``max_failures`` failed logins per key (client address, user name) in a sliding window.

    In memory and per process: run the app as one process (the default), or put a limiter in front of it.

    >>> now = [0.0]
    >>> limiter = LoginLimiter(max_failures=2, window_sec=60, clock=lambda: now[0])
    >>> limiter.failed(["ip:1", "name:ann@1"]); limiter.failed(["ip:1", "name:ann@1"])
    >>> limiter.retry_after(["ip:1", "name:ann@1"]) > 0, limiter.retry_after(["ip:2", "name:ann@2"])
    (True, 0.0)
    >>> now[0] = 61.0
    >>> limiter.retry_after(["ip:1", "name:ann@1"])
    0.0
    """

    def __init__(
        self, max_failures: int, window_sec: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_failures = max_failures
        self.window_sec = window_sec
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def retry_after(self, keys: Iterable[str]) -> float:
        """Seconds until a login for these keys may be tried again (0 when allowed now)."""
        now = self._clock()
        with self._lock:
            return self._wait(keys, now)

    def attempt(self, keys: Sequence[str]) -> tuple[float, float]:
        """Count a login attempt as failed *before* its password is checked: (seconds to wait, the attempt's
        time). A wait above 0 refuses the attempt (and counts nothing); otherwise :meth:`succeeded` takes
        the count back when the password was right. Checking and counting under one lock is what keeps
        ``max_failures`` a limit for attempts sent all at once.
        """
        now = self._clock()
        with self._lock:
            wait = self._wait(keys, now)
            if wait == 0.0:
                self._count(keys, now)
        return wait, now

    def failed(self, keys: Iterable[str]) -> None:
        now = self._clock()
        with self._lock:
            self._count(keys, now)

    def succeeded(self, keys: Sequence[str], at: float | None = None) -> None:
        """A right password: the attempt counted at ``at`` is taken back, and the account's failures at this
        address (the last key) are forgotten."""
        with self._lock:
            if at is not None:
                for key in keys:
                    times = self._failures.get(key)
                    if times is not None and at in times:
                        times.remove(at)
            if keys:
                self._failures.pop(keys[-1], None)

    def _wait(self, keys: Iterable[str], now: float) -> float:
        wait = 0.0
        for key in keys:
            times = self._prune(key, now)
            if len(times) >= self.max_failures:
                wait = max(wait, times[0] + self.window_sec - now)
        return wait

    def _count(self, keys: Iterable[str], now: float) -> None:
        if len(self._failures) > _MAX_KEYS:  # many made-up names must not grow memory without bound
            for stale in [k for k in self._failures if not self._prune(k, now)]:
                del self._failures[stale]
        for key in keys:
            self._prune(key, now).append(now)

    def _prune(self, key: str, now: float) -> deque[float]:
        times = self._failures.setdefault(key, deque())
        while times and times[0] <= now - self.window_sec:
            times.popleft()
        return times
