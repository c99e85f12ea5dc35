"""`orca budget [--json]` and `orca budget raise NAME USD [--key K] [--json]` (SPEC §17).

`orca budget` lists every `[budgets]` budget with its current window's spend against the
limit in force (raised or configured): `day_usd` and `month_usd` per inbound key (`-`:
requests without a key, or every request when no keys are configured) and `session_usd` per
session that spent anything, against the limit of the inbound key its requests carried
(named in the row). `raise` stores a new limit; sidecars apply it on their next request.

Both reach the budgets as the other inspect/steer commands do (`cli/operator.py`, SPEC §1.1):
the running sidecar's admin API on any backend (`--url`, `--token`, its record, the config's
`[server]`), else — with `[state] backend = "redis"` — the store directly. `--redis-url`
names a Redis store to use directly, without asking a sidecar.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import typer

from orca_cli.cli.operator import (
    CLI_ACTOR,
    Operator,
    config_option,
    json_option,
    redis_url_option,
    token_option,
    url_option,
)
from orca_cli.cli.output import EXIT_USAGE, fail, print_json

__all__ = ["budget_app", "register", "render_budget_row"]

budget_app = typer.Typer(help="Dollar budgets: spend per window, raise a limit.",
                         invoke_without_command=True)
NAMES = ("session_usd", "day_usd", "month_usd")  # `turn.routes.BUDGET_NAMES`, kept import-free


class BudgetOperator(Operator):
    """`Operator` with the budget calls (`redis_url`: `Operator`'s direct store)."""

    def budgets(self) -> Any:
        from orca_cli.admin import budgets as B

        return self._call("GET", "/orca/v1/budgets", None, None, B.budget_report)

    def raise_limit(self, name: str, usd: float, key: str | None) -> Any:
        from orca_cli.admin import budgets as B

        return self._call(
            "POST", f"/orca/v1/budgets/{quote(name, safe='')}/raise", None,
            {"usd": usd, "key": key, "actor": CLI_ACTOR},
            lambda st, cfg, now: B.raise_budget(st, cfg, name, usd, key, actor=CLI_ACTOR,
                                                now=now))


@budget_app.callback()
def budget_cmd(ctx: typer.Context, as_json: bool = json_option(),
               url: str | None = url_option(), token: str | None = token_option(),
               config: str | None = config_option(), redis_url: str | None = redis_url_option(),
               ) -> None:
    """Every budget's spend in its current window, against the limit in force.

    \b
    Example:
        orca budget
        orca budget raise day_usd 100 --key ci
    """
    if ctx.invoked_subcommand is not None:
        return
    doc = BudgetOperator(url, config, token=token, redis_url=redis_url).budgets()
    if as_json:
        print_json(doc)
        return
    for row in doc.get("budgets", []):
        typer.echo(render_budget_row(row))


def render_budget_row(r: Mapping[str, Any]) -> str:
    """One budget row as a line, amounts by `format_usd`: `$spent of $limit (share)`, or
    `$spent, no limit`, then the requests counted. A session row names the inbound key
    whose limit it is (`key ci`; `no key`), and each key's limit when several spent."""
    from orca_cli.routing.routes.budget import format_usd

    spent = format_usd(float(r["spent_usd"]))
    keys = [str(k) for k in r.get("keys") or ()]
    if r.get("limit_usd"):
        notes = [f"{r['share']:.0%}"] if r.get("share") is not None else []
        others = r.get("key_limits_usd") or {}
        if len(keys) == 1 and (others or keys != ["-"]):
            notes.append("no key" if keys == ["-"] else f"key {keys[0]}")
        elif len(keys) > 1:
            notes.append("keys " + ", ".join(
                f"{'no key' if k == '-' else k} {format_usd(float(others.get(k, r['limit_usd'])))}"
                for k in keys))
        if r.get("raised") and r.get("configured_usd"):
            notes.append(f"raised from {format_usd(float(r['configured_usd']))}")
        amount = f"{spent} of {format_usd(float(r['limit_usd']))} ({'; '.join(notes)})"
    else:
        amount = f"{spent}, no limit"
    return (f"{r['budget']:12s} {r['holder']:24s} {r['window']:10s} {amount}, "
            f"{r['requests']} requests")


@budget_app.command("raise")
def raise_cmd(
    name: str = typer.Argument(..., metavar="NAME", help="session_usd, day_usd or month_usd."),
    usd: float = typer.Argument(..., metavar="USD", help="The new limit in $."),
    key: str | None = typer.Option(None, "--key", help="The inbound key whose limit to raise "
                                   "(default: requests without a key)."),
    as_json: bool = json_option(),
    url: str | None = url_option(), token: str | None = token_option(),
    config: str | None = config_option(), redis_url: str | None = redis_url_option(),
) -> None:
    """Set a new limit for one budget on every sidecar sharing the store.

    \b
    Example:
        orca budget raise session_usd 5
        orca budget raise day_usd 100 --key ci --json
    """
    import math

    if name not in NAMES:
        fail(f"NAME must be one of {', '.join(NAMES)}, got {name!r}", EXIT_USAGE)
    if not (math.isfinite(usd) and usd > 0):
        fail(f"USD must be a number > 0, got {usd}", EXIT_USAGE)
    doc = BudgetOperator(url, config, token=token, redis_url=redis_url).raise_limit(
        name, usd, key)
    if as_json:
        print_json(doc)
        return
    sys.stdout.write(str(doc.get("message", "")) + "\n")


def register(app: typer.Typer) -> None:
    app.add_typer(budget_app, name="budget")
