"""`orca audit [--router R] [--since DUR] [--json]` (SPEC §1.1, §6.6): escalations,
de-escalations, once-boosts, resets, cap denials, state loss and degraded periods."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer

from orca_cli.cli.operator import (
    SINCE_HELP,
    Operator,
    config_option,
    json_option,
    router_option,
    token_option,
    url_option,
)
from orca_cli.cli.output import out_console, print_json
from orca_cli.cli.render import add_row, fmt_ts, short

__all__ = ["register", "render_audit"]


def register(app: typer.Typer) -> None:
    @app.command("audit")
    def audit_cmd(
        router: str | None = router_option(),
        since: str | None = typer.Option(None, "--since", metavar="DUR", help=SINCE_HELP),
        as_json: bool = json_option(),
        url: str | None = url_option(),
        token: str | None = token_option(),
        config: str | None = config_option(),
    ) -> None:
        """List audit events, oldest first.

        \b
        Example:
            orca audit --since 1h
            orca audit --router coding --json
        """
        events = Operator(url, config, token=token).audit(router, since)
        if as_json:
            print_json(events)
        else:
            out_console().print(render_audit(events))


def render_audit(events: list[Mapping[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(title=f"{len(events)} audit event(s)", title_justify="left")
    for col in ("time", "router", "session", "event", "trigger", "reason", "actor", "request"):
        keep = col in ("time", "event", "actor")  # the columns a reader scans must not wrap
        table.add_column(col, overflow="fold", no_wrap=keep)
    for e in events:
        add_row(table, fmt_ts(e.get("ts")), e.get("router") or "-", short(e.get("session")),
                e.get("event"), e.get("trigger") or "-",
                # an operator's `--reason` beside the machine reason it resolved as
                f"{e.get('reason') or '-'} ({e['note']})" if e.get("note") else
                e.get("reason") or "-",
                e.get("actor") or "-", e.get("request_id") or "-")
    return table
