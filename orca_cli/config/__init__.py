"""orca_cli.config: the `orca.toml` contract (schema.py), its loader (load.py) and the text
`orca init` writes (template.py). SPEC §2."""

from __future__ import annotations

from orca_cli.config.load import (
    ConfigIssue,
    check,
    discover,
    is_loopback_host,
    load,
    loads,
    parse,
    redacted,
    search_paths,
    validate_all,
)
from orca_cli.config.schema import Config, Secret
from orca_cli.config.template import example_text, template_text

__all__ = [
    "Config",
    "ConfigIssue",
    "Secret",
    "check",
    "discover",
    "example_text",
    "is_loopback_host",
    "load",
    "loads",
    "parse",
    "redacted",
    "search_paths",
    "template_text",
    "validate_all",
]
