"""Settings of one review-app instance."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from argon2 import PasswordHasher

from rescue_bench.review.db import DEFAULT_DB_URL


@dataclass(frozen=True)
class ReviewSettings:
    """What :func:`rescue_bench.review.app.create_app` needs.

    ``media_root`` is the annotation work directory: clips are served from inside it and nowhere else.
    ``secure_cookies``: ``auto`` sets the Secure flag when the request came over HTTPS (directly, or through a
    trusted proxy's ``X-Forwarded-Proto``), ``always`` sets it every time.
    """

    db_url: str = DEFAULT_DB_URL
    media_root: Path | None = None
    secure_cookies: Literal["auto", "always"] = "auto"
    session_max_age: int = 12 * 3600
    login_max_failures: int = 5
    login_window_sec: float = 300.0
    login_hash_concurrency: int = 2
    """Password checks run at once (argon2 takes 64 MiB each); more logins wait their turn."""
    max_form_bytes: int = 2 * 1024 * 1024
    """A posted form larger than this is refused (with the user's text shown again)."""
    max_field_chars: int = 20_000
    """The longest text one form field may carry (a dialogue turn is far shorter)."""
    max_form_fields: int = 2_000
    hasher: PasswordHasher = field(default_factory=PasswordHasher)
    clock: Callable[[], float] = time.monotonic
