"""`orca score`."""

from __future__ import annotations

import typer

from orca_cli.cli.output import fail


def register(app: typer.Typer) -> None:
    @app.command("score", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def score_cmd() -> None:
        """Score one request body: full transcript and delta, per feature."""
        fail("`orca score` is not available in this build yet")
