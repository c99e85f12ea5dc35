"""`orca doctor`."""

from __future__ import annotations

import typer

from orca_cli.cli.output import fail


def register(app: typer.Typer) -> None:
    @app.command("doctor", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def doctor_cmd() -> None:
        """Check config, store, upstreams, port and token."""
        fail("`orca doctor` is not available in this build yet")
