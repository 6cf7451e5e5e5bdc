"""How a flag declared once becomes a click option of every command that takes it.

A :class:`Flag` is one row: its names, where its value goes in the run spec (or in a command's typed options
record), its help text and its panel of ``--help``. :func:`options_of` turns a row into click options;
:func:`with_flags` makes the command class that adds a set of rows to a command and hands their values to it
as :class:`FlagValues` (:func:`flag_values`), so that a command's own signature lists only what is its own.
The run flags, and the run spec they make, are :mod:`rescue_bench.cli.run_flags`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import GenericAlias
from typing import Any, Final, TypeVar

import typer
from typer.core import TyperCommand, TyperOption
from typer.main import _get_param
from typer.models import ParamMeta

from rescue_bench.errors import ConfigError

FLAGS_KEY: Final = "rescue_bench.flags"
"""Where a :class:`FlagsCommand` leaves the flag values in ``ctx.meta``."""
Path_ = tuple[str, ...]
RecordT = TypeVar("RecordT")


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
    default: object = None
    """The value when the flag is not given (shown in ``--help``); ``None``: not given, the spec decides."""
    required: bool = False


def option(
    decls: str, dest: str, kind: type, help: str, default: object = None, *, required: bool = False
) -> Flag:
    """A command's own option as a row (no spec field): read with :meth:`FlagValues.record`.

    >>> option("--seed", "seed", int, "Bootstrap seed.", 0).decls
    ('--seed',)
    """
    return Flag(tuple(decls.split()), dest, (), kind, help, default=default, required=required)


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


def options_of(flag: Flag) -> list[TyperOption]:
    """The flag's click option, and one hidden option per further long name.

    ``--help`` joins all long names of an option in one column, which cuts a long alias at 100 columns; an
    alias is therefore a hidden option of its own, named in the help text, whose value
    :func:`fold_aliases` hands to the flag.
    """
    names = (flag.decls[0], *(d for d in flag.decls[1:] if not d.startswith("--")))
    aliases = [d for d in flag.decls[1:] if d.startswith("--")]
    text = flag.help + (f" Also {', '.join(aliases)}." if aliases else "")
    options = [_option(flag, flag.dest, names, help=text, panel=flag.panel or None)]
    for index, alias in enumerate(aliases):
        options.append(_option(flag, f"{flag.dest}{ALIAS_MARK}{index}", (alias,), hidden=True))
    return options


ALIAS_MARK: Final = "__alias"


def _option(
    flag: Flag,
    dest: str,
    names: Sequence[str],
    *,
    help: str = "",
    panel: str | None = None,
    hidden: bool = False,
) -> TyperOption:
    """The click option of one row's names, made as typer makes the option of a declared parameter.

    Typer vendors its click and builds options only from declared parameters, through ``_get_param``: the one
    call here that reaches past typer's public API (typer is pinned to a minor version for it, and the
    ``--help`` tests show any change it brings).
    """
    kind: Any = flag.kind
    if flag.multiple:
        kind = GenericAlias(list, (flag.kind,))
    declared = typer.Option(
        ... if flag.required else flag.default,
        *names,
        help=help,
        hidden=hidden,
        rich_help_panel=panel,
        show_default=flag.default is not None,
        metavar="" if flag.kind is bool else None,  # a flag takes no value: none shown beside it
    )
    option = _get_param(
        ParamMeta(name=dest, default=declared, annotation=kind if flag.required else kind | None)
    )
    assert isinstance(option, TyperOption)
    return option


def fold_aliases(values: dict[str, object]) -> dict[str, object]:
    """The values by flag, an alias's value given to its flag (when the flag itself was not given)."""
    folded = {k: v for k, v in values.items() if ALIAS_MARK not in k}
    for key, value in values.items():
        dest = key.partition(ALIAS_MARK)[0]
        if ALIAS_MARK in key and value not in (None, (), []) and folded.get(dest) in (None, (), []):
            folded[dest] = value
    return folded


class FlagsCommand(TyperCommand):
    """A command that also takes the flags of :meth:`rows` (:func:`with_flags` makes one); their values reach
    it through :func:`flag_values`, so that its own signature lists only what is its own."""

    @staticmethod
    def rows() -> Sequence[Flag]:
        raise NotImplementedError

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        shared = [option for flag in self.rows() for option in options_of(flag)]
        self.shared_names = frozenset(option.name for option in shared if option.name)
        self.params = by_panel([*self.params, *shared])

    def invoke(self, ctx: Any) -> Any:
        # The command's own callback knows only its own parameters: the shared ones are moved aside.
        given = {n: ctx.params.pop(n) for n in self.shared_names if n in ctx.params}
        ctx.meta[FLAGS_KEY] = FlagValues(fold_aliases(given))
        return super().invoke(ctx)


def with_flags(flags: Callable[[], Sequence[Flag]]) -> type[FlagsCommand]:
    """The command class (``app.command(cls=...)``) of a command that also takes the rows ``flags`` gives."""

    class Command(FlagsCommand):
        rows = staticmethod(flags)

    return Command


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

    def record(self, kind: Callable[..., RecordT], flags: Sequence[Flag]) -> RecordT:
        """The typed record ``kind`` of the values of ``flags`` (each passed by its ``dest``)."""
        return kind(**{flag.dest: self.values.get(flag.dest, flag.default) for flag in flags})

    @property
    def print_spec(self) -> bool:
        return bool(self.values.get("print_spec"))


def flag_values(ctx: typer.Context) -> FlagValues:
    values = ctx.meta.get(FLAGS_KEY)
    if not isinstance(values, FlagValues):
        raise ConfigError("internal: the command was not built as a FlagsCommand")
    return values
