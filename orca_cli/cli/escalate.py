"""`orca escalate`."""

from __future__ import annotations

import typer

from orca_cli.cli.output import fail


def register(app: typer.Typer) -> None:
    @app.command("escalate", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def escalate_cmd() -> None:
        """Ask for a session's next turn(s) to be served strong."""
        fail("`orca escalate` is not available in this build yet")

    @app.command("reset", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def reset_cmd() -> None:
        """Put a session back in the base tier (never refunds the per-session cap)."""
        fail("`orca reset` is not available in this build yet")
