"""CLI commands: ``rescue-bench cache stats|clear``, the response cache shared by all runs."""

from __future__ import annotations

from typing import Annotated

import typer

from rescue_bench.printable import echo, printable

cache_app = typer.Typer(name="cache", help="The response cache shared by all runs.", no_args_is_help=True)


@cache_app.command("stats")
def cache_stats() -> None:
    """Where the cache is, how many replies it holds, and for which models."""
    from rescue_bench.rundir.cache import ResponseCache

    with ResponseCache() as cache:
        stats = cache.stats()
    echo(f"path: {stats.path}")
    echo(f"entries: {stats.entries}")
    echo(f"size: {stats.size_bytes / 1e6:.2f} MB")
    for model, count in stats.by_model.items():
        echo(f"  {printable(model, one_line=True)}: {count}")


@cache_app.command("clear")
def cache_clear(
    model: Annotated[str | None, typer.Option("--model", "-m", help="Only this provider/model.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete cached replies (all, or those of one model)."""
    from rescue_bench.rundir.cache import ResponseCache

    what = f"the cached replies of {model}" if model else "every cached reply"
    if not yes and not typer.confirm(f"Delete {what}?"):
        raise typer.Exit(1)
    with ResponseCache() as cache:
        deleted = cache.clear(model)
    echo(f"deleted {deleted} cached replies")


def register(app: typer.Typer) -> None:
    """Add the ``cache`` command group to the root app."""
    app.add_typer(cache_app, name="cache")
