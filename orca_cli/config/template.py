"""The config text `orca init` writes (SPEC §1.1, §2).

It is the documented full example, shipped as package data (`orca_cli/config/example.toml`,
identical to the repository's `orca.toml.example` — a test keeps them equal): its routers use
`sim` channels, so the written file serves on a fresh machine with no key, and it carries the
real channels switched off with `${...}` keys.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["EXAMPLE_RESOURCE", "example_text", "template_text"]

EXAMPLE_RESOURCE = "example.toml"


def example_text() -> str:
    """The documented full example config."""
    return resources.files("orca_cli.config").joinpath(EXAMPLE_RESOURCE).read_text("utf-8")


def template_text() -> str:
    """What `orca init` writes: the full example (every key commented, valid as written)."""
    return example_text()
