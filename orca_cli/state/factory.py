"""`open_store`: the one place a store and its Redis client are built (SPEC §9).

The Redis client is built for the failure modes RELIABILITY.md measured: no library retries
(`Retry(NoBackoff(), 0)`: a re-sent write whose outcome was unknown applies twice), connect
timeouts equal to `timeout_ms`, every call of the store under one deadline of `timeout_ms`
(`RedisLink._guarded`; the CLI's own clients get redis-py's socket timeouts instead), and a
bounded pool whose waiter fails at that deadline instead of piling up (`BlockingConnectionPool`;
Sentinel's pool is bounded by `max_connections` and fails at once when exhausted). Nothing connects until the first call,
so building a store never blocks and `orca serve` starts with Redis down.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from orca_cli.clock import Clock
from orca_cli.config.schema import StateConfig
from orca_cli.errors import ConfigError
from orca_cli.state.base import Store
from orca_cli.state.codec import AUDIT_MAX
from orca_cli.state.keys import check_name
from orca_cli.state.memory import MemoryStore

__all__ = ["DEFAULT_MAX_CONNECTIONS", "open_store", "redis_client_factory"]

DEFAULT_MAX_CONNECTIONS = 64


def open_store(
    state_cfg: StateConfig,
    *,
    clock: Clock,
    trace_max: int = 20000,
    trace_ttl_s: float = 86400,
    audit_max: int = AUDIT_MAX,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> Store:
    """Build the configured backend; Redis connects lazily on the first call."""
    try:
        check_name(state_cfg.key_prefix, "key prefix")
    except ValueError as e:
        raise ConfigError(None, "state.key_prefix", str(e)) from None
    if state_cfg.backend == "memory":
        return MemoryStore(
            clock=clock,
            key_prefix=state_cfg.key_prefix,
            trace_max=trace_max,
            trace_ttl_s=trace_ttl_s,
            audit_max=audit_max,
        )
    if state_cfg.backend != "redis":
        raise ConfigError(
            None, "state.backend", f"must be one of memory, redis, got {state_cfg.backend!r}"
        )
    from orca_cli.state.redis import RedisStore

    connect, on_close = redis_client_factory(state_cfg, max_connections=max_connections,
                                             read_timeouts=False)
    return RedisStore(
        connect,
        mode=state_cfg.redis_mode,
        clock=clock,
        key_prefix=state_cfg.key_prefix,
        timeout_ms=state_cfg.timeout_ms,
        trace_max=trace_max,
        trace_ttl_s=trace_ttl_s,
        audit_max=audit_max,
        on_close=on_close,
    )


def redis_client_factory(
    cfg: StateConfig,
    *,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    read_timeouts: bool = True,
) -> tuple[Callable[[], Any], Callable[[], Awaitable[None]]]:
    """(build the client, close what the client does not close itself) for `cfg.redis_mode`.

    `read_timeouts` False: no redis-py socket timeout, for a caller that bounds every call
    with one deadline of its own (`RedisStore`: `RedisLink._guarded`). redis-py's would add
    an asyncio timer per reply and a task per send (`asyncio.wait_for`) — ~9 % of a request's
    instructions on the Redis store — and bound nothing the deadline does not. A deadline
    that cancels a read or a send makes redis-py drop that connection, as a timeout would."""
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    timeout_s = cfg.timeout_ms / 1000
    common: dict[str, Any] = {
        "socket_timeout": timeout_s if read_timeouts else None,
        "socket_connect_timeout": timeout_s,
        "retry": Retry(NoBackoff(), 0),
        "decode_responses": True,
    }
    extra: list[Any] = []

    async def on_close() -> None:
        for client in extra:
            await client.aclose()
        extra.clear()

    if cfg.redis_mode == "single":

        def single() -> Any:
            from redis.asyncio import BlockingConnectionPool, Redis

            # A waiter for a free connection gives up at the caller's deadline when it has one.
            pool = BlockingConnectionPool.from_url(
                cfg.redis_url, max_connections=max_connections,
                timeout=timeout_s if read_timeouts else None, **common
            )
            return Redis.from_pool(pool)  # the client owns (and closes) its pool

        return single, on_close

    if cfg.redis_mode == "cluster":

        def cluster() -> Any:
            from redis.asyncio.cluster import RedisCluster

            return RedisCluster.from_url(cfg.redis_url, max_connections=max_connections, **common)

        return cluster, on_close

    if cfg.redis_mode == "sentinel":
        hosts = [_host_port(s) for s in cfg.sentinels]
        if not hosts:
            raise ConfigError(
                None, "state.sentinels", 'redis_mode = "sentinel" needs at least one "host:port"'
            )

        def sentinel() -> Any:
            from redis.asyncio.connection import parse_url
            from redis.asyncio.sentinel import Sentinel

            url = parse_url(cfg.redis_url)
            options: dict[str, Any] = dict(common, max_connections=max_connections)
            options.update((k, url[k]) for k in ("username", "password", "db") if url.get(k))
            # The Sentinel probes run outside any deadline of the caller's: they keep theirs.
            probe = {"socket_timeout": timeout_s, "socket_connect_timeout": timeout_s,
                     "retry": common["retry"]}
            # redis-py types Sentinel.__init__ only in some releases (redis>=5.0 is allowed).
            manager: Any = Sentinel(  # type: ignore[no-untyped-call, unused-ignore]
                hosts, sentinel_kwargs=probe)
            extra.extend(manager.sentinels)
            return manager.master_for(cfg.sentinel_service, **options)

        return sentinel, on_close

    raise ConfigError(
        None,
        "state.redis_mode",
        f"must be one of single, sentinel, cluster, got {cfg.redis_mode!r}",
    )


def _host_port(spec: str) -> tuple[str, int]:
    host, sep, port = spec.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ConfigError(None, "state.sentinels", f'each entry must be "host:port", got {spec!r}')
    return host.strip("[]"), int(port)
