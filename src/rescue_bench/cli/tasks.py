"""CLI commands: ``rescue-bench tasks summary | show | export | lm-eval-path``."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from rescue_bench.atomic import atomic_path
from rescue_bench.cli.flags import flag_values
from rescue_bench.cli.run_flags import OptionsCommand, task_options
from rescue_bench.data.sources import SOURCE_HELP
from rescue_bench.errors import ConfigError
from rescue_bench.printable import echo, printable
from rescue_bench.tasks.base import TaskConfig

tasks_app = typer.Typer(
    name="tasks",
    help="Inspect the six tasks: instance counts, rendered prompts, exports.",
    no_args_is_help=True,
)


class SummaryFormat(StrEnum):
    table = "table"
    json = "json"


Source = Annotated[str, typer.Argument(help=SOURCE_HELP, show_default=False)]
TaskName = Annotated[
    str, typer.Option("--task", help="A task name (`tasks summary` lists them).", show_default=False)
]
ModeName = Annotated[
    str,
    typer.Option("--mode", help="dialogue, audio, visual, audiovisual or video (reference aliases work)."),
]
ContextSize = Annotated[
    int | None,
    typer.Option(
        "--context-size", help="-1 all earlier rows, 0 none, N the last N (default: the task's own)."
    ),
]


def _config(ctx: typer.Context, mode: str = "dialogue", context_size: int | None = None) -> TaskConfig:
    """The task settings of the command line: mode, context and the tasks' own options (``run``'s flags)."""
    from pydantic import BaseModel, ValidationError

    from rescue_bench.spec import options_model
    from rescue_bench.tasks import TASKS
    from rescue_bench.tasks.base import resolve_mode

    options: dict[str, BaseModel] = {}
    for name, values in task_options(flag_values(ctx)).items():
        model = options_model(TASKS[name])
        if model is None:
            continue
        try:
            options[name] = model.model_validate(values)
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            field = ".".join(str(p) for p in error["loc"])
            raise ConfigError(f"--{name}-{field.replace('_', '-')}: {error['msg']}") from None
    return TaskConfig(mode=resolve_mode(mode), context_size=context_size, options=options)


@tasks_app.command(cls=OptionsCommand)
def summary(
    ctx: typer.Context,
    source: Source,
    fmt: Annotated[
        SummaryFormat, typer.Option("--format", help="table (the paper's Table 6 layout) or json.")
    ] = SummaryFormat.table,
) -> None:
    """Instances and contributing samples per task and scenario, as in the paper's Table 6."""
    from rescue_bench.data.load import load_samples
    from rescue_bench.tasks.summary import instance_counts

    counts = instance_counts(load_samples(source), _config(ctx))
    if fmt is SummaryFormat.json:
        echo(json.dumps(counts, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    from rescue_bench.tasks.summary import RULES

    table = Table(title=f"Task instances: {source}")
    table.add_column("Task")
    table.add_column("Construction rule")
    for header in ("Couple inst.", "Family inst.", "Couple samp.", "Family samp.", "All inst."):
        table.add_column(header, justify="right")
    for name, scopes in counts.items():
        numbers = [scopes["couple"]["instances"], scopes["family"]["instances"], scopes["couple"]["samples"],
                   scopes["family"]["samples"], scopes["all"]["instances"]]  # fmt: skip
        table.add_row(name.upper(), RULES[name], *(f"{n:,}" for n in numbers))
    console = Console()
    (console if console.is_terminal else Console(width=140)).print(table)


@tasks_app.command(cls=OptionsCommand)
def show(
    ctx: typer.Context,
    source: Source,
    task: TaskName,
    row: Annotated[str, typer.Option("--row", help="SAMPLE:ROW, the instance's row.", show_default=False)],
    mode: ModeName = "dialogue",
    context_size: ContextSize = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the request as one JSON object.")] = False,
) -> None:
    """Print the exact request (messages and answer schema) for one instance."""
    from rescue_bench.data.load import load_samples
    from rescue_bench.tasks import get_task
    from rescue_bench.tasks.summary import find_instance, parse_row_ref, request_json

    chosen = get_task(task)
    sample_id, row_index = parse_row_ref(row)
    cfg = _config(ctx, mode, context_size)
    inst = find_instance(chosen, load_samples(source), sample_id, row_index, cfg)
    request = chosen.render([inst], cfg)
    if as_json:
        echo(json.dumps({**request_json(request), "gold": inst.gold}, indent=2))  # ASCII: valid JSON, escaped
        return
    gold = json.dumps(inst.gold, ensure_ascii=False)
    echo(printable(f"# {inst.id} | gold {gold} | prompt {request.prompt_hash}", one_line=True))
    for message in request.messages:  # the data file's text: shown, never obeyed by the terminal
        echo(f"--- {message['role']} ---\n{printable(str(message['content']))}")
    echo(f"--- response_schema ---\n{json.dumps(request.response_schema, indent=2)}")


@tasks_app.command(cls=OptionsCommand)
def export(
    ctx: typer.Context,
    source: Source,
    task: TaskName,
    out: Annotated[Path, typer.Option("--out", help="The JSONL file to write.", show_default=False)],
    mode: ModeName = "dialogue",
    context_size: ContextSize = None,
) -> None:
    """Write one JSON line per instance: its fields, gold and the messages of its one-instance request."""
    from rescue_bench.data.load import load_samples
    from rescue_bench.tasks import get_task
    from rescue_bench.tasks.summary import export_records

    chosen = get_task(task)
    cfg = _config(ctx, mode, context_size)
    samples = load_samples(source)
    count = 0
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(out) as partial, partial.open("w", encoding="utf-8") as handle:
            for record in export_records(chosen, samples, cfg):
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
    except OSError as exc:
        raise ConfigError(f"cannot write {out}: {exc.strerror or exc}") from None
    echo(f"wrote {count} {chosen.INFO.name} instances from {len(samples)} samples to {out}", err=True)


@tasks_app.command("lm-eval-path")
def lm_eval_path() -> None:
    """Print the directory of the lm-eval task files shipped with the package, for lm-eval's --include_path.

    lm_eval --include_path "$(rescue-bench tasks lm-eval-path)" --tasks rescue_bench ...

    See the rescue-bench docs, adapters.
    """
    from rescue_bench.adapters.lm_eval import include_path

    echo(str(include_path()))


def register(app: typer.Typer) -> None:
    """Add the ``tasks`` command group to the root app."""
    app.add_typer(tasks_app)
