"""`orca statusline` in the CLI's help and completion. The `orca` entry point runs
`orca_cli.statusline` directly, before this framework loads (it must answer fast); this
command is the same code for `python -m orca_cli.cli` and the test runner."""

from __future__ import annotations

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("statusline")
    def statusline_cmd(
        session: str | None = typer.Option(None, "--session", "-s", help="The session (default: "
                                           "`session_id` of the JSON on stdin)."),
        router: str | None = typer.Option(None, "--router", "-r", help="Router name "
                                          "(default: the one that served it last)."),
        url: str | None = typer.Option(None, "--url", help="The sidecar's base URL."),
        token: str | None = typer.Option(None, "--token", help="The admin token."),
    ) -> None:
        """One line for an agent's status bar (never fails).

        Tier and reason, model, session cost, cache hit share and cache clock, streak and
        strikes, caps left. Prints "orca: not running" and exits 0 when no sidecar answers.

        \b
        Example:
            orca statusline --session my-agent
            echo '{"session_id": "my-agent"}' | orca statusline
            orca init --agent claude-code     # Claude Code runs it after each message
        """
        from orca_cli.statusline import main

        argv = [f"--{k}={v}" for k, v in (("session", session), ("router", router),
                                           ("url", url), ("token", token)) if v]
        raise typer.Exit(main(argv))
