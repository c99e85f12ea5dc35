"""Find, read, interpolate and validate `orca.toml` (SPEC §2, §11).

    discover -> tomllib (binary) -> ${VAR} -> build (walk the schema dataclasses) -> ranges
    -> per-type defaults -> cross-references

The steps live in their own modules: `discover` (where the file is), `interpolate` (`${VAR}`),
`build` (the schema walk), `rules` (ranges, per-type defaults, per-table checks), `xref`
(cross-references), `check` (`orca config check`'s extra findings) and `redact` (the
effective config with no secret). This module is the entry point and re-exports every public
name, so `from orca_cli.config.load import ...` stays the one import callers need.

Every problem is a `ConfigError(path, key, why)`; `validate_all` collects them all, `load`
raises the first. Only the loader and `cli/` read the environment (STYLE §4.2 rule 11), and
only through the `environ` mapping they are given.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from typing import Any

from orca_cli.config.auto import with_auto_router
from orca_cli.config.build import build
from orca_cli.config.check import ConfigIssue, check
from orca_cli.config.discover import discover, search_paths
from orca_cli.config.redact import redacted
from orca_cli.config.schema import Config
from orca_cli.config.walk import Ctx
from orca_cli.config.xref import cross_check
from orca_cli.errors import ConfigError
from orca_cli.hosts import is_loopback_host

__all__ = [
    "ConfigIssue",
    "check",
    "discover",
    "is_loopback_host",
    "load",
    "loads",
    "parse",
    "redacted",
    "search_paths",
    "validate_all",
    "validate_doc",
]



def load(path: str | None = None, *, environ: Mapping[str, str] = os.environ) -> Config:
    """The effective config. No file found -> the built-in defaults `Config()`, whose
    `source` is None (that is how a caller knows). Raises the first `ConfigError`."""
    cfg, errors = validate_all(path, environ=environ)
    if errors:
        raise _first(errors)
    assert cfg is not None
    return cfg


def validate_all(
    path: str | None = None, *, environ: Mapping[str, str] = os.environ
) -> tuple[Config | None, list[ConfigError]]:
    """Like `load`, but returns every problem found instead of raising the first.
    The config is None when there were errors."""
    source = discover(path, environ)
    if source is None:
        return Config(), []
    try:
        with open(source, "rb") as fh:
            doc = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        return None, [ConfigError(source, "", f"is not valid TOML: {exc}")]
    except OSError as exc:
        return None, [ConfigError(source, "", f"cannot be read: {exc.strerror or exc}")]
    return validate_doc(doc, source=source, environ=environ)


def parse(
    doc: Mapping[str, Any], *, source: str | None = None, environ: Mapping[str, str] = os.environ
) -> Config:
    """Validate an already-parsed TOML document (e.g. a built-in reference config)."""
    cfg, errors = validate_doc(doc, source=source, environ=environ)
    if errors:
        raise _first(errors)
    assert cfg is not None
    return cfg


def loads(
    text: str, *, source: str | None = None, environ: Mapping[str, str] = os.environ
) -> Config:
    """Validate TOML text."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(source, "", f"is not valid TOML: {exc}") from None
    return parse(doc, source=source, environ=environ)


def _first(errors: list[ConfigError]) -> ConfigError:
    head = errors[0]
    if len(errors) == 1:
        return head
    more = len(errors) - 1
    return ConfigError(
        head.path, head.key, f"{head.why} (and {more} more; run `orca config check` to list all)"
    )


def validate_doc(
    doc: Mapping[str, Any], *, source: str | None = None, environ: Mapping[str, str] = os.environ
) -> tuple[Config | None, list[ConfigError]]:
    """Every problem of an already-parsed TOML document; the config is None when any."""
    ctx = Ctx(source, environ, [])
    built = build(Config, doc, "", ctx)
    assert isinstance(built, Config)
    cfg = with_auto_router(dataclasses.replace(built, source=source), ctx.error)
    cross_check(cfg, ctx)
    if ctx.errors:
        return None, ctx.errors
    cfg.compiled  # noqa: B018 - build the request path's indices now, once, at load
    return cfg, []

