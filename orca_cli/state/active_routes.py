"""The routes a sidecar applies now (SPEC §17): the config's, or the active deployed version.

    active = ActiveRoutes(cfg, versions)          # versions: Memory/RedisRouteVersions or None
    await active.refresh(now)                     # at most one store read per `period_s`
    table, version = active.table, active.version # version 0 = the config's own [[routes]]

`refresh` reads the active version number (one GET); when it changed, it reads that version,
validates it against this sidecar's config and compiles it. A version that does not fit (a
target this sidecar does not know) is not applied: the previous routes stay and `last_error`
says why. A store error keeps the current routes too (routes never fail a request). With
`period_s = 0` every call reads, so the admin API applies a deploy or rollback it just made
before answering, and the sidecar's next request walks the new routes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orca_cli.config.routes_file import with_routes_text
from orca_cli.routing.routes.graph import RouteTable, compile_routes

if TYPE_CHECKING:
    from orca_cli.config.schema import Config
    from orca_cli.state.route_versions import RouteVersions

__all__ = ["ActiveRoutes"]


class ActiveRoutes:
    def __init__(self, cfg: Config, versions: RouteVersions | None, *,
                 period_s: float = 1.0) -> None:
        self._cfg = cfg
        self._versions = versions
        self._period_s = period_s
        self._next = float("-inf")
        self.table: RouteTable = compile_routes(cfg.routes)
        self.version = 0
        self.last_error = ""

    @property
    def versions(self) -> RouteVersions | None:
        """The deployed versions this sidecar follows (None: its store keeps none); the admin
        API deploys and rolls back through the same handle (`admin/routes.py`)."""
        return self._versions

    async def refresh(self, now: float) -> None:
        if self._versions is None or now < self._next:
            return
        self._next = now + self._period_s
        try:
            active = await self._versions.active_version()
            if active is None or active == self.version:
                return
            v = await self._versions.get(active)
        except Exception as exc:  # noqa: BLE001 - a store error keeps the routes in force
            self.last_error = f"store: {type(exc).__name__}"
            return
        if v is None:
            return
        new, errors = with_routes_text(self._cfg, v.text, f"routes version {active}")
        if errors or new is None:
            self.last_error = str(errors[0]) if errors else "invalid"
            return
        self.table, self.version, self.last_error = compile_routes(new.routes), active, ""
