"""`orca pins dump [--session S] [--router R] [--json]` (SPEC §1.1, §5): every model, channel
and affinity pin with its remaining TTL."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer

from orca_cli.cli.operator import (
    Operator,
    config_option,
    json_option,
    router_option,
    token_option,
    url_option,
)
from orca_cli.cli.output import out_console, print_json
from orca_cli.cli.render import add_row, fmt_ttl, short

__all__ = ["register", "render_pins"]

sub = typer.Typer(help="Dump model, channel and affinity pins.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(sub, name="pins")


@sub.command("dump")
def dump_cmd(
    session: str | None = typer.Option(None, "--session", "-s", help="Only this session (its "
                                       "id, or a unique start of it, 8 characters or more)."),
    router: str | None = router_option(),
    as_json: bool = json_option(),
    url: str | None = url_option(),
    token: str | None = token_option(),
    config: str | None = config_option(),
) -> None:
    """Dump every pin with its remaining TTL.

    \b
    Example:
        orca pins dump
        orca pins dump --session 7f3c-claude-session --json
    """
    rows = Operator(url, config, token=token).pins(session, router)
    if as_json:
        print_json(rows)
    else:
        out_console().print(render_pins(rows))


def _value(row: Mapping[str, Any]) -> str:
    v = row.get("value")
    if isinstance(v, Mapping):
        return f"{v.get('channel')} key #{v.get('key_index')} fp {v.get('key_fp') or '-'}"
    return str(v)


def render_pins(rows: list[Mapping[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(title=f"{len(rows)} pin(s)", title_justify="left")
    for col in ("kind", "router", "session", "tier", "value", "ttl"):
        table.add_column(col, overflow="fold")
    for r in rows:
        who = short(r.get("session")) if r.get("session") else \
            f"prefix {str(r.get('prefix', ''))[:16]}"
        add_row(table, r["kind"], r["router"], who, r["tier"], _value(r), fmt_ttl(r.get("ttl_s")))
    return table
