"""`orca replay`."""

from __future__ import annotations

import typer

from orca_cli.cli.output import fail


def register(app: typer.Typer) -> None:
    @app.command("replay", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def replay_cmd() -> None:
        """Replay the seeded corpus through the real decision code."""
        fail("`orca replay` is not available in this build yet")
