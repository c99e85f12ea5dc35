"""`orca explain`."""

from __future__ import annotations

import typer

from orca_cli.cli.output import fail


def register(app: typer.Typer) -> None:
    @app.command("explain", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def explain_cmd() -> None:
        """Explain a routing decision by request id."""
        fail("`orca explain` is not available in this build yet")
