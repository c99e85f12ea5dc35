"""Store fixtures: one contract suite over both backends, plus a private redis-server for faults.

* `store` / `env`: parametrized over `memory` (FakeClock, time moved by hand) and `redis` (the
  server at ORCA_TEST_REDIS_URL, a unique key prefix per test, real short TTLs: `env.advance`
  moves the fake clock *and* sleeps). Keys of the prefix are deleted at teardown.
* `own_redis`, `own_cluster`, `own_sentinel`: redis-servers of our own (`tests/redis_procs.py`:
  free loopback ports, `--enable-debug-command local --save "" --appendonly no`), for DEBUG
  SLEEP, CLIENT PAUSE, restarts, Cluster and Sentinel; each stopped by its pid.

Redis unreachable (or redis-server missing) skips those tests with the reason, except under
CI=true, where it fails: CI always provides Redis.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from orca_cli.clock import FakeClock
from orca_cli.config.schema import StateConfig
from orca_cli.state.base import Store
from orca_cli.state.factory import open_store
from tests.redis_procs import ClusterProcs, RedisFarm, RedisProc, SentinelGroup
from tests.unavailable import unavailable

REDIS_URL = os.environ.get("ORCA_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def _sync_client(url: str) -> Any:
    import redis

    return redis.Redis.from_url(
        url, socket_timeout=2, socket_connect_timeout=1, decode_responses=True
    )


def require_redis(url: str = REDIS_URL) -> str:
    """`url` once its Redis answers a PING; else the test is `unavailable` (skipped, or
    failed under CI=true)."""
    client = _sync_client(url)
    try:
        client.ping()
    except Exception as e:  # noqa: BLE001 - any failure to answer means "no Redis here"
        unavailable(f"Redis at {url} is unreachable ({type(e).__name__}: {e})")
    finally:
        client.close()
    return url


@pytest.fixture(scope="session")
def redis_url() -> str:
    return require_redis()


def delete_prefix(url: str, prefix: str) -> None:
    client = _sync_client(url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@dataclass
class StoreEnv:
    """What a contract test needs besides the store: the clock, time, more stores."""

    backend: str
    clock: FakeClock
    prefix: str
    url: str = ""
    timeout_ms: int = 2000
    mode: str = "single"
    opened: list[Store] = field(default_factory=list)

    @property
    def real_time(self) -> bool:
        return self.backend == "redis"

    async def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        if self.real_time:
            await asyncio.sleep(seconds)

    def open(self, **kw: Any) -> Store:
        """Another store on the same data (Redis) or a fresh one (memory)."""
        cfg = StateConfig(
            backend="redis" if self.backend == "redis" else "memory",
            redis_mode=self.mode,  # type: ignore[arg-type]
            redis_url=self.url or StateConfig().redis_url,
            key_prefix=self.prefix,
            timeout_ms=kw.pop("timeout_ms", self.timeout_ms),
        )
        store = open_store(
            cfg,
            clock=self.clock,
            trace_max=kw.pop("trace_max", 20000),
            trace_ttl_s=kw.pop("trace_ttl_s", 86400),
            **kw,
        )
        self.opened.append(store)
        return store

    def redis(self) -> Any:
        return _sync_client(self.url)


@pytest.fixture(params=["memory", "redis"])
async def env(request: pytest.FixtureRequest) -> AsyncIterator[StoreEnv]:
    prefix = f"orcatest-{uuid.uuid4().hex[:12]}"
    url = request.getfixturevalue("redis_url") if request.param == "redis" else ""
    e = StoreEnv(request.param, FakeClock(), prefix, url)
    try:
        yield e
    finally:
        for s in e.opened:
            await s.close()
        if url:
            delete_prefix(url, prefix)


@pytest.fixture
def store(env: StoreEnv) -> Store:
    return env.open()


@pytest.fixture
async def redis_env(redis_url: str) -> AsyncIterator[StoreEnv]:
    """Redis only, for behaviour memory cannot have (two sidecars, faults, state loss)."""
    prefix = f"orcatest-{uuid.uuid4().hex[:12]}"
    e = StoreEnv("redis", FakeClock(), prefix, redis_url)
    try:
        yield e
    finally:
        for s in e.opened:
            await s.close()
        delete_prefix(redis_url, prefix)


@pytest.fixture
def own_farm(tmp_path: Path) -> Iterator[RedisFarm]:
    farm = RedisFarm(tmp_path / "redis")
    try:
        yield farm
    finally:
        farm.stop_all()


@pytest.fixture
def own_redis(own_farm: RedisFarm) -> RedisProc:
    return own_farm.server()


@pytest.fixture
def own_cluster(own_farm: RedisFarm) -> ClusterProcs:
    return own_farm.cluster()


@pytest.fixture
def own_sentinel(own_farm: RedisFarm) -> SentinelGroup:
    return own_farm.sentinel_group()
