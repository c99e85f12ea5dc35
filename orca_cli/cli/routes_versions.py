"""`orca routes deploy|list|diff|rollback` (SPEC §17): route versions in the shared store.

Versions live in the configured store. With `[state] backend = "redis"` (or `--redis-url`)
every sidecar on that store applies the active version within about a second. The memory
store keeps versions inside one sidecar process, which this command cannot reach: it says so.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import typer

from orca_cli.cli.output import fail, print_json

T = TypeVar("T")

_CONFIG = typer.Option(None, "--config", help="Config file.")
_REDIS = typer.Option(None, "--redis-url", metavar="URL", help="Redis URL (default "
                      "\\[state].redis_url when \\[state].backend is redis).")
_JSON = typer.Option(False, "--json", help="One JSON document on stdout.")


def _with_versions(config: str | None, redis_url: str | None,
                   fn: Callable[[Any, Any], Awaitable[T]]) -> T:
    """Run `fn(versions, cfg)` against the configured shared store."""
    from orca_cli.state.route_versions import RedisRouteVersions

    return with_redis(config, redis_url, "route versions",
                      lambda client, prefix, cfg: fn(RedisRouteVersions(client, prefix), cfg))


def with_redis(config: str | None, redis_url: str | None, what: str,
               fn: Callable[[Any, str, Any], Awaitable[T]]) -> T:
    """Run `fn(redis client, key prefix, cfg)` against the configured shared Redis store."""
    import dataclasses

    from orca_cli.config.load import load
    from orca_cli.config.redact import redact_url
    from orca_cli.errors import ConfigError
    from orca_cli.state.factory import redis_client_factory

    try:
        cfg = load(config)
    except ConfigError as exc:
        fail(str(exc))
    state = cfg.state
    if redis_url:
        state = dataclasses.replace(state, backend="redis", redis_url=redis_url)
    if state.backend != "redis":
        fail(f"{what} are shared through Redis; with the memory store they live inside "
             "one sidecar. Set [state] backend = \"redis\" or pass --redis-url")
    connect, on_close = redis_client_factory(state, max_connections=4)

    async def go() -> T:
        client = connect()
        try:
            return await fn(client, state.key_prefix, cfg)
        finally:
            await client.aclose()
            await on_close()

    from redis.exceptions import RedisError

    try:
        return asyncio.run(go())
    except LookupError as exc:
        fail(str(exc).strip("'\""))
    except (RedisError, OSError) as exc:
        fail(f"the store at {redact_url(state.redis_url)} did not answer "
             f"({type(exc).__name__})")


def register(routes_app: typer.Typer) -> None:
    @routes_app.command("deploy")
    def deploy_cmd(
        file: str = typer.Argument(..., help="A TOML file of \\[\\[routes]] tables."),
        note: str = typer.Option("", "--note", help="A line kept with the version."),
        config: str | None = _CONFIG, redis_url: str | None = _REDIS, as_json: bool = _JSON,
    ) -> None:
        """Check FILE, store it as a new immutable version and make it active on every
        sidecar sharing the store (within about a second, no restart)."""
        import time

        from orca_cli.config.routes_file import load_routes_file

        _cfg, errors = load_routes_file(file, config)
        if errors:
            for e in errors:
                typer.echo(f"error: {e}", err=True)
            fail(f"{len(errors)} problem(s) in {file}; nothing deployed")
        with open(file, encoding="utf-8") as fh:
            text = fh.read()
        v = _with_versions(config, redis_url,
                           lambda vs, _cfg: vs.deploy(text, now=time.time(), note=note))
        if as_json:
            print_json(v.doc())
            return
        typer.echo(f"active: version {v.version} (sha256 {v.sha256[:12]})")

    @routes_app.command("list")
    def list_cmd(config: str | None = _CONFIG, redis_url: str | None = _REDIS,
                 as_json: bool = _JSON) -> None:
        """Every deployed version, the active one marked."""
        async def both(vs: Any, _cfg: Any) -> tuple[Any, Any]:
            return await vs.versions(), await vs.active_version()

        versions, active = _with_versions(config, redis_url, both)
        if as_json:
            print_json({"active": active, "versions": [v.doc() for v in versions]})
            return
        if not versions:
            typer.echo("no route versions deployed")
        for v in versions:
            mark = "*" if v.version == active else " "
            typer.echo(f"{mark} {v.version:4d}  {v.sha256[:12]}  {v.note}")

    @routes_app.command("diff")
    def diff_cmd(a: int = typer.Argument(...), b: int = typer.Argument(...),
                 config: str | None = _CONFIG, redis_url: str | None = _REDIS) -> None:
        """A unified diff between versions A and B."""
        async def pair(vs: Any, _cfg: Any) -> tuple[Any, Any]:
            return await vs.get(a), await vs.get(b)

        va, vb = _with_versions(config, redis_url, pair)
        for n, v in ((a, va), (b, vb)):
            if v is None:
                fail(f"no route version {n}; see `orca routes list`")
        lines = difflib.unified_diff(va.text.splitlines(keepends=True),
                                     vb.text.splitlines(keepends=True),
                                     fromfile=f"version {a}", tofile=f"version {b}")
        typer.echo("".join(lines), nl=False)

    @routes_app.command("rollback")
    def rollback_cmd(version: int | None = typer.Argument(None, help="Default: the highest "
                                                          "version below the active one."),
                     config: str | None = _CONFIG, redis_url: str | None = _REDIS,
                     as_json: bool = _JSON) -> None:
        """Make an earlier version active again on every sidecar sharing the store."""
        from orca_cli.config.routes_file import with_routes_text
        from orca_cli.state.route_versions import rollback

        async def back(vs: Any, cfg: Any) -> Any:
            if version is not None:
                target = await vs.get(version)
                if target is None:
                    raise LookupError(f"no route version {version}; see `orca routes list`")
                _new, errors = with_routes_text(cfg, target.text, f"version {version}")
                if errors:
                    raise LookupError(f"version {version} does not fit this config: {errors[0]}")
            return await rollback(vs, version)

        v = _with_versions(config, redis_url, back)
        if as_json:
            print_json(v.doc())
            return
        typer.echo(f"active: version {v.version} (sha256 {v.sha256[:12]})")
