"""How a flag declared once becomes a click option of every command that takes it.

A :class:`Flag` is one row: its names, where its value goes in the run spec, its help text and its panel of
``--help``. A :class:`FlagsCommand` adds a set of such flags to a command and hands their values to it as
:class:`FlagValues` (:func:`flag_values`), so that a command's own signature lists only what is its own. The
rows themselves, and the run spec they make, are :mod:`rescue_bench.cli.run_flags`'s.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final

import typer
from typer.core import TyperCommand

from rescue_bench.errors import ConfigError

FLAGS_KEY: Final = "rescue_bench.flags"
"""Where a :class:`FlagsCommand` leaves the flag values in ``ctx.meta``."""
Path_ = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Flag:
    """One command-line flag and where its value goes in the spec."""

    decls: tuple[str, ...]
    """``--name`` (and aliases); ``--on/--off`` for a flag that can be turned either way."""
    dest: str
    paths: tuple[Path_, ...]
    """Spec fields the value is written to (a shared task option sets several); empty: handled apart."""
    kind: type
    help: str
    multiple: bool = False
    value: object = None
    """For an on-only flag: the value it sets (``--no-cache`` sets ``rundir.cache`` to false)."""
    parse: Callable[[str], object] | None = None
    """Turns the flag's text into the spec's value (``--extra-body``'s JSON); errors name the flag."""
    panel: str = ""
    """The group of ``--help`` it is shown in (:data:`PANELS`)."""


DATA, MODEL, GENERATION, ENGINE, JUDGING, VIDEO, TASK_OPTIONS, OUTPUT = (
    "Data",
    "Model",
    "Generation",
    "Engine and budget",
    "Judging",
    "Video mode",
    "Task options",
    "Output and spec",
)
PANELS: Final = (DATA, MODEL, GENERATION, ENGINE, JUDGING, VIDEO, TASK_OPTIONS, OUTPUT)
"""The groups of a run command's ``--help``, in the order shown."""


def parameters_of(flag: Flag) -> list[inspect.Parameter]:
    """The flag's parameter, and one hidden parameter per further long name.

    ``--help`` joins all long names of an option in one column, which cuts a long alias at 100 columns; an
    alias is therefore a hidden option of its own, named in the help text, whose value
    :func:`fold_aliases` hands to the flag.
    """
    names = (flag.decls[0], *(d for d in flag.decls[1:] if not d.startswith("--")))
    aliases = [d for d in flag.decls[1:] if d.startswith("--")]
    text = flag.help + (f" Also {', '.join(aliases)}." if aliases else "")
    shown = {"help": text, "rich_help_panel": flag.panel or None}
    parameters = [_parameter(flag, flag.dest, names, shown)]
    for index, alias in enumerate(aliases):
        hidden = {"hidden": True}
        parameters.append(_parameter(flag, f"{flag.dest}{ALIAS_MARK}{index}", (alias,), hidden))
    return parameters


ALIAS_MARK: Final = "__alias"


def _parameter(flag: Flag, dest: str, names: Sequence[str], shown: dict[str, Any]) -> inspect.Parameter:
    if flag.kind is bool:
        option = typer.Option(*names, show_default=False, **shown)
        annotation: Any = Annotated[bool | None, option]
    elif flag.multiple:
        annotation = Annotated[list[flag.kind] | None, typer.Option(*names, **shown)]  # type: ignore[name-defined]
    else:
        annotation = Annotated[flag.kind | None, typer.Option(*names, **shown)]
    return inspect.Parameter(dest, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)


def fold_aliases(values: dict[str, object]) -> dict[str, object]:
    """The values by flag, an alias's value given to its flag (when the flag itself was not given)."""
    folded = {k: v for k, v in values.items() if ALIAS_MARK not in k}
    for key, value in values.items():
        dest = key.partition(ALIAS_MARK)[0]
        if ALIAS_MARK in key and value not in (None, (), []) and folded.get(dest) in (None, (), []):
            folded[dest] = value
    return folded


def click_params(flags: Sequence[Flag]) -> tuple[Any, ...]:
    """The click parameters of ``flags`` (an alias: a hidden parameter of its own)."""
    return declared_params([p for f in flags for p in parameters_of(f)])


def declared_params(parameters: list[inspect.Parameter]) -> tuple[Any, ...]:
    """Click parameters made by typer from a declaration of ``parameters`` (never called)."""

    def declared() -> None:  # pragma: no cover - only its signature is read
        """The shared flags."""

    declared.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    declared.__annotations__ = {p.name: p.annotation for p in parameters}
    holder = typer.Typer(add_completion=False)
    holder.command()(declared)
    return tuple(typer.main.get_command(holder).params)


def plain_parameter(name: str, kind: type, option: Any) -> inspect.Parameter:
    default = False if kind is bool else None
    annotation = Annotated[kind, option] if kind is bool else Annotated[kind | None, option]
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


class FlagsCommand(TyperCommand):
    """A command that also takes shared flags (:meth:`shared`); their values reach it through
    :func:`flag_values`, so that its own signature lists only what is its own."""

    @staticmethod
    def shared() -> tuple[Any, ...]:
        raise NotImplementedError

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params = by_panel([*self.params, *self.shared()])

    def invoke(self, ctx: Any) -> Any:
        # The command's own callback knows only its own parameters: the shared ones are moved aside.
        names = {p.name for p in self.shared()}
        given = {n: ctx.params.pop(n) for n in names if n in ctx.params}
        ctx.meta[FLAGS_KEY] = FlagValues(fold_aliases(given))
        return super().invoke(ctx)


def by_panel(params: list[Any]) -> list[Any]:
    """The parameters in the order of :data:`PANELS` (``--help`` shows its groups as they first appear)."""
    order = {panel: index for index, panel in enumerate(PANELS)}
    return sorted(params, key=lambda p: order.get(getattr(p, "rich_help_panel", None) or "", -1))


@dataclass(frozen=True, slots=True)
class FlagValues:
    """The values of the shared flags on one command line (``None``: not given)."""

    values: Mapping[str, object]

    def given(self, dest: str) -> object:
        value = self.values.get(dest)
        return None if value in (None, (), []) else value

    @property
    def print_spec(self) -> bool:
        return bool(self.values.get("print_spec"))


def flag_values(ctx: typer.Context) -> FlagValues:
    values = ctx.meta.get(FLAGS_KEY)
    if not isinstance(values, FlagValues):
        raise ConfigError("internal: the command was not built as a FlagsCommand")
    return values
