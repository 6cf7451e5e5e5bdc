"""Text from outside (a server's error body, a data file, a run directory) made safe to print to a terminal.

A terminal obeys control sequences in what it prints: ``ESC ]0;...`` sets the window title, ``ESC ]52;``
writes the clipboard, ``ESC [`` moves the cursor and can hide what came before, a carriage return overwrites
a line, and the bidirectional overrides reorder what is shown. :func:`printable` writes every such character
as a visible escape (``\\x1b``, ``\\u202e``), so it is shown and never obeyed. Every place where text from
outside reaches the terminal (error and warning lines, Rich tables, ``tasks show``) goes through it.
"""

from __future__ import annotations

import re

import typer
from rich.markup import escape

_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069"
    "\u061c\u180e\u200b-\u200d\u2060-\u2064\ufeff]"
)
"""C0 controls but tab and newline, DEL, C1 controls, line/paragraph separators, bidirectional marks and the
invisible ones (zero-width space, joiners, word joiner, byte-order mark): two names that differ only by one
of those would otherwise look the same."""
_CONTROL_OR_NEWLINE = re.compile(_CONTROL.pattern[:-1] + "\t\n]")


def _escaped(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control character written as a visible escape; ``one_line`` escapes tab and
    newline too (an error line stays one line whatever a server put in it).

    >>> printable("Bad key \\x1b]0;pwned\\x07 given")
    'Bad key \\\\x1b]0;pwned\\\\x07 given'
    >>> printable("a\\tb\\nc"), printable("a\\tb\\nc", one_line=True)
    ('a\\tb\\nc', 'a\\\\x09b\\\\x0ac')
    """
    return (_CONTROL_OR_NEWLINE if one_line else _CONTROL).sub(_escaped, text)


def has_hidden(text: str) -> bool:
    """Whether ``text`` holds a character :func:`printable` escapes (a control, bidi or zero-width one).

    >>> has_hidden("gpt\u200b-4o"), has_hidden("gpt-4o")
    (True, False)
    """
    return _CONTROL.search(text) is not None


def table_cell(value: object) -> str:
    """A value for a Rich table cell: control characters escaped, and Rich markup (``[bold]``) shown as text.

    >>> table_cell("[red]x\x1b")
    '\\\\[red]x\\\\x1b'
    """
    return escape(printable(str(value), one_line=True))


def echo(message: object = "", *, err: bool = False, nl: bool = True) -> None:
    """``typer.echo`` of :func:`printable` text: the one way the CLI prints a line, so that whatever a line
    quotes (a model name from ``run.json``, a run directory's name, a server's words, a flag's value) is
    shown and never obeyed by the terminal. Tab and newline are kept: a table or a list stays laid out."""
    typer.echo(printable(str(message)), err=err, nl=nl)


def markup_safe(text: str) -> str:
    """Text for a Rich ``console.print`` whose words come from outside: controls escaped, markup shown.

    >>> markup_safe("run [bold]x")
    'run \\\\[bold]x'
    """
    return escape(printable(text))
