"""A routes file (SPEC §17): `[[routes]]` tables alone, checked against a loaded config.

    orca routes check routes.toml     # the file's routes replace orca.toml's [[routes]]

The file may hold only `[[routes]]`; its routes are validated exactly as if written in the
config (node paths in every error), with the config's channels, models, routers and
`[[inbound_keys]]` as the names they may use. Errors name the routes file. A deployed version
(`orca routes deploy`) is this text; a sidecar applies it with `with_routes_text`.
"""

from __future__ import annotations

import dataclasses
import tomllib
from typing import TYPE_CHECKING

from orca_cli.errors import ConfigError

if TYPE_CHECKING:
    from orca_cli.config.schema import Config

__all__ = ["load_routes_file", "with_routes_text"]


def with_routes_text(
    cfg: Config, text: str, source: str
) -> tuple[Config | None, list[ConfigError]]:
    """`cfg` with its `[[routes]]` replaced by those of `text`, or every problem of `text`.
    `${VAR}` is not expanded in a routes file (it is shared through the store)."""
    from orca_cli.config.build import convert
    from orca_cli.config.routes import RouteConfig
    from orca_cli.config.walk import BAD, Ctx
    from orca_cli.config.xref import cross_check

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return None, [ConfigError(source, "", f"is not valid TOML: {exc}")]
    errors = [ConfigError(source, k, "a routes file holds only [[routes]] tables")
              for k in doc if k != "routes"]
    ctx = Ctx(source, {}, errors)
    routes = convert(tuple[RouteConfig, ...], doc.get("routes", []), "routes", ctx)
    if routes is BAD:
        return None, ctx.errors
    new = dataclasses.replace(cfg, routes=routes)
    cross_check(new, ctx)
    if ctx.errors:
        return None, ctx.errors
    return new, []


def load_routes_file(path: str, config_path: str | None) -> tuple[Config | None, list[ConfigError]]:
    """The effective config (from `config_path` or the usual search) with the routes of the
    file at `path`."""
    from orca_cli.config.load import load

    try:
        cfg = load(config_path)
    except ConfigError as exc:
        return None, [exc]
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        return None, [ConfigError(path, "", f"cannot be read: {exc.strerror or exc}")]
    return with_routes_text(cfg, text, path)
