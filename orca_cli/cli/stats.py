"""`orca stats [--json] [--watch]` (SPEC §1.1, §1.1a): per router, over its share window, the
requests, the share served strong against its cap, escalations by trigger, cap denials, the
cache-hit token ratio and the cost; and the workspace's strong share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer

from orca_cli.cli.operator import (
    Operator,
    config_option,
    json_option,
    token_option,
    url_option,
)
from orca_cli.cli.output import out_console, print_json
from orca_cli.cli.render import add_row

__all__ = ["register", "render_stats"]


def register(app: typer.Typer) -> None:
    @app.command("stats")
    def stats_cmd(
        as_json: bool = json_option(),
        watch: bool = typer.Option(False, "--watch", help="Refresh until Ctrl-C."),
        interval: float = typer.Option(2.0, "--interval", min=0.2,
                                       help="Seconds between refreshes with --watch."),
        url: str | None = url_option(),
        token: str | None = token_option(),
        config: str | None = config_option(),
    ) -> None:
        """Show strong share, escalations, denials, cache hits and cost.

        \b
        Example:
            orca stats
            orca stats --watch
        """
        op = Operator(url, config, token=token)
        if not watch:
            doc = op.stats()
            if as_json:
                print_json(doc)
            else:
                out_console().print(render_stats(doc))
            return
        _watch(op, as_json, interval)


def _watch(op: Operator, as_json: bool, interval: float) -> None:
    import time

    try:
        if as_json:  # one JSON document per line per refresh
            import json
            import sys

            while True:
                sys.stdout.write(json.dumps(op.stats(), default=str) + "\n")
                sys.stdout.flush()
                time.sleep(interval)
        from rich.live import Live

        with Live(render_stats(op.stats()), console=out_console(), auto_refresh=False) as live:
            while True:
                time.sleep(interval)
                live.update(render_stats(op.stats()), refresh=True)
    except KeyboardInterrupt:
        return


def _pct(x: Any) -> str:
    return f"{float(x) * 100:.1f} %" if isinstance(x, (int, float)) else "-"


def _by(d: Mapping[str, Any] | None) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted((d or {}).items())) or "-"


def _cap(share: Mapping[str, Any]) -> str:
    """The cap, and whether it is enforced yet: below `warmup_requests` requests in the window
    the share cap does not apply, so a strong share above it is allowed then — except after a
    state loss, when that warm-up is inverted and strong is denied until it ends."""
    text = _pct(share.get("cap"))
    total, warmup = share.get("total"), share.get("warmup_requests")
    if isinstance(total, (int, float)) and isinstance(warmup, int) and total < warmup:
        if share.get("warmup_inverted"):
            return f"{text}, inverted warm-up {int(total)}/{warmup}: strong denied"
        return f"{text}, warm-up {int(total)}/{warmup}"
    return text


def render_stats(doc: Mapping[str, Any]) -> Any:
    from rich.table import Table

    table = Table(title="served by orca (per router, over its share window)",
                  title_justify="left")
    for col in ("router", "requests", "strong share", "cap", "escalations", "denials",
                "cache hits", "cost", "shadow would"):
        table.add_column(col, justify="left" if col == "router" else "right")
    for name, r in doc.get("routers", {}).items():
        share = r.get("share") or {}
        cap = "off" if r.get("mode") == "off" else _cap(share)
        side = r.get("side_requests") or 0
        requests = f"{r['requests']} ({side} side)" if side else r["requests"]
        add_row(table, name, requests, _pct(r["strong_share"]), cap,
                f"{r['escalations']} ({_by(r.get('escalations_by_trigger'))})",
                f"{r['denials']} ({_by(r.get('denials_by_cap'))})",
                _pct(r["cache_hit_ratio"]), f"${r['cost_usd']:.4f}",
                r["shadow_would_escalate"])
    ws = doc.get("workspace", {})
    table.caption = (f"workspace: {ws.get('requests', 0)} requests, "
                     f"{_pct(ws.get('strong_share'))} served strong (cap {_pct(ws.get('cap'))})")
    caps = [_cap(r.get("share") or {}) for r in doc.get("routers", {}).values()
            if r.get("mode") != "off"]
    if any(", warm-up" in c for c in caps):
        table.caption += ("\nwarm-up: a router's share cap applies once its window holds "
                          "warmup_requests requests; until then the strong share may exceed it")
    if any("inverted warm-up" in c for c in caps):
        table.caption += ("\ninverted warm-up: the state store lost its state; strong is denied "
                          "until the router has counted warmup_requests requests since the loss")
    return table
