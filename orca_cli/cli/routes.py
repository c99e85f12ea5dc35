"""`orca routes check FILE` and `orca routes test --body FILE` (SPEC §17).

`check` validates a routes file against the effective config (every error, with node paths).
`test` is a dry run: which route, node path and split bucket a request would take, with the
budget counters at zero unless `--spent COUNTER=USD` says otherwise; nothing is sent. Both
stay local: they read the config and the file, never a store. `deploy|list|diff|rollback`
(`routes_versions.py`) go through the running sidecar, or a Redis store.
"""

from __future__ import annotations

import json
from typing import Any

import typer

from orca_cli.cli.output import fail, print_json

routes_app = typer.Typer(help="Dynamic routes: check a routes file, dry-run a request, deploy "
                         "and roll back versions.",
                         no_args_is_help=True)


@routes_app.command("check")
def check_cmd(
    file: str = typer.Argument(..., help="A TOML file of \\[\\[routes]] tables."),
    config: str | None = typer.Option(None, "--config", help="Config file."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document on stdout."),
) -> None:
    """Validate a routes file against the config: cycles, unreachable nodes, unknown
    targets and exits left open are reported with their node paths.

    \b
    Example:
        orca routes check routes.toml
    """
    from orca_cli.config.routes import unserved_targets
    from orca_cli.config.routes_file import load_routes_file

    cfg, errors = load_routes_file(file, config)
    warnings = unserved_targets(cfg) if cfg is not None and not errors else []
    if as_json:
        print_json({"ok": not errors, "file": file,
                    "routes": [r.name for r in cfg.routes] if cfg else [],
                    "errors": [{"key": e.key, "why": e.why, "path": e.path} for e in errors],
                    "warnings": [{"key": k, "why": why} for k, why in warnings]})
        raise typer.Exit(1 if errors else 0)
    if errors:
        for e in errors:
            typer.echo(f"error: {e}", err=True)
        fail(f"{len(errors)} problem(s) in {file}")
    assert cfg is not None
    for key, why in warnings:
        typer.echo(f"warning: {key}: {why}", err=True)
    typer.echo(f"ok: {file} ({len(cfg.routes)} route(s): "
               f"{', '.join(r.name for r in cfg.routes) or 'none'})")


def _headers(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition(":")
        if not sep or not name.strip():
            fail(f"--header must be NAME:VALUE, got {pair!r}", 2)
        out[name.strip().lower()] = value.strip()
    return out


def _spent(pairs: list[str], facts: Any, cfg: Any) -> dict[str, Any]:
    """`--spent COUNTER=USD` pairs as the counters a budget node or `[budgets]` reads. A
    counter is named in full (`key:ci:day:2026-12-04`) or without its period
    (`key:ci:day`, `session:s1:all`: the current one); one this request would not read is a
    usage error listing those it reads, rather than a spend silently ignored."""
    from orca_cli.routing.routes import Spend
    from orca_cli.routing.routes.budget import (
        BUDGET_WINDOWS,
        config_budget_counters,
        counter_key,
        spend_keys,
    )

    readable = set(config_budget_counters(facts).values())
    for route in cfg.routes:
        readable.update(spend_keys(facts, route.name))
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, usd = pair.rpartition("=")
        try:
            amount = float(usd)
        except ValueError:
            sep = ""
        if not sep:
            fail(f"--spent must be COUNTER=USD (e.g. key:ci:day=12.5), got {pair!r}", 2)
        head, _, window = key.rpartition(":")
        scope, _, ident = head.partition(":")
        if ident and window in (*BUDGET_WINDOWS, "all"):
            key = counter_key(scope, ident, window, facts.now)
        if key not in readable:
            fail(f"--spent {key!r} is no counter this request reads; it reads "
                 f"{', '.join(sorted(readable))}", 2)
        out[key] = Spend(0, amount)
    return out


@routes_app.command("test")
def test_cmd(
    body: str = typer.Option(..., "--body", help="A JSON request body file."),
    header: list[str] = typer.Option([], "--header", "-H", help="NAME:VALUE (repeatable)."),
    endpoint: str = typer.Option("openai", "--endpoint", metavar="openai|anthropic|responses"),
    session: str = typer.Option("", "--session", help="The session id the request resolves to."),
    key: str | None = typer.Option(None, "--key", help="The inbound key name (default: the "
                                   "key whose token --header authorization/x-api-key carries)."),
    routes: str | None = typer.Option(None, "--routes", help="A routes file (default: the "
                                      "config's \\[\\[routes]])."),
    spent: list[str] = typer.Option([], "--spent", help="COUNTER=USD budget spend "
                                    "(repeatable): SCOPE:<id>:WINDOW, e.g. key:ci:day, "
                                    "route:r1:month, session:s1:all (the current period)."),
    config: str | None = typer.Option(None, "--config", help="Config file."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document on stdout."),
) -> None:
    """Dry run: the route, node path and split bucket a request would take.

    \b
    Example:
        orca routes test --body req.json --header x-team:infra --key ci
    """
    from orca_cli.routing.routes import RequestFacts, compile_routes, inbound_key_name

    if endpoint not in ("openai", "anthropic", "responses"):
        fail(f"--endpoint must be openai, anthropic or responses, got {endpoint!r}", 2)
    cfg = _config(config, routes)
    try:
        with open(body, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as exc:
        fail(f"--body {body}: {exc}")
    if not isinstance(doc, dict):
        fail(f"--body {body} must hold a JSON object")
    hdrs = _headers(header)
    if key is None:
        bearer = hdrs.get("authorization", "").removeprefix("Bearer ").strip()
        key = inbound_key_name(cfg, [bearer, hdrs.get("x-api-key", "")])
    model = doc.get("model") if isinstance(doc.get("model"), str) else ""
    facts = RequestFacts(endpoint, model or "", hdrs, doc, session, key,  # type: ignore[arg-type]
                         "dry-run", _now())
    d = compile_routes(cfg.routes).evaluate(facts, _spent(spent, facts, cfg))
    out = {"decision": d.kind, "route": d.route or None, "path": list(d.path),
           "bucket": d.bucket or None, "key": key,
           "target": None if d.target is None else {
               "target": d.target.target, "mode": d.target.mode or None,
               "only": list(d.target.only), "prefer": list(d.target.prefer),
               "fallbacks": list(d.target.fallbacks), "affinity": d.target.affinity},
           "deny": None if d.deny is None else {"status": d.deny.status,
                                                 "message": d.deny.message}}
    if as_json:
        print_json(out)
        return
    if d.kind == "none":
        typer.echo("no route matches: the request routes as configured without routes")
        return
    typer.echo(f"route {d.route}: {' -> '.join(d.path)}"
               + (f"  (split {d.bucket})" if d.bucket else ""))
    if d.target is not None:
        extra = f", fallbacks {', '.join(d.target.fallbacks)}" if d.target.fallbacks else ""
        typer.echo(f"target {d.target.target}{extra}")
    elif d.deny is not None:
        typer.echo(f"deny {d.deny.status}: {d.deny.message}")


def _now() -> float:
    import time

    return time.time()


def _config(config: str | None, routes: str | None) -> Any:
    from orca_cli.config.load import load
    from orca_cli.config.routes_file import load_routes_file
    from orca_cli.errors import ConfigError

    if routes is None:
        try:
            return load(config)
        except ConfigError as exc:
            fail(str(exc))
    cfg, errors = load_routes_file(routes, config)
    if errors or cfg is None:
        fail(str(errors[0]) + (f" (and {len(errors) - 1} more; run `orca routes check "
                               f"{routes}`)" if len(errors) > 1 else ""))
    return cfg


def register(app: typer.Typer) -> None:
    from orca_cli.cli import routes_versions

    routes_versions.register(routes_app)
    app.add_typer(routes_app, name="routes")
