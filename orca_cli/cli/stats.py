"""`orca stats`."""

from __future__ import annotations

import typer

from orca_cli.cli.output import fail


def register(app: typer.Typer) -> None:
    @app.command("stats", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def stats_cmd() -> None:
        """Show strong share, escalations, denials, cache hits and cost."""
        fail("`orca stats` is not available in this build yet")
