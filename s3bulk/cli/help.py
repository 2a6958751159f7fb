"""`--help` as the command pages show it: the options in their panels (each option's
`rich_help_panel`), drawn with rich, then the numbered examples as plain lines.

Why not typer's own rich help (`rich_markup_mode`): it reads every help text as rich markup or
Markdown (`s3://BUCKET[/PREFIX]` is a markup error there, `*.jpg` italics), joins the examples'
lines into one paragraph, and prints straight to the terminal, so the docs script could not read
it back. Here the panels are built from click's public help records (the same rows the command
pages' tables hold, grouped by `panels`), rendered into a string and written through click's
formatter, so `command.get_help(ctx)` returns exactly what `--help` prints.

rich is imported only in `write_panels`, which runs only when help is asked for: a run imports
none of this. Colour only on a terminal (and not with NO_COLOR); piped help is plain text.
"""

from __future__ import annotations

import io
import re
import sys
from typing import Any, Sequence

ARGUMENTS = "Arguments"
OPTIONS = "Options"
COMMANDS = "Commands"
FLAGS_WIDTH = 30  # wider flags go on two lines: `--a /` over `--b`, `--flag` over its METAVAR
_DEFAULT_TAIL = re.compile(r"\s{2}(\[[^\[\]]*\])$")  # click's "  [default: 64; x>=1]" after the help

# An example: what it does, the command line, and (for the page only) what it prints.
Example = tuple[str, str] | tuple[str, str, str]


def panels(command: Any, ctx: Any) -> dict[str, list[tuple[str, str]]]:
    """The command's help rows, (flags, meaning) as click writes them, by panel: arguments first,
    then the unpanelled options, then each named panel in the order its first option is declared.
    Hidden parameters are left out. The command pages (scripts/cli_docs.py) use the same rows."""
    arguments: list[tuple[str, str]] = []
    grouped: dict[str, list[tuple[str, str]]] = {OPTIONS: []}
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        if param.param_type_name == "argument":
            arguments.append(record)
        else:
            grouped.setdefault(getattr(param, "rich_help_panel", None) or OPTIONS, []).append(record)
    ordered = {ARGUMENTS: arguments} if arguments else {}
    ordered.update((name, rows) for name, rows in grouped.items() if rows)
    return ordered


def commands_rows(group: Any, ctx: Any) -> list[tuple[str, str]]:
    """A group's visible commands, (name, first line of its help), in the order it lists them."""
    rows = []
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        if sub is not None and not getattr(sub, "hidden", False):
            rows.append((name, sub.get_short_help_str(limit=200)))
    return rows


def write_help(command: Any, ctx: Any, formatter: Any, examples: Sequence[Example] = ()) -> None:
    """A command's (or the group's) whole help into click's formatter: usage and description as
    click writes them, the panels, then the examples."""
    command.format_usage(ctx, formatter)
    command.format_help_text(ctx, formatter)
    sections = panels(command, ctx)
    if hasattr(command, "list_commands"):
        sections[COMMANDS] = commands_rows(command, ctx)
    formatter.write_paragraph()
    write_panels(sections, formatter, color=_wants_color(ctx))
    if examples:
        write_examples(examples, formatter)


def write_examples(examples: Sequence[Example], formatter: Any) -> None:
    """The examples as a section level with the panels: a numbered line saying what each does,
    the command line under its words (what it prints is for the command pages only)."""
    formatter.write_paragraph()
    formatter.write("Examples:\n")
    for n, example in enumerate(examples, 1):
        if n > 1:
            formatter.write("\n")
        number = f"  {n}. "
        formatter.write(f"{number}{example[0]}\n{' ' * len(number)}{example[1]}\n")


def write_panels(sections: dict[str, list[tuple[str, str]]], formatter: Any, *, color: bool) -> None:
    from rich import box
    from rich.console import Console
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    out = _Buffer(getattr(sys.stdout, "encoding", None) or "utf-8")
    console = Console(file=out, width=formatter.width + 2, force_terminal=color, no_color=not color or None,
                      highlight=False, emoji=False, markup=False, legacy_windows=False, soft_wrap=False)
    cells = {flags: _flag_lines(flags) for rows in sections.values() for flags, _ in rows}
    flags_width = max((len(line) for lines in cells.values() for line in lines), default=0)
    for title, rows in sections.items():
        table = Table(box=None, show_header=False, expand=True, pad_edge=False, padding=(0, 1))
        table.add_column(style="bold cyan" if title != COMMANDS else "bold", width=flags_width,
                         overflow="fold")
        table.add_column(ratio=1)
        for flags, meaning in rows:
            text = Text(meaning)
            tail = _DEFAULT_TAIL.search(meaning)
            if tail:
                text.stylize("dim", tail.start(1))
            table.add_row("\n".join(cells[flags]), text)
        console.print(Panel(table, title=title, title_align="left", border_style="dim", box=box.ROUNDED))
    formatter.write(out.getvalue())


def _flag_lines(flags: str) -> list[str]:
    """A flags cell as lines no wider than FLAGS_WIDTH where it can be: a `--a / --b` pair on
    two lines, then a line still too wide broken before its metavar."""
    pair = flags.split(" / ")
    lines = [part + " /" for part in pair[:-1]] + pair[-1:]
    out = []
    for line in lines:
        head, space, metavar = line.rpartition(" ")
        out.extend([head, "  " + metavar] if len(line) > FLAGS_WIDTH and space and head else [line])
    return out


class _Buffer(io.StringIO):
    """A string buffer that says which encoding its text will meet: rich draws ASCII boxes for
    a stdout that can not take the rounded ones."""

    def __init__(self, encoding: str) -> None:
        super().__init__()
        self._encoding = encoding

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding


def _wants_color(ctx: Any) -> bool:
    """Colour as click decides it for this context (`color=False` for the command pages), else
    only on a terminal."""
    if ctx.color is not None:
        return bool(ctx.color)
    return sys.stdout.isatty()
