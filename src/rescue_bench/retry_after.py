"""How long a server asks a client to wait before the next attempt (``Retry-After``, ``retry-after-ms``).

A leaf: providers read it from a refused response and pass it on in
:class:`rescue_bench.errors.RetryableError`; the engine's retry policy honours it.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date); ``None`` if absent.

    >>> parse_retry_after({"retry-after": "3"}), parse_retry_after({"retry-after-ms": "250"})
    (3.0, 0.25)
    >>> parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0)
    10.0
    >>> parse_retry_after({"retry-after": "soon"}) is None
    True
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, when - (time.time() if now is None else now))
