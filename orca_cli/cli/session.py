"""`orca session list [--router R] [--json]` and `orca session show [SESSION_ID] [--json]`
(SPEC §1.1, §1.1a): which tier each session is in and why, its evidence and its pins."""

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
from orca_cli.cli.render import add_row, fmt_ttl, safe, short

__all__ = ["register", "render_session", "render_sessions"]

sub = typer.Typer(help="List and show session tier state.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(sub, name="session")


@sub.command("list")
def list_cmd(
    router: str | None = router_option(),
    as_json: bool = json_option(),
    url: str | None = url_option(),
    token: str | None = token_option(),
    config: str | None = config_option(),
) -> None:
    """List every session with tier state or pins, most recently served first.

    \b
    Example:
        orca session list --router coding
    """
    rows = Operator(url, config, token=token).list_sessions(router)
    if as_json:
        print_json(rows)
    else:
        out_console().print(render_sessions(rows))


@sub.command("show")
def show_cmd(
    session: str | None = session_argument(),
    router: str | None = router_option(),
    as_json: bool = json_option(),
    url: str | None = url_option(),
    token: str | None = token_option(),
    config: str | None = config_option(),
) -> None:
    """Show one session: tier and why, escalations, strikes, streak, pins with TTLs.

    \b
    Example:
        orca session show
        orca session show 7f3c-claude-session --json
    """
    op = Operator(url, config, token=token)
    r, s = pick_session(op, session, router)
    view = op.show_session(r, s)
    if as_json:
        print_json(view)
    else:
        out_console().print(render_session(view))


def _pin(p: Mapping[str, Any] | None) -> str:
    return f"{p['model']} ({fmt_ttl(p.get('ttl_s'))})" if p else "-"


def _chan(p: Mapping[str, Any] | None) -> str:
    if not p:
        return "-"
    return f"{p['channel']} key #{p['key_index']} fp {p.get('key_fp') or '-'} ({fmt_ttl(p.get('ttl_s'))})"


def _pending(p: Mapping[str, Any] | None) -> str:
    if not p:
        return "-"
    why = f": {p['reason']}" if p.get("reason") else ""
    return f"{p['ask']} by {p.get('actor') or '?'}{why}"


def _pct(share: Any) -> str:
    return "-" if not isinstance(share, (int, float)) else f"{share:.0%}"


def render_sessions(rows: list[Mapping[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(title=f"{len(rows)} session(s)", title_justify="left")
    for col in ("session", "router", "tier", "reason", "esc", "streak", "strikes",
                "clean", "pending", "base pin", "strong pin", "ttl"):
        table.add_column(col, overflow="ellipsis", no_wrap=True)
    for v in rows:
        add_row(table, short(v["session_id"]), v["router"], v["tier"], v["reason"],
                      f"{v['escalation_count']}/{v.get('max_per_session', '?')}",
                      str(v["difficulty_streak"]), str(len(v["strikes"])), str(v["clean_turns"]),
                      _pending(v.get("pending")), _pin(v["pins"]["base"]),
                      _pin(v["pins"]["strong"]), fmt_ttl(v.get("ttl_s")))
    return table


def render_session(v: Mapping[str, Any]) -> Any:
    from rich.table import Table

    table = Table(show_header=False, title=f"session {safe(v['session_id'])} · router {safe(v['router'])}",
                  title_justify="left")
    table.add_column("key", style="bold")
    table.add_column("value", overflow="fold")
    trigger = f" (trigger {v['trigger']})" if v.get("trigger") else ""
    add_row(table, "tier", f"{v['tier']}; reason={v['reason']}{trigger}")
    add_row(table, "escalations", f"{v['escalation_count']} of max_per_session "
                                 f"{v.get('max_per_session', '?')} (never refunded)")
    add_row(table, "difficulty streak", str(v["difficulty_streak"]))
    strikes = ", ".join(f"{s['kind']} @ turn {s['turn']}"
                        + (f" ({s['what']})" if s.get("what") else "")
                        for s in v["strikes"]) or "none"
    add_row(table, "strikes", strikes)
    add_row(table, "clean turns", str(v["clean_turns"]))
    add_row(table, "pending ask", _pending(v.get("pending")))
    for tier in ("base", "strong"):
        add_row(table, f"{tier} model pin", _pin(v["pins"][tier]))
        add_row(table, f"{tier} channel pin", _chan(v["channel_pins"][tier]))
    add_row(table, "tier state ttl", fmt_ttl(v.get("ttl_s")))
    f = v.get("figures")
    if isinstance(f, Mapping):
        add_row(table, "requests", f"{f['requests']} (+ {f['side_requests']} side requests)")
        share = f.get("cached_share")
        add_row(table, "tokens", f"prompt {f['prompt_tokens']:,} (cached "
                                 f"{f['cached_tokens']:,}, {_pct(share)}) · output "
                                 f"{f['output_tokens']:,}")
        add_row(table, "cost so far", f"${f['cost_usd']:.6f}")
    clock = v.get("cache_clock_s")
    add_row(table, "cache clock", "cold (no pinned cache)" if clock is None
            else f"{clock:.0f} s until the pinned cache goes cold")
    if v.get("shadow"):
        sh = v["shadow"]
        add_row(table, "shadow", f"{sh['tier']} (streak {sh['difficulty_streak']}, strikes "
                                f"{sh['strikes']})")
    return table
