"""Where the config file is (SPEC §2): `--config`, `$ORCA_CONFIG`, `./orca.toml`,
`$XDG_CONFIG_HOME/orca/orca.toml`. Reads the environment only through the mapping given."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from orca_cli.errors import ConfigError

__all__ = ["discover", "looked_at", "search_paths"]



def search_paths(environ: Mapping[str, str] = os.environ) -> list[tuple[str, str]]:
    """The places `discover` looks after `--config`, as (label, path), in order."""
    out: list[tuple[str, str]] = []
    if environ.get("ORCA_CONFIG"):
        out.append(("$ORCA_CONFIG", environ["ORCA_CONFIG"]))
    out.append(("./orca.toml", "orca.toml"))
    xdg = environ.get("XDG_CONFIG_HOME", "")
    if not xdg or not os.path.isabs(xdg):  # the XDG spec ignores a relative value
        home = environ.get("HOME") or str(Path.home())
        xdg = os.path.join(home, ".config")
    out.append(("$XDG_CONFIG_HOME/orca/orca.toml", os.path.join(xdg, "orca", "orca.toml")))
    return out


def looked_at(environ: Mapping[str, str] = os.environ) -> str:
    """Where a config is looked for, for a "no config file found" message."""
    places = [label for label, _ in search_paths(environ)]
    if "$ORCA_CONFIG" not in places:
        places.insert(0, "$ORCA_CONFIG")
    return ", ".join(["--config", *places])


def discover(path: str | None = None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The config file to read: `--config`, `$ORCA_CONFIG`, `./orca.toml`,
    `$XDG_CONFIG_HOME/orca/orca.toml` (default `~/.config`); None when there is none.

    A file named explicitly (flag or `$ORCA_CONFIG`) must exist: a typo there is an error,
    never a silent fall-back to another file or to the defaults."""
    if path:
        _must_exist(path, "given with --config")
        return path
    named = environ.get("ORCA_CONFIG")
    if named:
        _must_exist(named, "named by $ORCA_CONFIG")
        return named
    for _label, candidate in search_paths(environ):
        if os.path.isfile(candidate):
            return candidate
    return None


def _must_exist(path: str, how: str) -> None:
    if os.path.isdir(path):
        raise ConfigError(path, "", f"is a directory, not a config file ({how})")
    if not os.path.isfile(path):
        raise ConfigError(path, "", f"no such config file ({how}); create one with `orca init`")

