"""`orca escalate [SESSION_ID] [--once] [--router R] [--reason TEXT]` and
`orca reset [SESSION_ID] [--router R]` (SPEC §1.1, §6.2).

Both write a pending ask that the session's next request resolves under the caps then in
force — the CLI is no side door around a cap. Without SESSION_ID they act on the most recently
active session; with several active in the last 5 minutes they list them and exit 2. The
verdict already known is printed: session cap used -> exit 1; already strong -> exit 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer

from orca_cli.cli.operator import (
    Operator,
    config_option,
    json_option,
    pick_session,
    router_option,
    session_argument,
    token_option,
    url_option,
)
from orca_cli.cli.output import out_console, print_json

__all__ = ["register"]



def register(app: typer.Typer) -> None:
    @app.command("escalate")
    def escalate_cmd(
        session: str | None = session_argument(),
        once: bool = typer.Option(False, "--once", help="Serve only the next request strong; "
                                  "the tier stays base."),
        router: str | None = router_option(),
        reason: str = typer.Option("", "--reason", help="Why (recorded with the ask)."),
        as_json: bool = json_option(),
        url: str | None = url_option(),
        token: str | None = token_option(),
        config: str | None = config_option(),
    ) -> None:
        """Ask for a session's next request(s) to be served strong, within the caps.

        \b
        Example:
            orca escalate --once
            orca escalate 7f3c-claude-session --reason "stuck on the migration"
        """
        op = Operator(url, config, token=token)
        r, s = pick_session(op, session, router)
        _show(op.escalate(r, s, once=once, reason=reason), as_json)

    @app.command("reset")
    def reset_cmd(
        session: str | None = session_argument(),
        router: str | None = router_option(),
        reason: str = typer.Option("", "--reason", help="Why (recorded with the ask)."),
        as_json: bool = json_option(),
        url: str | None = url_option(),
        token: str | None = token_option(),
        config: str | None = config_option(),
    ) -> None:
        """Put a session back in the base tier at its next request (never refunds the cap).

        \b
        Example:
            orca reset
            orca reset 7f3c-claude-session --router coding
        """
        op = Operator(url, config, token=token)
        r, s = pick_session(op, session, router)
        _show(op.reset(r, s, reason=reason), as_json)


def _show(result: Mapping[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(result)
        return
    from orca_cli.cli.render import safe

    con = out_console()
    con.print(safe(result["message"]))
    if result.get("replaced") and result.get("status") == "pending":
        con.print(f"(it replaces the pending {safe(result['replaced'])} ask)")
