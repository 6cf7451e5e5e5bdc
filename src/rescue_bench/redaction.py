"""The one place secrets are taken out of text before it is written or shown.

Two kinds of secret reach rescue-bench: the API key (read from the environment, sent as a bearer token; a
server may echo it back) and what a user puts in a URL (``https://user:password@host/v1``, or a gateway's
``?api-key=...``). Every writer of a record that can hold a URL (``run.json``, ``study.json``, the report
files, the exports) passes it through :func:`scrub`; every path that stores a model's reply (online, the
Batch API, ``batch import``) passes it through :func:`redact_reply` with the endpoint's :func:`secrets_of`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from typing import TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from rescue_bench.records import Json, Reply

MARK = "[redacted]"
MIN_SECRET = 4
"""Shorter strings are never treated as secrets (replacing ``"a"`` everywhere would garble the text)."""
MIN_URL_SECRET = 8
"""Parts of a URL shorter than this (a user name ``ann``, ``v=1``) are left in replies: a key is longer."""
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>`]+")
_CREDENTIAL_KEY = re.compile(
    r"(^|[_-])(api[_-]?key|apikey|token|access[_-]?token|secret|client[_-]?secret|password|passwd|"
    r"authorization|auth)$",
    re.IGNORECASE,
)
"""Keys whose value is a credential (``api_key``, ``hf_token``, ``client_secret``, ``Authorization``); a
count such as ``max_tokens`` is not one."""
T = TypeVar("T", bound=Json)


def public_url(url: str) -> str:
    """The URL without user info, query string or fragment: what may be recorded or shown.

    A string that does not parse as a URL comes back with every ``user:pass@`` and query cut off anyway.

    >>> public_url("https://user:secret@host.org:8443/v1?api-key=abc#x")
    'https://host.org:8443/v1'
    >>> public_url("http://127.0.0.1:8000/v1")
    'http://127.0.0.1:8000/v1'
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a port that is not a number: keep only what cannot hold a secret
        head, _, rest = url.partition("://")
        host = rest.rpartition("@")[2].split("/", 1)[0].split("?", 1)[0]
        return f"{head}://{host.split(':', 1)[0]}"
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The parts of ``url`` that may be secret: user name, password and every query value (as given and
    percent-decoded) of at least :data:`MIN_URL_SECRET` characters, for :func:`redact` to find in text a
    server sends back.

    >>> url_secrets("https://ann:pw-123456@h/v1?api-key=k-98765432&v=1")
    ('pw-123456', 'k-98765432')
    """
    if not url:
        return ()
    try:
        parts = urlsplit(url)
        found = [parts.username or "", parts.password or ""]
        found += [value for _, value in parse_qsl(parts.query, keep_blank_values=True)]
    except ValueError:
        return ()
    both = [*found, *(unquote(v) for v in found)]
    return tuple(dict.fromkeys(v for v in both if len(v) >= MIN_URL_SECRET))


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every occurrence of each secret replaced by ``[redacted]``, longest first.

    >>> redact("bad key sk-abc123 given", ["sk-abc123", None])
    'bad key [redacted] given'
    """
    for secret in sorted((s for s in secrets if s and len(s) >= MIN_SECRET), key=len, reverse=True):
        text = text.replace(secret, MARK)
    return text


def redact_reply(reply: Reply, secrets: Sequence[str]) -> Reply:
    """``reply`` with the secrets taken out of its text, reasoning and error."""
    if not secrets:
        return reply
    reasoning = None if reply.reasoning is None else redact(reply.reasoning, secrets)
    error = None if reply.error is None else redact(reply.error, secrets)
    return dataclasses.replace(reply, text=redact(reply.text, secrets), reasoning=reasoning, error=error)


def scrub_text(text: str) -> str:
    """``text`` with every URL in it that has user info or a query string cut to :func:`public_url`.

    >>> scrub_text("refused by http://u:p@h:1/v1?key=s3cret (401)")
    'refused by http://h:1/v1 (401)'
    """
    if "://" not in text:
        return text
    return _URL.sub(_public_match, text)


def _public_match(match: re.Match[str]) -> str:
    url = match.group(0)
    head = url.partition("://")[2].split("/", 1)[0]
    if "@" not in head and "?" not in url and "#" not in url:
        return url
    return public_url(url)


def is_credential_key(key: str) -> bool:
    """Whether a key names a credential (its value is never written).

    >>> [is_credential_key(k) for k in ("api_key", "hf_token", "Authorization", "max_tokens", "top_k")]
    [True, True, True, False, False]
    """
    return _CREDENTIAL_KEY.search(key) is not None


def credential_keys(value: Json) -> list[str]:
    """The keys anywhere in ``value`` that name a credential and hold a value (:func:`is_credential_key`),
    for a warning: they are sent, and written nowhere."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, inner in value.items():
            if is_credential_key(str(key)) and inner not in (None, ""):
                found.append(str(key))
            found += credential_keys(inner)
    elif isinstance(value, list | tuple):
        for inner in value:
            found += credential_keys(inner)
    return found


def scrub(value: T) -> T:
    """A JSON value with :func:`scrub_text` applied to every string in it (keys included), and the value of
    every key that names a credential (:func:`is_credential_key`) replaced by ``[redacted]``.

    >>> scrub({"model": {"base_url": "https://u:pw@h/v1?api-key=x"}, "n": [1, "http://h/v1"]})
    {'model': {'base_url': 'https://h/v1'}, 'n': [1, 'http://h/v1']}
    >>> scrub({"extra_body": {"api_key": "sk-123", "top_k": 2}})
    {'extra_body': {'api_key': '[redacted]', 'top_k': 2}}
    """
    if isinstance(value, str):
        return scrub_text(value)  # type: ignore[return-value]
    if isinstance(value, dict):
        return {  # type: ignore[return-value]
            scrub_text(str(k)): MARK if is_credential_key(str(k)) and v not in (None, "") else scrub(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]  # type: ignore[return-value]
    return value
