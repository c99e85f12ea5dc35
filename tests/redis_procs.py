"""redis-server processes of our own, on free loopback ports, for fault and topology tests.

Every server runs with `--save '' --appendonly no --enable-debug-command local` in its own
directory under the test's temp dir (so `DEBUG SLEEP` works and nothing persists unless a test
asks for `SAVE`). A `RedisFarm` records every process it started and stops each by its pid at
teardown (SIGTERM, then SIGKILL after 5 s), whatever the test did to it. Three topologies:

* `RedisProc`: one server; `kill()` is a crash (SIGKILL), `start()` again reuses its port.
* `ClusterProcs`: three `--cluster-enabled yes` nodes joined by `redis-cli --cluster create`.
* `SentinelGroup`: a primary, a replica and one `redis-server --sentinel` watching `mymaster`;
  `failover()` runs `SENTINEL FAILOVER` and waits until the replica is the new primary.

Ports come from the kit's `free_port` (outside the kernel's ephemeral range, so no client's
outgoing connection takes one between the pick and the server's bind). A server that exits
while starting fails its test at once, with the end of its log.

The binaries must exist: without them a test skips, except under CI=true, where it fails
(`.ci/run` installs redis-server and redis-tools).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

from orca_cli.testing import eventually_sync, free_port
from tests.unavailable import unavailable

__all__ = [
    "ClusterProcs",
    "RedisFarm",
    "RedisProc",
    "SentinelGroup",
    "free_port",
    "require_binary",
    "stalled",
    "sync_client",
]

SERVICE = "mymaster"


def require_binary(name: str) -> str:
    """The binary's path; a missing one skips the test, or fails it under CI=true."""
    path = shutil.which(name)
    if path is None:
        unavailable(f"{name} is not installed (apt-get install redis-server redis-tools)")
    return path


def sync_client(port: int, **kw: Any) -> Any:
    import redis

    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=kw.pop("timeout", 3),
                       socket_connect_timeout=1, decode_responses=True, **kw)


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


class _Exited(RuntimeError):
    """The server process ended while a test waited for it: no point waiting on."""


def _wait(what: str, cond: Any, timeout_s: float, step_s: float = 0.02) -> None:
    """`eventually_sync` for a server still starting: a failing probe counts as "not yet"."""

    def probe() -> bool:
        try:
            return bool(cond())
        except _Exited:
            raise
        except Exception:  # noqa: BLE001 - not up yet; poll again until the deadline
            return False

    try:
        eventually_sync(probe, timeout_s, step_s, what=what)
    except AssertionError as exc:
        raise RuntimeError(str(exc)) from None


class RedisProc:
    """One redis-server process: started, crashed, restarted on the same port, by pid."""

    def __init__(self, binary: str, workdir: Path, *, extra: tuple[str, ...] = (),
                 sentinel_conf: Path | None = None, port: int | None = None) -> None:
        self.binary = binary
        self.workdir = workdir
        self.extra = extra
        self.sentinel_conf = sentinel_conf
        self.port = port or free_port(with_bus="--cluster-enabled" in extra)
        self.proc: subprocess.Popen[bytes] | None = None
        workdir.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> RedisProc:
        if self.sentinel_conf is not None:
            argv = [self.binary, str(self.sentinel_conf), "--sentinel"]
        else:
            argv = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no", "--enable-debug-command", "local",
                    "--dir", str(self.workdir), "--logfile", str(self.workdir / "redis.log"),
                    *self.extra]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait(f"redis-server on port {self.port} did not answer PING", self._pings, 5)
        return self

    def restart(self) -> RedisProc:
        """A clean stop (SIGTERM), then a start on the same port."""
        self.stop()
        return self.start()

    def _pings(self) -> bool:
        client = sync_client(self.port, timeout=0.5)
        try:
            return bool(client.ping())
        except Exception:
            if self.proc is not None and self.proc.poll() is not None:
                raise _Exited(self._exit_report()) from None
            raise
        finally:
            client.close()

    def _exit_report(self) -> str:
        assert self.proc is not None
        log = self.workdir / ("sentinel.log" if self.sentinel_conf else "redis.log")
        try:
            tail = " | ".join(log.read_text(errors="replace").splitlines()[-5:])
        except OSError:
            tail = "(no log)"
        return f"redis-server on port {self.port} exited ({self.proc.returncode}): {tail}"

    def kill(self) -> None:
        """A crash: SIGKILL by pid, reaped; the port is free again at once."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)

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

    def client(self, **kw: Any) -> Any:
        return sync_client(self.port, **kw)

    def command(self, *args: Any) -> Any:
        client = self.client()
        try:
            return client.execute_command(*args)
        finally:
            client.close()


class RedisFarm:
    """Starts servers under one directory and stops every one of them at teardown."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.server_bin = require_binary("redis-server")
        self.procs: list[RedisProc] = []
        self._n = 0

    def _dir(self, name: str) -> Path:
        self._n += 1
        return self.root / f"{self._n:02d}-{name}"

    def server(self, *extra: str, start: bool = True) -> RedisProc:
        proc = RedisProc(self.server_bin, self._dir("redis"), extra=tuple(extra))
        self.procs.append(proc)
        return proc.start() if start else proc

    def cluster(self) -> ClusterProcs:
        return ClusterProcs(self)

    def sentinel_group(self) -> SentinelGroup:
        return SentinelGroup(self)

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()


class ClusterProcs:
    """Three masters, no replicas, joined with `redis-cli --cluster create --cluster-yes`."""

    def __init__(self, farm: RedisFarm) -> None:
        cli = require_binary("redis-cli")
        self.nodes = []
        for _ in range(3):
            node = farm.server("--cluster-enabled", "yes", "--cluster-node-timeout", "2000",
                               start=False)
            node.extra += ("--cluster-config-file", str(node.workdir / "nodes.conf"))
            self.nodes.append(node.start())
        addrs = [f"127.0.0.1:{n.port}" for n in self.nodes]
        done = subprocess.run([cli, "--cluster", "create", *addrs, "--cluster-replicas", "0",
                               "--cluster-yes"], capture_output=True, timeout=60, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed: {done.stdout[-500:]!r}")
        _wait("the cluster did not reach cluster_state:ok", self._ok, 15, 0.05)

    def _ok(self) -> bool:
        for node in self.nodes:
            info = node.command("CLUSTER", "INFO")
            text = str(info)
            if "cluster_state" not in text:
                return False
            state = info.get("cluster_state") if isinstance(info, dict) else None
            known = info.get("cluster_known_nodes") if isinstance(info, dict) else None
            if (state, str(known)) != ("ok", "3") and (
                    "cluster_state:ok" not in text or "cluster_known_nodes:3" not in text):
                return False
        return True

    @property
    def url(self) -> str:
        return self.nodes[0].url


class SentinelGroup:
    """A primary, its replica and one sentinel (quorum 1) for the service `mymaster`."""

    def __init__(self, farm: RedisFarm) -> None:
        # No 5 s diskless-sync delay: the replica syncs as soon as it connects.
        fast = ("--repl-diskless-sync-delay", "0")
        self.primary = farm.server(*fast)
        self.replica = farm.server("--replicaof", "127.0.0.1", str(self.primary.port), *fast)
        _wait("the replica did not sync", lambda: _info(self.replica, "replication").get(
            "master_link_status") == "up", 10, 0.05)
        sdir = farm._dir("sentinel")
        sdir.mkdir(parents=True)
        port = free_port()
        conf = sdir / "sentinel.conf"
        conf.write_text(
            f"port {port}\nbind 127.0.0.1\ndir {sdir}\nlogfile {sdir / 'sentinel.log'}\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {self.primary.port} 1\n"
            f"sentinel down-after-milliseconds {SERVICE} 1000\n"
            f"sentinel failover-timeout {SERVICE} 5000\n"
        )
        self.sentinel = RedisProc(farm.server_bin, sdir, sentinel_conf=conf, port=port)
        farm.procs.append(self.sentinel)
        self.sentinel.start()
        _wait("the sentinel did not discover the replica", self._replica_known, 15, 0.05)

    def _replica_known(self) -> bool:
        rows = self.sentinel.command("SENTINEL", "REPLICAS", SERVICE)
        return any(_flags(r) == {"slave"} for r in rows)

    @property
    def sentinels(self) -> tuple[str, ...]:
        return (f"127.0.0.1:{self.sentinel.port}",)

    def master_port(self) -> int:
        _host, port = self.sentinel.command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
        return int(port)

    def failover(self, timeout_s: float = 20) -> None:
        """`SENTINEL FAILOVER`, then wait until the old replica serves as primary."""
        old, new = self.primary, self.replica
        self.sentinel.command("SENTINEL", "FAILOVER", SERVICE)
        _wait("the failover did not complete", lambda: self.master_port() == new.port
              and _info(new, "replication").get("role") == "master", timeout_s, 0.05)
        self.primary, self.replica = new, old


def _info(proc: RedisProc, section: str) -> dict[str, Any]:
    client = proc.client()
    try:
        return dict(client.info(section))
    finally:
        client.close()


def _flags(row: Any) -> set[str]:
    if isinstance(row, dict):
        flags = row.get("flags", "")
    else:  # a flat [name, value, ...] list
        pairs = dict(zip(row[0::2], row[1::2], strict=False))
        flags = pairs.get("flags", "")
    return set(str(flags).split(",")) if flags else set()
