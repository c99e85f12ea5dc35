"""Store fixtures: one contract suite over both backends, plus a private redis-server for faults.

* `store` / `env`: parametrized over `memory` (FakeClock, time moved by hand) and `redis` (the
  server at ORCA_TEST_REDIS_URL, a unique key prefix per test, real short TTLs: `env.advance`
  moves the fake clock *and* sleeps). Keys of the prefix are deleted at teardown.
* `own_redis`: a redis-server of our own on a free loopback port (`--enable-debug-command local
  --save "" --appendonly no`), for DEBUG SLEEP, CLIENT PAUSE, restarts; stopped by its pid.

Redis unreachable (or redis-server missing) skips those tests with the reason, except under
CI=true, where it fails: CI always provides Redis.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import time
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
from orca_cli.testing import free_port  # also imported from here by the store tests

REDIS_URL = os.environ.get("ORCA_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: Redis is required)")
    pytest.skip(reason)


def _sync_client(url: str) -> Any:
    import redis

    return redis.Redis.from_url(
        url, socket_timeout=2, socket_connect_timeout=1, decode_responses=True
    )


@pytest.fixture(scope="session")
def redis_url() -> str:
    client = _sync_client(REDIS_URL)
    try:
        client.ping()
    except Exception as e:  # noqa: BLE001 - any failure to answer means "no Redis here"
        _unavailable(f"Redis at {REDIS_URL} is unreachable ({type(e).__name__}: {e})")
    finally:
        client.close()
    return REDIS_URL


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


def free_cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is valid and free too."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port + 10000 > 65535:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair for a cluster node")


def stalled(port: int, within_s: float = 0.05) -> bool:
    """The server on `port` does not answer a PING within `within_s` (paused or asleep).
    One raw try: a client library would retry and hide the stall."""
    with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
        conn.sendall(b"PING\r\n")
        conn.settimeout(within_s)
        try:
            return not conn.recv(16)
        except TimeoutError:
            return True


class RedisServer:
    """A redis-server process we start, restart and stop by pid."""

    def __init__(self, binary: str, workdir: Path, extra: tuple[str, ...] = ()) -> None:
        self.binary = binary
        self.workdir = workdir
        self.extra = extra
        self.port = free_cluster_port() if "--cluster-enabled" in extra else free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        args += ["--enable-debug-command", "local", "--dir", str(self.workdir)]
        args += ["--logfile", str(self.workdir / "redis.log"), *self.extra]
        self.proc = subprocess.Popen(
            [self.binary, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            client = _sync_client(self.url)
            try:
                client.ping()
                return
            except Exception:  # noqa: BLE001 - not answering yet: poll until the deadline
                time.sleep(0.02)
            finally:
                client.close()
        self.stop()
        raise RuntimeError(f"redis-server on port {self.port} did not answer PING within 5 s")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)

    def restart(self) -> None:
        self.stop()
        self.start()

    def client(self) -> Any:
        return _sync_client(self.url)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    binary = shutil.which("redis-server")
    if binary is None:
        _unavailable("redis-server is not installed (apt-get install redis-server)")
        raise AssertionError("unreachable")
    server = RedisServer(binary, tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


class RedisCluster:
    """Three cluster-enabled redis-servers of ours joined into one cluster (no replicas)."""

    def __init__(self, binary: str, workdir: Path) -> None:
        self.nodes: list[RedisServer] = []
        for i in range(3):
            (workdir / f"n{i}").mkdir()
            self.nodes.append(RedisServer(binary, workdir / f"n{i}", ("--cluster-enabled", "yes")))

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def start(self) -> None:
        for node in self.nodes:
            node.start()
        step = 16384 // len(self.nodes)
        for i, node in enumerate(self.nodes):
            hi = 16383 if i == len(self.nodes) - 1 else (i + 1) * step - 1
            client = node.client()
            try:
                client.execute_command("CLUSTER", "ADDSLOTSRANGE", i * step, hi)
                for other in self.nodes:
                    client.execute_command("CLUSTER", "MEET", "127.0.0.1", other.port)
            finally:
                client.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if all(self._ok(node) for node in self.nodes):
                return
            time.sleep(0.05)
        raise RuntimeError("the test cluster did not reach cluster_state:ok within 10 s")

    @staticmethod
    def _ok(node: RedisServer) -> bool:
        client = node.client()
        try:
            info = client.execute_command("CLUSTER", "INFO")
            text = info if isinstance(info, str) else str(info)
            return "cluster_state:ok" in text and "cluster_known_nodes:3" in text
        finally:
            client.close()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[RedisCluster]:
    binary = shutil.which("redis-server")
    if binary is None:
        _unavailable("redis-server is not installed (apt-get install redis-server)")
        raise AssertionError("unreachable")
    cluster = RedisCluster(binary, tmp_path)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


class RedisSentinel:
    """One sentinel of ours watching an own_redis primary as service `mymaster`."""

    def __init__(self, binary: str, workdir: Path, primary: RedisServer) -> None:
        self.binary = binary
        self.workdir = workdir
        self.primary = primary
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        conf = self.workdir / "sentinel.conf"
        conf.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {self.workdir}\n"
            f"sentinel monitor mymaster 127.0.0.1 {self.primary.port} 1\n"
        )
        self.proc = subprocess.Popen(
            [self.binary, str(conf), "--sentinel"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            client = _sync_client(f"redis://127.0.0.1:{self.port}")
            try:
                if client.execute_command("SENTINEL", "get-master-addr-by-name", "mymaster"):
                    return
            except Exception:  # noqa: BLE001 - not answering yet: poll until the deadline
                time.sleep(0.02)
            finally:
                client.close()
        raise RuntimeError(f"sentinel on port {self.port} did not answer within 5 s")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)


@pytest.fixture
def own_sentinel(own_redis: RedisServer, tmp_path: Path) -> Iterator[RedisSentinel]:
    (tmp_path / "sentinel").mkdir()
    sentinel = RedisSentinel(own_redis.binary, tmp_path / "sentinel", own_redis)
    try:
        sentinel.start()
        yield sentinel
    finally:
        sentinel.stop()
