"""Deployed route versions (SPEC §17): immutable, numbered, one active.

    <prefix>:{routes}:seq        the last version number handed out (INCR)
    <prefix>:{routes}:v:<n>      version n: JSON {"sha256", "text", "created", "note"}
    <prefix>:{routes}:active     the active version number

A version is the routes file's text as deployed (validated by the deployer against its
config; a sidecar re-validates it against its own before applying it, and keeps its current
routes when that fails). Deploying text identical (same sha256) to the active version makes no
new version. `rollback()` with no version activates the highest version below the active one.
Sidecars sharing a Redis store read `active` every half second (`active_version`), so a deploy
or rollback applies everywhere within about a second, without restart. The memory store keeps
versions in the process (`MemoryRouteVersions`), for one sidecar: `orca routes` reaches them
through that sidecar's admin API (`admin/routes.py`), which applies a change at once.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol

from orca_cli.immutable import immutable

__all__ = ["MemoryRouteVersions", "RedisRouteVersions", "RouteVersion", "RouteVersions",
           "rollback", "rollback_target"]


@immutable
class RouteVersion:
    version: int
    sha256: str
    text: str
    created: float
    note: str = ""

    def doc(self, *, with_text: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"version": self.version, "sha256": self.sha256,
                               "created": self.created, "note": self.note}
        if with_text:
            out["text"] = self.text
        return out


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class RouteVersions(Protocol):
    async def deploy(self, text: str, *, now: float, note: str = "") -> RouteVersion: ...
    async def versions(self) -> list[RouteVersion]: ...
    async def get(self, version: int) -> RouteVersion | None: ...
    async def active_version(self) -> int | None: ...
    async def activate(self, version: int) -> RouteVersion: ...


async def rollback_target(store: RouteVersions) -> int:
    """The version `rollback()` with no version activates: the highest below the active one."""
    active = await store.active_version()
    below = [v.version for v in await store.versions() if active and v.version < active]
    if not below:
        raise LookupError("no earlier version to roll back to")
    return max(below)


async def rollback(store: RouteVersions, version: int | None = None) -> RouteVersion:
    """Activate `version`, or the highest version below the active one."""
    if version is None:
        version = await rollback_target(store)
    return await store.activate(version)


class MemoryRouteVersions:
    """Versions inside one process (the memory store)."""

    def __init__(self) -> None:
        self._versions: dict[int, RouteVersion] = {}
        self._active: int | None = None

    async def deploy(self, text: str, *, now: float, note: str = "") -> RouteVersion:
        sha = _sha(text)
        if self._active is not None and self._versions[self._active].sha256 == sha:
            return self._versions[self._active]
        v = RouteVersion(len(self._versions) + 1, sha, text, now, note)
        self._versions[v.version] = v
        self._active = v.version
        return v

    async def versions(self) -> list[RouteVersion]:
        return [self._versions[k] for k in sorted(self._versions)]

    async def get(self, version: int) -> RouteVersion | None:
        return self._versions.get(version)

    async def active_version(self) -> int | None:
        return self._active

    async def activate(self, version: int) -> RouteVersion:
        if version not in self._versions:
            raise LookupError(f"no route version {version}")
        self._active = version
        return self._versions[version]


class RedisRouteVersions:
    """Versions in Redis, shared by every sidecar on the store. `client` is a
    `redis.asyncio` client with `decode_responses=True` (the store's own factory builds it)."""

    def __init__(self, client: Any, key_prefix: str) -> None:
        self._r = client
        self._k = f"{key_prefix}:{{routes}}:"

    async def deploy(self, text: str, *, now: float, note: str = "") -> RouteVersion:
        sha = _sha(text)
        active = await self.active_version()
        if active is not None:
            current = await self.get(active)
            if current is not None and current.sha256 == sha:
                return current
        n = int(await self._r.incr(self._k + "seq"))
        doc = json.dumps({"sha256": sha, "text": text, "created": now, "note": note})
        await self._r.set(self._k + f"v:{n}", doc, nx=True)
        await self._r.set(self._k + "active", n)
        return RouteVersion(n, sha, text, now, note)

    async def versions(self) -> list[RouteVersion]:
        last = int(await self._r.get(self._k + "seq") or 0)
        if not last:
            return []
        raws = await self._r.mget([self._k + f"v:{n}" for n in range(1, last + 1)])
        return [self._decode(n, raw) for n, raw in enumerate(raws, 1) if raw]

    async def get(self, version: int) -> RouteVersion | None:
        raw = await self._r.get(self._k + f"v:{version}")
        return self._decode(version, raw) if raw else None

    async def active_version(self) -> int | None:
        raw = await self._r.get(self._k + "active")
        return int(raw) if raw else None

    async def activate(self, version: int) -> RouteVersion:
        v = await self.get(version)
        if v is None:
            raise LookupError(f"no route version {version}")
        await self._r.set(self._k + "active", version)
        return v

    @staticmethod
    def _decode(version: int, raw: str) -> RouteVersion:
        d = json.loads(raw)
        return RouteVersion(version, d["sha256"], d["text"], d["created"], d.get("note", ""))
