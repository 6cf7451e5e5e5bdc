"""An ASGI app served by uvicorn on a free loopback port in a thread, for the browser and HTTP tests."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def served(app: Any, *, config: Callable[[int], Any] | None = None) -> Iterator[str]:
    """Yield the base URL of ``app`` while uvicorn serves it; ``config`` makes the ``uvicorn.Config`` of a
    port (default: loopback, warnings only). uvicorn is imported here: it is an optional extra."""
    import uvicorn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    made = config(port) if config else uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(made)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
