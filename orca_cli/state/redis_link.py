"""The Redis store's link to its server (SPEC §9): the client, the one hard deadline every call
runs under (any Redis error or timeout becomes `StoreUnavailable`), one pipelined round trip
per call, script loading, and the epoch key that detects a state loss. `RedisStore` builds
the store protocol (read, commit, operator reads) on top of it.

State loss: the epoch key `<prefix>:epoch` holds `{token, created[, lost_at]}`. Every read
GETs it; when it vanished (or this server's `run_id` changed, checked after an error and on
`ping`, single and Sentinel modes), the link records `state_lost_at`, re-creates the epoch
with `lost_at` (so every sidecar, even one started later, reports the same time) and audits
`state_lost` once (actor "store").
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import hiredis
from redis.exceptions import NoScriptError, RedisError, ResponseError

from orca_cli.clock import Clock
from orca_cli.errors import StoreUnavailable
from orca_cli.state import keys as K
from orca_cli.state import redis_cmds as C
from orca_cli.state.codec import AUDIT_MAX, audit_event, decode_doc, dumps
from orca_cli.state.redis_cmds import Cmd
from orca_cli.state.scripts import ALL_SCRIPTS

__all__ = ["RedisLink"]

# Commands whose replies redis-py hands back as parsed (no response callback): a pipeline of
# only these — a request's read and commit — goes out packed by hiredis (`_send_packed`).
_PLAIN_REPLIES = frozenset({"EVALSHA", "EVALSHA_RO", "GET", "MGET", "HMGET"})

T = TypeVar("T")
RECHECK_AFTER_ERROR_S = 30.0  # how long reads keep re-reading the run_id after an error


class RedisLink:
    """One Redis deployment (`single`, `sentinel` or `cluster`) as the store talks to it."""

    def __init__(
        self,
        connect: Callable[[], Any],
        *,
        mode: str,
        clock: Clock,
        key_prefix: str,
        timeout_ms: int,
        audit_max: int = AUDIT_MAX,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._connect = connect
        self._mode = mode
        self._clock = clock
        self._prefix = K.check_name(key_prefix, "state.key_prefix")
        self._timeout_ms = timeout_ms
        self._timeout_s = timeout_ms / 1000
        self._audit_max = audit_max
        self._on_close = on_close
        self._redis: Any = None
        self._ready = False
        self._init_lock = asyncio.Lock()
        self._run_id: str | None = None
        self._epoch_token: str | None = None
        self._recheck = False
        # After an error the server's run_id is re-read on every read for a while, not once:
        # a Sentinel failover may move this link to the new primary only after the first
        # re-check already ran against the old one.
        self._recheck_until = 0.0
        self._primary_seen: Any = None  # Sentinel: the primary's address the pool last found
        # EVALSHA_RO for the read script, once INFO shows Redis >= 7 (never on Cluster, where
        # redis-py would ask the server for the keys of every such command: a round trip each).
        self._read_only = False
        self.state_lost_at: float | None = None
        self.round_trips = 0  # pipelines sent (a read or commit is one in the common case)
        self.errors = 0

    def _client(self) -> Any:
        if self._redis is None:
            self._redis = self._connect()
        return self._redis

    async def _guarded(
        self, what: str, call: Callable[[], Awaitable[T]], timeout_s: float | None = None
    ) -> T:
        try:
            async with asyncio.timeout(timeout_s or self._timeout_s):
                return await call()
        except StoreUnavailable:
            self._note_error()
            raise
        except (RedisError, OSError, TimeoutError) as e:
            self._note_error()
            detail = str(e) or type(e).__name__
            ms = round((timeout_s or self._timeout_s) * 1000)
            raise StoreUnavailable(
                f"state store {what} failed within {ms} ms ({detail}); "
                "requests are served degraded until it answers"
            ) from e

    def _note_error(self) -> None:
        self.errors += 1
        self._recheck = True
        self._recheck_until = self._clock.monotonic() + RECHECK_AFTER_ERROR_S

    @property
    def rechecking(self) -> bool:
        """Whether the next read also reads INFO server (the run_id): after an error (see
        `_note_error`), and when Sentinel's pool has moved to another primary, which may
        happen without any error this link saw (a graceful failover)."""
        pool = getattr(self._redis, "connection_pool", None)
        primary = getattr(pool, "master_address", None)
        if primary is not None and primary != self._primary_seen:
            if self._primary_seen is not None:
                self._recheck = True
            self._primary_seen = primary
        return self._recheck or self._clock.monotonic() < self._recheck_until

    async def _pipeline(self, cmds: Sequence[Cmd]) -> list[Any]:
        client = self._client()
        self.round_trips += 1
        if self._mode != "cluster" and all(cmd[0] in _PLAIN_REPLIES for cmd in cmds):
            return await _send_packed(client.connection_pool, cmds)
        pipe = client.pipeline(transaction=False)
        for cmd in cmds:
            pipe.execute_command(*C.wire(cmd))
        return list(await pipe.execute(raise_on_error=False))

    async def _run(self, cmds: Sequence[Cmd]) -> tuple[list[Any], int]:
        """One round trip (two after a server restart flushed the scripts); errors raise."""
        res = await self._pipeline(cmds)
        trips = 1
        if any(isinstance(r, NoScriptError) for r in res):
            # Nothing ran for a NOSCRIPT reply; what did run is idempotent (markers, ZADD, SET).
            await self._load_scripts()
            res = await self._pipeline(cmds)
            trips += 2
        for r in res:
            if isinstance(r, Exception):
                raise StoreUnavailable(
                    f"state store answered an error ({r}); the outcome of this call is unknown, "
                    "a commit retried with the same request id applies once"
                )
        return res, trips

    async def _load_scripts(self) -> None:
        if self._mode == "cluster":
            for s in ALL_SCRIPTS:
                await self._client().script_load(s.source)  # sent to every primary
        else:
            await self._pipeline([("SCRIPT LOAD", s.source) for s in ALL_SCRIPTS])

    async def _ensure_ready(self) -> int:
        """First contact: record run_id, make sure the epoch exists, load the scripts."""
        if self._ready:
            return 0
        async with self._init_lock:
            if self._ready:
                return 0
            now = self._clock.now()
            epoch = K.epoch_key(self._prefix)
            fresh = dumps({"token": secrets.token_hex(8), "created": now})
            cmds: list[Cmd] = [("SET", epoch, fresh, "NX"), ("GET", epoch)]
            if self._mode != "cluster":
                cmds.append(("INFO", "server"))
            res, trips = await self._run(cmds)
            if self._mode != "cluster":
                self._run_id = C.run_id(res[2])
                self._read_only = C.has_read_only_scripts(res[2])
            doc = decode_doc(res[1]) or {}
            self._epoch_token = doc.get("token")
            lost_at = doc.get("lost_at")
            if isinstance(lost_at, (int, float)):
                self.state_lost_at = float(lost_at)
            await self._load_scripts()
            self._ready = True
            return trips + 1

    async def _observe_epoch(self, epoch_text: str | None, info: Any | None) -> int:
        """Detect a state loss from the epoch GET (and INFO server when re-checking)."""
        reason = ""
        if info is not None:
            run_id = C.run_id(info)
            if self._run_id is not None and run_id and run_id != self._run_id:
                reason = "run_id_changed"
            self._run_id = run_id or self._run_id
            self._read_only = C.has_read_only_scripts(info)
            self._recheck = False
        doc = decode_doc(epoch_text)
        token = doc.get("token") if doc else None
        if token is None:
            reason = "epoch_missing"
        elif token != self._epoch_token and (
            not reason or isinstance(doc.get("lost_at") if doc else None, (int, float))
        ):
            # Another sidecar saw the loss first and re-created the epoch (its record carries
            # `lost_at`): adopt it, even when this sidecar's own evidence is a new run_id —
            # one loss, one `state_lost` event, store-wide.
            self._epoch_token = token
            lost_at = doc.get("lost_at") if doc else None
            self.state_lost_at = (
                float(lost_at) if isinstance(lost_at, (int, float)) else self._clock.now()
            )
            reason = ""
        if not reason:
            return 0
        return await self._declare_lost(reason, only_if_missing=token is None)

    async def _declare_lost(self, reason: str, *, only_if_missing: bool) -> int:
        now = self._clock.now()
        epoch = K.epoch_key(self._prefix)
        token = secrets.token_hex(8)
        doc = dumps({"token": token, "created": now, "lost_at": now, "reason": reason})
        setter: Cmd = ("SET", epoch, doc, "NX") if only_if_missing else ("SET", epoch, doc)
        res, trips = await self._run([setter, ("GET", epoch)])
        winner = decode_doc(res[1]) or {}
        self._epoch_token = winner.get("token")
        lost_at = winner.get("lost_at")
        self.state_lost_at = float(lost_at) if isinstance(lost_at, (int, float)) else now
        # One loss, one event: the restart that emptied the epoch also changed the run_id, so
        # the next INFO adopts the new run_id instead of declaring the same loss again.
        self._run_id = None
        if res[0] and self._epoch_token == token:  # we re-created it: audit once, store-wide
            event = audit_event(
                {
                    "ts": now,
                    "event": "state_lost",
                    "reason": reason,
                    "actor": "store",
                    "request_id": f"epoch:{token}",
                },
                "",
                now,
            )
            _, more = await self._run(self._audit_cmds([event], now))
            trips += more
        return trips

    def _audit_cmds(self, events: Sequence[Mapping[str, Any]], now: float) -> list[Cmd]:
        return C.audit_commands(self._prefix, events, now, self._audit_max)


    async def ping(self) -> None:
        async def probe() -> None:
            await self._ensure_ready()
            cmds: list[Cmd] = [("GET", K.epoch_key(self._prefix))]
            if self._mode != "cluster":
                cmds.append(("INFO", "server"))
            else:
                await self._client().ping()
            res, _ = await self._run(cmds)
            await self._observe_epoch(res[0], res[1] if len(res) > 1 else None)

        await self._guarded("ping", probe)

    async def close(self) -> None:
        if self._redis is not None:
            client, self._redis = self._redis, None
            await client.aclose()
        if self._on_close is not None:
            await self._on_close()
        self._ready = False


async def _send_packed(pool: Any, cmds: Sequence[Cmd]) -> list[Any]:
    """One pipelined round trip on a pooled connection, as redis-py's pipeline sends it with
    `raise_on_error=False` (an error reply is kept in its place), without its per-argument
    work: hiredis packs each command in C, and the replies are read in order. The caller's
    deadline bounds it; a connection left with a reply unread (cancelled, failed) is closed,
    never handed back to the pool half-read. Single and Sentinel modes: Cluster routes each
    command by its keys, and keeps redis-py's pipeline."""
    conn = await pool.get_connection()
    try:
        await conn.send_packed_command([hiredis.pack_command(C.wire(cmd)) for cmd in cmds])
        out: list[Any] = []
        for _ in cmds:
            try:
                out.append(await conn.read_response())
            except ResponseError as e:
                out.append(e)
        return out
    except BaseException:
        await conn.disconnect(nowait=True)
        raise
    finally:
        await pool.release(conn)
