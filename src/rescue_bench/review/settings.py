"""Settings of one review-app instance, and the project settings kept in its database."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from argon2 import PasswordHasher
from sqlalchemy.orm import Session

from rescue_bench.errors import ConfigError
from rescue_bench.hosts import LOOPBACK_NAMES
from rescue_bench.review.db import DEFAULT_DB_URL, Meta


def host_names(hosts: list[str] | tuple[str, ...]) -> frozenset[str]:
    """The loopback names and ``hosts`` (the bound address, a public name), as :func:`allowed_host` reads
    them.

    >>> sorted(host_names(["[::1]", " Review.Example "]))
    ['127.0.0.1', '::1', 'localhost', 'review.example']
    """
    return LOOPBACK_NAMES | {h.strip().strip("[]").lower() for h in hosts if h.strip()}


@dataclass(frozen=True)
class ReviewSettings:
    """What :func:`rescue_bench.review.app.create_app` needs.

    ``media_root`` is the annotation work directory: clips are served from inside it (or one of
    ``extra_media_roots``) and nowhere else; a segment's clips come from the root its files were loaded from.
    ``allowed_hosts`` (and ``port``, when known): the names a request's ``Host`` header may carry; any other
    gets 421, so that a page of another site whose name was rebound to this address cannot use the app (nor
    spend the login limit of 127.0.0.1 and lock its users out).
    ``secure_cookies``: ``auto`` sets the Secure flag when the request came over HTTPS (directly, or through a
    trusted proxy's ``X-Forwarded-Proto``), ``always`` sets it every time.
    """

    db_url: str = DEFAULT_DB_URL
    media_root: Path | None = None
    extra_media_roots: tuple[Path, ...] = ()
    """More work directories (``serve --workdir A --workdir B``): a multi-episode dataset in one app."""
    allowed_hosts: frozenset[str] = LOOPBACK_NAMES
    port: int | None = None
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

    @property
    def media_roots(self) -> tuple[Path, ...]:
        first = () if self.media_root is None else (self.media_root,)
        return (*first, *self.extra_media_roots)


MAX_REVIEWS_PER_ROW = 5


@dataclass(frozen=True, slots=True)
class ProjectSettings:
    """How a project is annotated, kept in the database (``review init --reviews N [--blind/--open]``).

    ``reviews_per_row``: independent reviews each row needs before it is resolved (1: one annotator reviews
    and corrects the shared value, as a single-annotator project works). ``blind``: whether an annotator
    sees nobody else's values of a row before submitting their own; ``None`` means the default, blind when
    more than one review is needed.
    """

    reviews_per_row: int = 1
    blind: bool | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.reviews_per_row <= MAX_REVIEWS_PER_ROW:
            raise ConfigError(
                f"reviews per row must be from 1 to {MAX_REVIEWS_PER_ROW} (got {self.reviews_per_row})"
            )

    @property
    def independent(self) -> bool:
        """Each annotator reviews into their own copy; the rows' values come from the reviews."""
        return self.reviews_per_row > 1

    @property
    def is_blind(self) -> bool:
        """
        >>> ProjectSettings(3).is_blind, ProjectSettings(1).is_blind, ProjectSettings(3, blind=False).is_blind
        (True, False, False)
        """
        return self.independent if self.blind is None else self.blind


_REVIEWS_KEY, _BLIND_KEY = "reviews_per_row", "blind"


def project_settings(session: Session) -> ProjectSettings:
    """The project's settings (the defaults when never set)."""
    reviews = session.get(Meta, _REVIEWS_KEY)
    blind = session.get(Meta, _BLIND_KEY)
    return ProjectSettings(
        reviews_per_row=int(reviews.value) if reviews else 1,
        blind=None if blind is None or blind.value == "default" else blind.value == "yes",
    )


def save_project_settings(session: Session, settings: ProjectSettings) -> None:
    blind = "default" if settings.blind is None else ("yes" if settings.blind else "no")
    for key, value in ((_REVIEWS_KEY, str(settings.reviews_per_row)), (_BLIND_KEY, blind)):
        row = session.get(Meta, key)
        if row is None:
            session.add(Meta(key=key, value=value))
        else:
            row.value = value
    session.commit()
