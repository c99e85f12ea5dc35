"""A routes file (SPEC §17): `[[routes]]` tables alone, checked against the effective config.

    orca routes check routes.toml     # the file's routes replace orca.toml's [[routes]]

The file may hold only `[[routes]]`; its routes are validated exactly as if written in the
config (node paths in every error), with the config's channels, models, routers and
`[[inbound_keys]]` as the names they may use. Errors are reported against the routes file.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from orca_cli.errors import ConfigError

if TYPE_CHECKING:
    from orca_cli.config.schema import Config

__all__ = ["apply_routes_text", "load_routes_file"]


def apply_routes_text(
    text: str, source: str, config_path: str | None, *,
    environ: Mapping[str, str] = os.environ,
) -> tuple[Config | None, list[ConfigError]]:
    """The effective config with its routes replaced by those of `text` (a routes file)."""
    from orca_cli.config.discover import discover
    from orca_cli.config.load import validate_doc

    try:
        routes_doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return None, [ConfigError(source, "", f"is not valid TOML: {exc}")]
    extra = [k for k in routes_doc if k != "routes"]
    if extra:
        return None, [ConfigError(source, k, "a routes file holds only [[routes]] tables")
                      for k in extra]
    base_path = discover(config_path, environ)
    doc: dict[str, Any] = {}
    if base_path is not None:
        try:
            with open(base_path, "rb") as fh:
                doc = tomllib.load(fh)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            return None, [ConfigError(base_path, "", f"cannot be read: {exc}")]
    doc["routes"] = routes_doc.get("routes", [])
    cfg, errors = validate_doc(doc, source=base_path, environ=environ)
    moved = [ConfigError(source if e.key.startswith("routes") else e.path, e.key, e.why)
             for e in errors]
    return cfg, moved


def load_routes_file(
    path: str, config_path: str | None, *, environ: Mapping[str, str] = os.environ,
) -> tuple[Config | None, list[ConfigError]]:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        return None, [ConfigError(path, "", f"cannot be read: {exc.strerror or exc}")]
    return apply_routes_text(text, path, config_path, environ=environ)
