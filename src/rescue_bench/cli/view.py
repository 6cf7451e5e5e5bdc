"""CLI command: ``rescue-bench view RUN [RUN ...] [--port N] [--host H] [--bundle DIR] [--redact]``."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path
from typing import Annotated

import typer

from rescue_bench.errors import DependencyError

LOOPBACK = "127.0.0.1"


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def view(
    runs: Annotated[list[Path], typer.Argument(help="One or more run directories.", show_default=False)],
    port: Annotated[int | None, typer.Option("--port", help="Port (default: a free one).")] = None,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind; anything but loopback shares your runs.")
    ] = LOOPBACK,
    bundle: Annotated[
        Path | None, typer.Option("--bundle", help="Write a static site to DIR instead of serving.")
    ] = None,
    redact: Annotated[
        bool,
        typer.Option("--redact", help="Leave out transcript text and replies (ids, labels, scores stay)."),
    ] = False,
) -> None:
    """Look at every answer of one or more runs in the browser (a run still going is shown as partial).

    Serving needs the `view` extra; --bundle works on a core install.
    """
    from rescue_bench.view.data import check_run_dir

    if bundle is None:
        _require_server()
    for run in runs:
        check_run_dir(run)
    if bundle is not None:
        from rescue_bench.view.bundle import write_bundle

        count = write_bundle(runs, bundle, redact=redact)
        typer.echo(f"wrote {count} pages to {bundle}; open {(bundle / 'index.html').resolve().as_uri()}")
        return
    _serve(runs, host, port, redact)


def _require_server() -> None:
    """Fail with the extra to install, before any run is read, when the web server's packages are missing."""
    for module in ("fastapi", "uvicorn"):
        if importlib.util.find_spec(module) is None:
            raise DependencyError.missing(module, "view")


def _serve(runs: list[Path], host: str, port: int | None, redact: bool) -> None:
    import uvicorn

    from rescue_bench.view.app import create_app

    if host not in (LOOPBACK, "localhost", "::1"):
        typer.echo(
            f"warning: binding {host}: anyone who can reach this address can read these runs "
            "(transcripts and replies included); there is no login",
            err=True,
        )
    from rescue_bench.view.data import ViewError

    app = create_app(runs, redact=redact)
    try:
        app.state.viewer.views()  # read and index every run now, so the first page is fast
    except ViewError as exc:
        typer.echo(f"warning: {exc} (the pages will say so until the file is repaired)", err=True)
    chosen = port if port is not None else _free_port(host)
    shown = f"[{host}]" if ":" in host else host
    typer.echo(f"rescue-bench view: http://{shown}:{chosen}/  (Ctrl-C to stop)")
    uvicorn.run(app, host=host, port=chosen, log_level="warning")


def register(app: typer.Typer) -> None:
    """Add ``view`` to the root app."""
    app.command("view")(view)
