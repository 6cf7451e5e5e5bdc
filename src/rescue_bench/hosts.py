"""Which ``Host`` headers a local web server answers: the run viewer's and the review app's one rule.

A page on another site can point its own name at 127.0.0.1 (DNS rebinding) and then talk to a server on this
machine as if it were that site; such a request carries the other site's name in ``Host``. Both servers answer
only their own names.
"""

from __future__ import annotations

__all__ = ["LOOPBACK_NAMES", "allowed_host"]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def allowed_host(header: str, names: frozenset[str], port: int | None) -> bool:
    """Whether a ``Host`` header names this server: one of ``names`` (with ``port`` when it is known).

    >>> names = LOOPBACK_NAMES | {"10.0.0.5"}
    >>> [allowed_host(h, names, 8000) for h in ("127.0.0.1:8000", "[::1]:8000", "LOCALHOST", "10.0.0.5:8000")]
    [True, True, True, True]
    >>> [allowed_host(h, names, 8000) for h in ("evil.example:8000", "127.0.0.1:9", "127.0.0.1.evil", "")]
    [False, False, False, False]
    """
    value = header.strip().lower()
    if value.startswith("["):  # an IPv6 address: [::1]:8000
        host, _, rest = value[1:].partition("]")
        rest = rest.removeprefix(":")
    elif value.count(":") == 1:
        host, _, rest = value.partition(":")
    else:
        host, rest = value, ""
    if rest and (not rest.isdigit() or (port is not None and int(rest) != port)):
        return False
    return host in names
