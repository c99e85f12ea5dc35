"""orca_cli.state: the store interface and its two backends (SPEC §9).

`open_store(cfg.state, clock=..., trace_max=..., trace_ttl_s=...)` builds the configured one;
the interface types live in `state.base`, key names in `state.keys`. The backends are imported
on first use, so importing the interface never imports redis (STYLE §4 rule 15).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orca_cli.state.base import (
    CommitBatch,
    CommitResult,
    KeyEntry,
    ReadRequest,
    SlotRef,
    SlotResult,
    SlotWrite,
    Snapshot,
    Store,
)

if TYPE_CHECKING:
    from orca_cli.state.factory import open_store
    from orca_cli.state.memory import MemoryStore
    from orca_cli.state.redis import RedisStore

__all__ = [
    "CommitBatch",
    "CommitResult",
    "KeyEntry",
    "MemoryStore",
    "ReadRequest",
    "RedisStore",
    "SlotRef",
    "SlotResult",
    "SlotWrite",
    "Snapshot",
    "Store",
    "open_store",
]

_LAZY = {
    "open_store": "orca_cli.state.factory",
    "MemoryStore": "orca_cli.state.memory",
    "RedisStore": "orca_cli.state.redis",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'orca_cli.state' has no attribute {name!r}")
