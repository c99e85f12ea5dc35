"""`orca serve`."""

from __future__ import annotations

import typer

from orca_cli.cli.output import fail


def register(app: typer.Typer) -> None:
    @app.command("serve", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def serve_cmd() -> None:
        """Start the sidecar proxy."""
        fail("`orca serve` is not available in this build yet")
