"""`orca budget [--json]` and `orca budget raise NAME USD [--key K]` (SPEC §17).

`orca budget` lists every `[budgets]` budget with its current window's spend: `day_usd` and
`month_usd` per inbound key (`-`: requests without a key, or every request when no keys are
configured) and `session_usd` per session that spent anything. `raise` stores a new limit in
the shared store; sidecars apply it on their next budget read.
"""

from __future__ import annotations

import time
from typing import Any

import typer

from orca_cli.cli.output import fail, print_json
from orca_cli.cli.routes_versions import with_redis

budget_app = typer.Typer(help="Dollar budgets: spend per window, raise a limit.",
                         invoke_without_command=True)
NAMES = ("session_usd", "day_usd", "month_usd")
_CONFIG = typer.Option(None, "--config", help="Config file.")
_REDIS = typer.Option(None, "--redis-url", metavar="URL", help="Redis URL (default "
                      "\\[state].redis_url when \\[state].backend is redis).")


def budget_rows(cfg: Any, counters: dict[str, Any], raised: dict[str, float],
                now: float) -> list[dict[str, Any]]:
    """One row per budget and holder: name, holder, window, spent, limit, share."""
    from orca_cli.routing.routes.budget import counter_key
    from orca_cli.state.budgets import effective_limits

    configured = {n: float(getattr(cfg.budgets, n)) for n in NAMES}
    holders = [k.name for k in cfg.inbound_keys] + ["-"]
    rows: list[dict[str, Any]] = []
    for key in holders:
        limits = effective_limits(configured, raised, key)
        for name, window in (("day_usd", "day"), ("month_usd", "month")):
            c = counter_key("key", key, window, now)  # type: ignore[arg-type]
            rows.append(_row(name, f"key {key}", c.rsplit(":", 1)[1], counters.get(c),
                             limits[name]))
    session_limit = configured["session_usd"]
    for c, spend in sorted(counters.items()):
        if c.startswith("session:") and c.endswith(":all:-"):
            rows.append(_row("session_usd", "session " + c[8:-6], "session", spend,
                             session_limit))
    return rows


def _row(name: str, holder: str, window: str, spend: Any, limit: float) -> dict[str, Any]:
    usd = spend.usd if spend is not None else 0.0
    requests = spend.requests if spend is not None else 0
    return {"budget": name, "holder": holder, "window": window, "spent_usd": round(usd, 6),
            "requests": requests, "limit_usd": limit or None,
            "share": round(usd / limit, 4) if limit else None}


@budget_app.callback()
def budget_cmd(ctx: typer.Context, config: str | None = _CONFIG, redis_url: str | None = _REDIS,
               as_json: bool = typer.Option(False, "--json", help="One JSON document.")) -> None:
    """Every budget's spend in its current window.

    \b
    Example:
        orca budget
        orca budget raise day_usd 100 --key ci
    """
    if ctx.invoked_subcommand is not None:
        return
    from orca_cli.state.budgets import RedisBudgets

    async def read(client: Any, prefix: str, cfg: Any) -> list[dict[str, Any]]:
        store = RedisBudgets(client, prefix)
        return budget_rows(cfg, await store.all_counters(), await store.limits(), time.time())

    rows = with_redis(config, redis_url, "budget counters", read)
    if as_json:
        print_json({"budgets": rows})
        return
    for r in rows:
        limit = f"${r['limit_usd']:.2f}" if r["limit_usd"] else "no limit"
        share = f" ({r['share']:.0%})" if r["share"] is not None else ""
        typer.echo(f"{r['budget']:12s} {r['holder']:24s} {r['window']:10s} "
                   f"${r['spent_usd']:.2f} of {limit}{share}, {r['requests']} requests")


@budget_app.command("raise")
def raise_cmd(
    name: str = typer.Argument(..., metavar="NAME", help="session_usd, day_usd or month_usd."),
    usd: float = typer.Argument(..., metavar="USD", help="The new limit in $."),
    key: str | None = typer.Option(None, "--key", help="The inbound key whose limit to raise "
                                   "(default: requests without a key)."),
    config: str | None = _CONFIG, redis_url: str | None = _REDIS,
) -> None:
    """Set a new limit for one budget on every sidecar sharing the store."""
    from orca_cli.state.budgets import RedisBudgets

    if name not in NAMES:
        fail(f"NAME must be one of {', '.join(NAMES)}, got {name!r}", 2)
    if usd <= 0:
        fail(f"USD must be > 0, got {usd}", 2)

    async def put(client: Any, prefix: str, cfg: Any) -> None:
        if key is not None and key not in {k.name for k in cfg.inbound_keys}:
            raise LookupError(f"--key {key} names no [[inbound_keys]] entry")
        await RedisBudgets(client, prefix).raise_limit(name, key or "-", usd)

    with_redis(config, redis_url, "budget limits", put)
    typer.echo(f"{name} for {'key ' + key if key else 'requests without a key'} is now "
               f"${usd:.2f}")


def register(app: typer.Typer) -> None:
    app.add_typer(budget_app, name="budget")
