"""CLI command: ``rescue-bench view RUN [RUN ...] [--port N] [--host H] [--bundle DIR] [--redact]``."""

from __future__ import annotations

import importlib.util
import socket
import threading
from pathlib import Path
from typing import Annotated

import typer

from rescue_bench.errors import DependencyError
from rescue_bench.printable import echo

LOOPBACK = "127.0.0.1"


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _own_names(host: str) -> list[str]:
    """Bound to every address (``0.0.0.0``, ``::``): this machine's names and addresses are its hosts too."""
    if host not in ("0.0.0.0", "::"):
        return []
    names = {socket.gethostname(), socket.getfqdn()}
    try:
        for name in list(names):
            names.update(str(info[4][0]) for info in socket.getaddrinfo(name, None))
    except OSError:
        pass  # a host name that does not resolve: its literal names still count
    return sorted(str(n) for n in names)


def view(
    runs: Annotated[
        list[Path],
        typer.Argument(help="Run directories, or a study directory (opens as its runs).", show_default=False),
    ],
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
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host", help="Another host name the browser uses to reach the viewer (a proxy's name)."
        ),
    ] = None,
    partial: Annotated[
        bool,
        typer.Option(
            "--partial", help="Also show runs that did not finish (running, stopped, incomplete): PARTIAL."
        ),
    ] = False,
) -> None:
    """Look at every answer of one or more runs in the browser (a run still going with --partial).

    Serving needs the `view` extra; --bundle works on a core install.
    """
    from rescue_bench.view.studies import is_study

    if bundle is None:
        _require_server()

    # a study opens on its leaderboard
    first = "leaderboard" if any(is_study(p) for p in runs) else ""
    runs = _runs_to_show(runs, partial)
    first = first if len(runs) > 1 else ""
    if bundle is not None:
        from rescue_bench.view.bundle import write_bundle

        written = write_bundle(runs, bundle, redact=redact)
        page = bundle / (f"{first}.html" if first else "index.html")
        echo(
            f"wrote {written.files} files ({written.size / 1e6:.1f} MB) to {bundle}; "
            f"open {page.resolve().as_uri()}"
        )
        return
    _serve(runs, host, port, redact, allow_host or [], first)


def _runs_to_show(paths: list[Path], partial: bool) -> list[Path]:
    """The run directories of ``paths`` (a study's runs in its order), each checked; unfinished runs only
    with ``--partial``."""
    from rescue_bench.view.data import COMPLETE, ViewError, check_run_dir, run_status
    from rescue_bench.view.studies import expand_runs

    runs, notes = expand_runs(paths)
    for note in notes:
        echo(f"note: {note}", err=True)
    if not runs:
        raise ViewError("no run to show: the study has no run with predictions yet")
    for run in runs:
        check_run_dir(run)
    statuses = {run: run_status(run) for run in runs}
    unfinished = [f"{run} ({s})" for run, s in statuses.items() if s is not None and s not in COMPLETE]
    if unfinished and not partial:
        raise ViewError(
            f"not finished: {', '.join(unfinished)}; "
            "add --partial to show what was written so far, marked PARTIAL"
        )
    return runs


def _require_server() -> None:
    """Fail with the extra to install, before any run is read, when the web server's packages are missing."""
    for module in ("fastapi", "uvicorn"):
        if importlib.util.find_spec(module) is None:
            raise DependencyError.missing(module, "view")


def _serve(
    runs: list[Path], host: str, port: int | None, redact: bool, allowed: list[str], first: str = ""
) -> None:
    import uvicorn

    from rescue_bench.view.app import create_app

    if host not in (LOOPBACK, "localhost", "::1"):
        echo(
            f"warning: binding {host}: anyone who can reach this address can read these runs "
            "(transcripts and replies included); there is no login",
            err=True,
        )
    chosen = port if port is not None else _free_port(host)
    app = create_app(runs, redact=redact, hosts=[host, *_own_names(host), *allowed], port=chosen)
    # read and index every run now, so the first page is fast
    views, broken = app.state.viewer.state()
    for run in broken:
        echo(f"warning: {run.error} (its pages will say so until the file is repaired)", err=True)
    if len(views) > 1:  # the rank groups take a while at paper size: start them before they are asked for
        threading.Thread(target=app.state.viewer.many, args=(views,), daemon=True).start()
    shown = f"[{host}]" if ":" in host else host
    echo(f"rescue-bench view: http://{shown}:{chosen}/{first}  (Ctrl-C to stop)")
    uvicorn.run(app, host=host, port=chosen, log_level="warning")


def register(app: typer.Typer) -> None:
    """Add ``view`` to the root app."""
    app.command("view")(view)
