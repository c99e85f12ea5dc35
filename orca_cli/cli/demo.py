"""`orca demo`."""

from __future__ import annotations

import typer

from orca_cli.cli.output import fail


def register(app: typer.Typer) -> None:
    @app.command("demo", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def demo_cmd() -> None:
        """Run an offline demo over real HTTP with simulated upstreams."""
        fail("`orca demo` is not available in this build yet")
