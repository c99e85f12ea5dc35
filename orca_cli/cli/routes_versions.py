"""`orca routes deploy|list|diff|rollback` (SPEC §17): route versions, on either store.

They reach the versions as the other inspect/steer commands reach the state (SPEC §1.1,
`cli/operator.py`): the running sidecar's admin API on any backend (`--url`, `--token`, its
record, the config's `[server]`), which on the memory store is the only place the versions
live and which applies a deploy or rollback before it answers, so its next request walks it;
with `[state] backend = "redis"` and no sidecar answering, the store directly (every sidecar
on it follows within about a second). `--redis-url` names a Redis store to use directly,
without asking a sidecar. The documents and errors are the same either way
(`admin/routes.py`).

`deploy` checks the file first and prints every problem with its node path, as `orca routes
check` does, against the config of whoever stores it (the sidecar's, else `--config`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import typer

from orca_cli.cli.operator import (
    Operator,
    config_option,
    json_option,
    redis_url_option,
    token_option,
    url_option,
)
from orca_cli.cli.output import fail, print_json

if TYPE_CHECKING:
    from orca_cli.config.schema import Config
    from orca_cli.state.base import Store
    from orca_cli.state.route_versions import RouteVersions

__all__ = ["RoutesOperator", "register"]

OnVersions = Callable[["RouteVersions", "Config", float], Awaitable[Any]]


class RoutesOperator(Operator):
    """`Operator` with the route-version calls (`redis_url`: `Operator`'s direct store)."""

    def _versions_call(self, method: str, path: str, params: Mapping[str, Any] | None,
                       body: Mapping[str, Any] | None, direct: OnVersions) -> Any:
        from orca_cli.admin.routes import versions_in

        def on_store(store: Store, cfg: Config, now: float) -> Awaitable[Any]:
            return direct(versions_in(store), cfg, now)

        return self._call(method, path, params, body, on_store)

    def check(self, text: str, source: str) -> Any:
        from orca_cli.admin import routes as R

        async def local(_vs: RouteVersions, cfg: Config, _now: float) -> Any:
            return R.check_routes(cfg, text, source)

        return self._versions_call("POST", "/orca/v1/routes/check", None,
                                   {"text": text, "source": source}, local)

    def deploy(self, text: str, source: str, note: str) -> Any:
        from orca_cli.admin import routes as R

        return self._versions_call(
            "POST", "/orca/v1/routes/deploy", None,
            {"text": text, "source": source, "note": note},
            lambda vs, cfg, now: R.deploy_routes(vs, cfg, text, source=source, note=note,
                                                 now=now))

    def versions(self) -> Any:
        from orca_cli.admin import routes as R

        return self._versions_call("GET", "/orca/v1/routes", None, None,
                                   lambda vs, cfg, now: R.list_routes(vs))

    def diff(self, a: int, b: int) -> Any:
        from orca_cli.admin import routes as R

        return self._versions_call("GET", "/orca/v1/routes/diff", {"a": a, "b": b}, None,
                                   lambda vs, cfg, now: R.diff_routes(vs, a, b))

    def rollback(self, version: int | None) -> Any:
        from orca_cli.admin import routes as R

        return self._versions_call("POST", "/orca/v1/routes/rollback", None,
                                   {"version": version},
                                   lambda vs, cfg, now: R.rollback_routes(vs, cfg, version))


def _read(file: str) -> str:
    """The routes file's text; unreadable -> the line `orca routes check` prints, exit 1."""
    from orca_cli.errors import ConfigError

    try:
        with open(file, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        typer.echo(f"error: {ConfigError(file, '', f'cannot be read: {why}')}", err=True)
        fail(f"1 problem(s) in {file}; nothing deployed")


def _active_line(doc: Mapping[str, Any]) -> str:
    return f"active: version {doc['version']} (sha256 {str(doc['sha256'])[:12]})"


def register(routes_app: typer.Typer) -> None:
    @routes_app.command("deploy")
    def deploy_cmd(
        file: str = typer.Argument(..., help="A TOML file of \\[\\[routes]] tables."),
        note: str = typer.Option("", "--note", help="A line kept with the version."),
        config: str | None = config_option(), redis_url: str | None = redis_url_option(),
        url: str | None = url_option(), token: str | None = token_option(),
        as_json: bool = json_option(),
    ) -> None:
        """Check FILE, store it as a new immutable version and make it active: at once on
        the sidecar that stores it, within about a second on every sidecar sharing a Redis
        store; no restart.

        \b
        Example:
            orca routes deploy routes.toml --note "10% to gpt-4.1"
        """
        text = _read(file)
        op = RoutesOperator(url, config, token=token, redis_url=redis_url)
        checked = op.check(text, file)
        if not checked["ok"]:
            for e in checked["errors"]:
                typer.echo(f"error: {e['message']}", err=True)
            fail(f"{len(checked['errors'])} problem(s) in {file}; nothing deployed")
        doc = op.deploy(text, file, note)
        if as_json:
            print_json(doc)
            return
        typer.echo(_active_line(doc))

    @routes_app.command("list")
    def list_cmd(config: str | None = config_option(),
                 redis_url: str | None = redis_url_option(),
                 url: str | None = url_option(), token: str | None = token_option(),
                 as_json: bool = json_option()) -> None:
        """Every deployed version, the active one marked with `*`.

        \b
        Example:
            orca routes list --json
        """
        doc = RoutesOperator(url, config, token=token, redis_url=redis_url).versions()
        if as_json:
            print_json(doc)
            return
        if not doc["versions"]:
            typer.echo("no route versions deployed")
        for v in doc["versions"]:
            mark = "*" if v["version"] == doc["active"] else " "
            typer.echo(f"{mark} {v['version']:4d}  {str(v['sha256'])[:12]}  {v['note']}")

    @routes_app.command("diff")
    def diff_cmd(a: int = typer.Argument(..., min=1), b: int = typer.Argument(..., min=1),
                 config: str | None = config_option(),
                 redis_url: str | None = redis_url_option(),
                 url: str | None = url_option(), token: str | None = token_option(),
                 as_json: bool = json_option()) -> None:
        """A unified diff between versions A and B.

        \b
        Example:
            orca routes diff 1 2
        """
        doc = RoutesOperator(url, config, token=token, redis_url=redis_url).diff(a, b)
        if as_json:
            print_json(doc)
            return
        typer.echo(doc["diff"], nl=False)

    @routes_app.command("rollback")
    def rollback_cmd(version: int | None = typer.Argument(None, min=1, help="Default: the "
                                                          "highest version below the active "
                                                          "one."),
                     config: str | None = config_option(),
                     redis_url: str | None = redis_url_option(),
                     url: str | None = url_option(), token: str | None = token_option(),
                     as_json: bool = json_option()) -> None:
        """Make an earlier version active again, as a deploy does.

        \b
        Example:
            orca routes rollback
            orca routes rollback 3
        """
        doc = RoutesOperator(url, config, token=token, redis_url=redis_url).rollback(version)
        if as_json:
            print_json(doc)
            return
        typer.echo(_active_line(doc))
