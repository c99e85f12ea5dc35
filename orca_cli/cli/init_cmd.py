"""`orca init`."""

from __future__ import annotations

import typer

from orca_cli.cli.output import fail


def register(app: typer.Typer) -> None:
    @app.command("init", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def init_cmd_cmd() -> None:
        """Write a commented orca.toml."""
        fail("`orca init` is not available in this build yet")
