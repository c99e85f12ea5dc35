"""A sidecar's active routes follow the deployed version within the refresh period."""

from __future__ import annotations

import asyncio

from orca_cli.config.load import loads
from orca_cli.routing.routes import RequestFacts
from orca_cli.state.active_routes import ActiveRoutes
from orca_cli.state.route_versions import MemoryRouteVersions, rollback
from tests.routes.test_routes_cli import CONFIG, ROUTES

FACTS = RequestFacts("openai", "small", {"x-team": "infra"}, key_name="ci")


def test_refresh_applies_deploys_and_rollbacks_once_per_period() -> None:
    cfg = loads(CONFIG)
    vs = MemoryRouteVersions()
    active = ActiveRoutes(cfg, vs, period_s=1.0)

    async def go() -> None:
        assert active.table.evaluate(FACTS, {}).kind == "none" and active.version == 0
        await vs.deploy(ROUTES, now=0.0)
        await active.refresh(10.0)
        d = active.table.evaluate(FACTS, {})
        assert (active.version, d.kind, d.path) == (1, "target", ("c", "big"))
        await vs.deploy(ROUTES.replace('value = "infra"', 'value = "web"'), now=0.0)
        await active.refresh(10.5)  # within the period: no read
        assert active.version == 1
        await active.refresh(11.0)
        assert active.version == 2 and active.table.evaluate(FACTS, {}).path[:2] == ("c", "ab")
        await rollback(vs)
        await active.refresh(12.0)
        assert active.version == 1

    asyncio.run(go())


def test_a_version_that_does_not_fit_keeps_the_current_routes() -> None:
    cfg = loads(CONFIG)
    vs = MemoryRouteVersions()
    active = ActiveRoutes(cfg, vs)

    async def go() -> None:
        await vs.deploy(ROUTES, now=0.0)
        await active.refresh(1.0)
        await vs.deploy(ROUTES.replace('target = "sim:big"', 'target = "sim:gone"'), now=0.0)
        await active.refresh(3.0)
        assert active.version == 1
        assert 'routes[0].nodes.big.target: target "sim:gone"' in active.last_error

    asyncio.run(go())
