"""The typer app: its settings, the --version option, and the commands in the order `s3bulk
--help` lists them."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer.core import TyperArgument, TyperCommand

from .commands import cat, check, copy, du, ls, mv, rm, serve, sync

app = typer.Typer(add_completion=True, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]},
                  help="Copy and mirror very large numbers of objects between S3-compatible stores "
                       "and local disk, fast and in bounded memory.")


class _Command(TyperCommand):
    """Arguments shown as plain `SRC DST` in the usage line: typer writes `{SRC}`, which reads like
    syntax to type."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperArgument):
                def plain(ctx: Any, *, usage: bool = False, _make: Any = param.make_metavar) -> str:
                    var = str(_make(ctx=ctx, usage=usage))
                    return var[1:-1] if var.startswith("{") and var.endswith("}") else var
                param.make_metavar = plain  # type: ignore[method-assign]


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


app.command("copy", cls=_Command)(copy.copy)
app.command("mv", cls=_Command, help=mv.HELP)(mv.mv)
app.command("sync", cls=_Command)(sync.sync)
app.command("check", cls=_Command)(check.check)
app.command("ls", cls=_Command)(ls.ls_command)
app.command("rm", cls=_Command)(rm.rm_command)
app.command("du", cls=_Command)(du.du_command)
app.command("serve", cls=_Command)(serve.serve)
app.command("cat", cls=_Command)(cat.cat_command)
