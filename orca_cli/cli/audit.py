"""`orca audit`."""

from __future__ import annotations

import typer

from orca_cli.cli.output import fail


def register(app: typer.Typer) -> None:
    @app.command("audit", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def audit_cmd() -> None:
        """List escalations, denials, resets and state loss."""
        fail("`orca audit` is not available in this build yet")
