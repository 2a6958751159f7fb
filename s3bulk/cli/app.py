"""The typer app: its settings, the --version option, and the commands in the order `s3bulk
--help` lists them. Help is drawn by help.py: the options in their panels, as the command pages
show them, then each command's numbered examples (as s5cmd's are)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Sequence

import typer
from typer.core import TyperCommand, TyperGroup

from .commands import cat, check, copy, du, ls, mv, rm, serve, sync
from .help import Example, write_help


class _Group(TyperGroup):
    """`s3bulk --help`: the options and the commands in panels (help.py)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        write_help(self, ctx, formatter)


app = typer.Typer(cls=_Group, add_completion=True, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"],
                                                           "max_content_width": 100},
                  help="Copy and mirror very large numbers of objects between S3-compatible stores "
                       "and local disk, fast and in bounded memory.")


class _Command(TyperCommand):
    """A command whose help is drawn by help.py, with its examples (`examples`, set per command by
    `with_examples`; scripts/cli_docs.py reads them for the command pages). Arguments show as plain
    `SRC DST` in the usage line: typer writes `{SRC}`, which reads like syntax to type."""

    examples: ClassVar[Sequence[Example]] = ()

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [piece[1:-1] if piece.startswith("{") and piece.endswith("}") else piece
                for piece in super().collect_usage_pieces(ctx)]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        write_help(self, ctx, formatter, self.examples)


def with_examples(examples: Sequence[Example]) -> type[_Command]:
    """The command class of a command with these examples."""
    return type("Command", (_Command,), {"examples": tuple(examples)})


def _version(value: bool) -> None:
    if value:
        from .version import version_text

        print(f"s3bulk {version_text()}")
        raise typer.Exit(0)


@app.callback()
def _main(version: Annotated[bool, typer.Option("--version", help="print the version and exit", is_eager=True,
                                                callback=_version)] = False) -> None:
    """Copy and mirror very large numbers of objects between S3-compatible stores and local disk,
    fast and in bounded memory."""


app.command("copy", cls=with_examples(copy.EXAMPLES))(copy.copy)
app.command("mv", help=mv.HELP, cls=with_examples(mv.EXAMPLES))(mv.mv)
app.command("sync", cls=with_examples(sync.EXAMPLES))(sync.sync)
app.command("check", cls=with_examples(check.EXAMPLES))(check.check)
app.command("ls", cls=with_examples(ls.EXAMPLES))(ls.ls_command)
app.command("rm", cls=with_examples(rm.EXAMPLES))(rm.rm_command)
app.command("du", cls=with_examples(du.EXAMPLES))(du.du_command)
app.command("serve", cls=with_examples(serve.EXAMPLES))(serve.serve)
app.command("cat", cls=with_examples(cat.EXAMPLES))(cat.cat_command)
