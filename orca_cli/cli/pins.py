"""`orca pins`."""

from __future__ import annotations

import typer

from orca_cli.cli.output import fail

sub = typer.Typer(help="Dump model, channel and affinity pins.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(sub, name="pins")


@sub.callback(invoke_without_command=True, context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def _main(ctx: typer.Context) -> None:
    fail("`orca pins` is not available in this build yet")
