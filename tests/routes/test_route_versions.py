"""Route versions: immutable, numbered, one active; in process and on a real Redis; the CLI."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.state.route_versions import (
    MemoryRouteVersions,
    RedisRouteVersions,
    RouteVersions,
    rollback,
)
from tests.routes.test_routes_cli import CONFIG, ROUTES
from tests.state.conftest import delete_prefix, redis_url

__all__ = ["redis_url"]  # the session fixture: a reachable Redis, or skip (fail under CI)



@pytest.fixture
def prefix(redis_url: str) -> Iterator[str]:
    p = f"t{uuid.uuid4().hex[:10]}"
    yield p
    delete_prefix(redis_url, p)


async def _scenario(vs: RouteVersions, other: RouteVersions) -> None:
    assert await vs.versions() == [] and await vs.active_version() is None
    v1 = await vs.deploy("a = 1\n", now=1.0, note="first")
    v2 = await vs.deploy("a = 2\n", now=2.0)
    assert (v1.version, v2.version) == (1, 2)
    assert await other.active_version() == 2  # the same store: seen by the other handle
    same = await vs.deploy("a = 2\n", now=3.0)
    assert same.version == 2 and len(await vs.versions()) == 2
    back = await rollback(other)
    assert back.version == 1 and back.text == "a = 1\n" and back.note == "first"
    assert await vs.active_version() == 1
    with pytest.raises(LookupError):
        await rollback(vs)  # nothing below version 1
    assert (await rollback(vs, 2)).version == 2
    with pytest.raises(LookupError):
        await vs.activate(9)
    got = await vs.get(1)
    assert got is not None and got.sha256 == v1.sha256 and got.created == 1.0


def test_memory_versions() -> None:
    vs = MemoryRouteVersions()
    asyncio.run(_scenario(vs, vs))


def test_redis_versions_are_shared_between_clients(prefix: str, redis_url: str) -> None:
    from redis.asyncio import Redis

    async def go() -> None:
        a = Redis.from_url(redis_url, decode_responses=True)
        b = Redis.from_url(redis_url, decode_responses=True)
        try:
            await _scenario(RedisRouteVersions(a, prefix), RedisRouteVersions(b, prefix))
        finally:
            await a.aclose()
            await b.aclose()
    asyncio.run(go())


@pytest.fixture
def files(tmp_path: Path, prefix: str, redis_url: str) -> dict[str, str]:
    cfg, routes = tmp_path / "orca.toml", tmp_path / "routes.toml"
    cfg.write_text(CONFIG + f'\n[state]\nbackend = "redis"\nredis_url = "{redis_url}"\n'
                   f'key_prefix = "{prefix}"\n')
    routes.write_text(ROUTES)
    return {"config": str(cfg), "routes": str(routes)}


def _cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def test_cli_deploy_list_diff_rollback(files: dict[str, str]) -> None:
    c = ("--config", files["config"])
    r = _cli("routes", "deploy", files["routes"], "--note", "ab test", *c)
    assert r.exit_code == 0, r.output
    # stdout alone: the runner's mixed `output` may put the stderr notes (which sidecar, the
    # direct store) before or after it
    assert r.stdout.startswith("active: version 1 ")
    Path(files["routes"]).write_text(ROUTES.replace("percent = 50", "percent = 50.0", 1)
                                     .replace('message = "try later"', 'message = "later"'))
    assert _cli("routes", "deploy", files["routes"], *c).exit_code == 0
    doc = json.loads(_cli("routes", "list", "--json", *c).stdout)
    assert doc["active"] == 2 and [v["version"] for v in doc["versions"]] == [1, 2]
    assert doc["versions"][0]["note"] == "ab test"
    diff = _cli("routes", "diff", "1", "2", *c).stdout
    assert '-message = "try later"' in diff and '+message = "later"' in diff
    r = _cli("routes", "rollback", *c)
    assert r.exit_code == 0 and "active: version 1" in r.stdout
    assert "* " in _cli("routes", "list", *c).stdout.splitlines()[0]
    assert _cli("routes", "rollback", "7", *c).exit_code == 1


def test_cli_deploy_refuses_an_invalid_file(files: dict[str, str]) -> None:
    Path(files["routes"]).write_text(ROUTES.replace('next = "small"}]', 'next = "c"}]'))
    r = _cli("routes", "deploy", files["routes"], "--config", files["config"])
    assert r.exit_code == 1
    assert "routes[0].nodes.ab: cycle: c -> ab -> c" in r.output
    assert "nothing deployed" in r.output
    doc = json.loads(_cli("routes", "list", "--json", "--config", files["config"]).stdout)
    assert doc == {"active": None, "versions": []}


def test_cli_versions_on_the_memory_store_need_the_running_sidecar(tmp_path: Path) -> None:
    cfg = tmp_path / "orca.toml"
    cfg.write_text(CONFIG)  # no sidecar record under this test's $XDG_STATE_HOME
    r = _cli("routes", "list", "--config", str(cfg))
    assert r.exit_code == 1 and r.stdout == ""
    assert "the memory store lives inside the `orca serve` process" in r.stderr
