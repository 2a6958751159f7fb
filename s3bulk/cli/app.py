"""The typer app: its settings, the --version option, and the commands in the order `s3bulk
--help` lists them, each with its numbered examples at the end of its help (as s5cmd's are)."""

from __future__ import annotations

from typing import Annotated, Any, Sequence

import typer
from typer.core import TyperCommand

from .commands import cat, check, copy, du, ls, mv, rm, serve, sync

app = typer.Typer(add_completion=True, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]},
                  help="Copy and mirror very large numbers of objects between S3-compatible stores "
                       "and local disk, fast and in bounded memory.")


class _Command(TyperCommand):
    """Arguments shown as plain `SRC DST` in the usage line: typer writes `{SRC}`, which reads like
    syntax to type."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [piece[1:-1] if piece.startswith("{") and piece.endswith("}") else piece
                for piece in super().collect_usage_pieces(ctx)]

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        """The examples as a section of their own, level with "Options:" (click indents an epilog)."""
        if self.epilog:
            formatter.write_paragraph()
            formatter.write_text(self.epilog)


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        print(f"s3bulk {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(version: Annotated[bool, typer.Option("--version", help="print the version and exit", is_eager=True,
                                                callback=_version)] = False) -> None:
    """Copy and mirror very large numbers of objects between S3-compatible stores and local disk,
    fast and in bounded memory."""


def examples(numbered: Sequence[tuple[str, str]]) -> str:
    """A command's examples as its help's epilog: a numbered line saying what each does, the
    command line under its words. Each paragraph starts with \\b, so click prints it as written."""
    lines = ["\b", "Examples:"]
    for n, (what, command_line) in enumerate(numbered, 1):
        if n > 1:
            lines += ["", "\b"]
        number = f"  {n}. "
        lines += [number + what, " " * len(number) + command_line]
    return "\n".join(lines)


app.command("copy", cls=_Command, epilog=examples(copy.EXAMPLES))(copy.copy)
app.command("mv", cls=_Command, help=mv.HELP, epilog=examples(mv.EXAMPLES))(mv.mv)
app.command("sync", cls=_Command, epilog=examples(sync.EXAMPLES))(sync.sync)
app.command("check", cls=_Command, epilog=examples(check.EXAMPLES))(check.check)
app.command("ls", cls=_Command, epilog=examples(ls.EXAMPLES))(ls.ls_command)
app.command("rm", cls=_Command, epilog=examples(rm.EXAMPLES))(rm.rm_command)
app.command("du", cls=_Command, epilog=examples(du.EXAMPLES))(du.du_command)
app.command("serve", cls=_Command, epilog=examples(serve.EXAMPLES))(serve.serve)
app.command("cat", cls=_Command, epilog=examples(cat.EXAMPLES))(cat.cat_command)
