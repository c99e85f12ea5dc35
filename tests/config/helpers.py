"""Small builders for config tests: a valid minimal document to mutate."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["errors_of", "minimal_doc"]

_MINIMAL: dict[str, Any] = {
    "channels": [
        {"name": "sim-a", "type": "sim", "keys": ["k1"], "models": ["cheap", "big"]},
    ],
    "routers": {
        "coding": {"weak_pool": ["cheap"], "strong_pool": ["big"]},
    },
}


def minimal_doc() -> dict[str, Any]:
    """A fresh copy of a small valid config document (one sim channel, one router)."""
    return copy.deepcopy(_MINIMAL)


def errors_of(doc: dict[str, Any], environ: dict[str, str] | None = None) -> list[str]:
    """Every validation error of `doc` as `key: why` strings."""
    from orca_cli.config.load import validate_doc

    _cfg, errors = validate_doc(doc, source="orca.toml", environ=environ or {})
    return [f"{e.key}: {e.why}" for e in errors]
