"""What the reliability tests read from outside the request path: stored state, process facts."""

from __future__ import annotations

import os
from typing import Any

from orca_cli.state.base import ReadRequest, Store

__all__ = ["fd_count", "rss_kib", "state_keys", "tier_doc"]


async def tier_doc(store: Store, router: str, session: str) -> dict[str, Any] | None:
    """The session's stored tier document (None when nothing was committed for it)."""
    snap = await store.read(ReadRequest(router=router, session=session))
    return snap.tier


async def state_keys(store: Store) -> dict[str, Any]:
    """Every non-trace key the store holds, with its value: what "no state written" compares."""
    out: dict[str, Any] = {}
    for kind in ("session", "router", "workspace"):
        for e in await store.scan(kind):
            out[f"{e.slot.kind}:{e.slot.router}:{e.slot.session}:{e.key}"] = e.value
    return out


def rss_kib() -> int:
    """This process's resident set size (VmRSS), KiB."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("VmRSS not found in /proc/self/status")


def fd_count() -> int:
    """Open file descriptors of this process."""
    return len(os.listdir("/proc/self/fd"))
