"""The Redis store (SPEC §9): one pipelined round trip per `read` and per `commit`.

* `read` sends one pipeline (no MULTI): the session slot's MGET, the router slot's read script
  and the workspace's window script (EVALSHA_RO on Redis >= 7 outside Cluster, so a write
  pause does not block reads), and the epoch GET. A share window is one hash per slot, summed
  inside the script (`scripts.py`).
* Upgrade from the per-hour share keys (`share:<hour>:s|t`, one key per bucket): before its
  first read of a router's or the workspace's window, each process folds the window's legacy
  keys into the hash (LEGACY_FOLD, in the same pipeline, ahead of the read): their counts are
  added and the keys deleted in one atomic call, so no count is lost or taken twice whichever
  sidecar folds first, and a share cap never starts from an emptied window. A wider window
  read later folds its older hours too. The fold is a write: during a write pause it waits,
  once per process and slot. Sidecars of the previous layout still running keep writing
  per-hour keys that an upgraded one folds only at its first read: upgrade every sidecar of
  one Redis together.
* `commit` sends one pipeline: one SLOT_COMMIT script per slot write, the audit ZADDs and the
  trace script. A session slot whose stored version moved on answers "conflict" with the fresh
  document and applies nothing; only that slot is re-sent, its `mutate` re-run on the fresh
  document, at most MAX_CAS_ATTEMPTS times (then `CommitConflict`: contention, which the
  request path's gate sends again, `proxy.runtime.StoreGate`). Commits of one session from
  this process queue on a per-session gate, so they do not conflict with each other; the gate
  remembers the document the last commit returned, used only as the optimistic base of the
  next compare-and-set.
* Every call has one hard deadline (`timeout_ms`); any Redis error or timeout becomes
  `StoreUnavailable`. The client never retries (redis-py's default retry re-sends writes whose
  outcome is unknown, RELIABILITY finding 1); a commit retried by its caller applies once thanks
  to its per-slot markers. A timed-out connection is closed by redis-py, never reused.
* The link to the server (deadline, round trips, scripts, state-loss detection through the
  epoch key) is `redis_link.RedisLink`, which this store extends.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from orca_cli.clock import Clock
from orca_cli.errors import CommitConflict
from orca_cli.routing.routes.budget import Spend
from orca_cli.state import keys as K
from orca_cli.state import redis_cmds as C
from orca_cli.state.base import (
    MAX_CAS_ATTEMPTS,
    CommitBatch,
    CommitResult,
    KeyEntry,
    ReadRequest,
    SlotRef,
    SlotResult,
    SlotWrite,
    Snapshot,
    TierDoc,
)
from orca_cli.state.codec import (
    AUDIT_MAX,
    audit_event,
    check_ops,
    decode_doc,
    doc_version,
    dumps,
    encode_doc,
)
from orca_cli.state.redis_cmds import Cmd
from orca_cli.state.redis_link import RedisLink
from orca_cli.state.route_versions import RedisRouteVersions
from orca_cli.state.scripts import TRANSITION_RESERVE

__all__ = ["RedisStore"]

OPERATOR_CALL_TIMEOUT_S = 2.0  # one call of an operator's scan (`_scan_keys`)

T = TypeVar("T")

_SCAN_CHUNK = 500


class _LazyClient:
    """The store's Redis client, built on first use (the store connects lazily), each command
    under the store's deadline (the client has no read timeout of its own: `factory`)."""

    def __init__(self, store: RedisLink) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        command = getattr(self._store._client(), name)

        async def bounded(*args: Any, **kwargs: Any) -> Any:
            return await self._store._guarded(name, lambda: command(*args, **kwargs))

        return bounded


@dataclass(slots=True)
class _Gate:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0
    hint: tuple[int, str] | None = None  # (version, stored JSON) as the store last answered


@dataclass(slots=True)
class _Plan:
    index: int
    write: SlotWrite
    expected: int
    mode: str = "-"
    doc: str = ""


class RedisStore(RedisLink):
    """The `redis` backend, in `single`, `sentinel` or `cluster` mode."""

    backend = "redis"

    def __init__(
        self,
        connect: Callable[[], Any],
        *,
        mode: str,
        clock: Clock,
        key_prefix: str,
        timeout_ms: int,
        trace_max: int = 20000,
        trace_ttl_s: float = 86400,
        audit_max: int = AUDIT_MAX,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(
            connect, mode=mode, clock=clock, key_prefix=key_prefix, timeout_ms=timeout_ms,
            audit_max=audit_max, on_close=on_close,
        )
        self._trace_max = max(1, trace_max)
        self._trace_ttl_s = trace_ttl_s
        self._gates: dict[str, _Gate] = {}
        # The oldest hour whose legacy share keys this process folded, per slot tag.
        self._folded: dict[str, int] = {}
        self.reads = 0
        self.commits = 0
        self.conflicts = 0  # session-slot compare-and-set conflicts re-sent
        self.conflict_storms = 0  # commits given up after MAX_CAS_ATTEMPTS

    # --- request path ----------------------------------------------------------------------

    async def read(self, req: ReadRequest) -> Snapshot:
        self.reads += 1
        return await self._guarded("read", lambda: self._read(req))

    async def _read(self, req: ReadRequest) -> Snapshot:
        await self._ensure_ready()
        folds = self._folds(req) if req.share_hours else []
        cmds, layout = C.read_commands(self._prefix, req, read_only=self._read_only,
                                       head=[cmd for _, cmd in folds])
        epoch_at = len(cmds)
        cmds.append(("GET", K.epoch_key(self._prefix)))
        recheck = self.rechecking and self._mode != "cluster"
        if recheck:
            cmds.append(("INFO", "server"))
        res, _ = await self._run(cmds)
        for tag, _ in folds:
            self._folded[tag] = req.share_hours[0]
        await self._observe_epoch(res[epoch_at], res[epoch_at + 1] if recheck else None)
        return C.snapshot_from(res, layout, req, self.state_lost_at)

    def _folds(self, req: ReadRequest) -> list[tuple[str, Cmd]]:
        """The LEGACY_FOLD calls this read needs first: slots whose window this process has
        not folded back to its first hour yet (see the module docstring)."""
        slots = [SlotRef.of_router(req.router)] if req.router else []
        if req.workspace:
            slots.append(K.WORKSPACE)
        out = []
        first = req.share_hours[0]
        for slot in slots:
            tag = K.slot_tag(self._prefix, slot)
            done = self._folded.get(tag)
            if done is None or first < done:
                hours = req.share_hours if done is None else range(first, done)
                out.append((tag, C.fold_command(self._prefix, slot, hours)))
        return out

    async def read_counters(self, names: tuple[str, ...]) -> dict[str, Spend]:
        """Budget counters alone (a route's budget nodes, read before its target is known):
        one pipelined round trip."""
        async def go() -> dict[str, Spend]:
            res, _ = await self._run(C.budget_commands(self._prefix, names))
            return C.spends_from(names, res)
        return await self._guarded("budget read", go)

    async def reserve_transition(self, router: str, session: str, request_id: str, *,
                                 escalate: bool, max_count: int, ttl_s: float,
                                 timeout_s: float | None = None) -> bool:
        """Reserve a tier transition of the session across sidecars (SPEC §6.4), for `ttl_s`
        at most: False when the cap leaves no room for it (`scripts.TRANSITION_RESERVE`)."""
        tag = K.slot_tag(self._prefix, SlotRef.of_session(router, session))
        now_ms, ttl_ms = int(self._clock.now() * 1000), max(1, int(ttl_s * 1000))
        cmd = ("EVALSHA", TRANSITION_RESERVE.sha, 2, tag + K.tier_key(),
               tag + K.RESERVATIONS_KEY, request_id, "e" if escalate else "o", str(now_ms),
               str(now_ms + ttl_ms), str(max_count), str(ttl_ms))

        async def go() -> bool:
            res, _ = await self._run([cmd])
            return bool(res[0])
        return await self._guarded("transition reserve", go, timeout_s)

    async def release_transition(self, router: str, session: str, request_id: str) -> None:
        """Give a reservation back once its commit counted the transition (or it failed)."""
        tag = K.slot_tag(self._prefix, SlotRef.of_session(router, session))

        async def go() -> None:
            await self._run([("ZREM", tag + K.RESERVATIONS_KEY, f"o:{request_id}",
                              f"e:{request_id}")])
        await self._guarded("transition release", go)

    def route_versions(self) -> RedisRouteVersions:
        """The deployed route versions on this store (SPEC §17)."""
        return RedisRouteVersions(_LazyClient(self), self._prefix)

    async def commit(self, batch: CommitBatch) -> CommitResult:
        self.commits += 1
        for w in batch.writes:
            if w.mutate is not None and w.slot.kind != "session":
                raise ValueError(
                    f"a tier mutate belongs to a session slot, not a {w.slot.kind} slot"
                )
            check_ops(w.ops)
        gated = sorted({K.slot_tag(self._prefix, w.slot) for w in batch.writes if w.mutate})
        # The timeout bounds each call to Redis, not the wait behind this process's own commits
        # of the same session: a burst of one session's requests queues here (each holder is
        # bounded by its own timeout) instead of failing commits Redis never saw and marking
        # the store down for every session.
        async with self._gates_held(gated) as gates:
            return await self._guarded("commit", lambda: self._commit(batch, gates))

    async def _commit(self, batch: CommitBatch, gates: Mapping[str, _Gate]) -> CommitResult:
        trips = await self._ensure_ready()
        now = self._clock.now()
        plans = [self._first_plan(i, w, gates) for i, w in enumerate(batch.writes)]
        extra = self._audit_cmds([audit_event(e, batch.request_id, now) for e in batch.audit], now)
        if batch.trace is not None:
            extra.append(self._trace_cmd(batch.request_id, batch.trace, now))
        results: list[SlotResult | None] = [None] * len(plans)
        pending = plans
        cmds = [self._slot_cmd(batch.request_id, p) for p in pending] + extra
        for attempt in range(1, MAX_CAS_ATTEMPTS + 1):
            res, more = await self._run(cmds)
            trips += more
            retry: list[_Plan] = []
            # `res` also holds the audit and trace replies after the slots.
            for plan, (status, text) in zip(pending, res, strict=False):
                gate = gates.get(K.slot_tag(self._prefix, plan.write.slot))
                if gate is not None:
                    gate.hint = (doc_version(text), text) if text else None
                if status == "conflict":
                    retry.append(self._replan(plan, text))
                else:
                    tier = text if plan.write.slot.kind == "session" else None
                    results[plan.index] = SlotResult(plan.write.slot, status, tier, attempt)
            if not retry:
                return CommitResult(
                    tuple(r for r in results if r is not None), round_trips=trips
                )
            self.conflicts += len(retry)
            if attempt >= 2:  # two writers racing from different sidecars: de-synchronise
                await asyncio.sleep(random.uniform(0, 0.0005 * 2 ** (attempt - 2)))
            pending = retry
            cmds = [self._slot_cmd(batch.request_id, p) for p in pending]
        self.conflict_storms += 1
        raise CommitConflict(
            f"state store commit {batch.request_id!r} met a conflict storm: the session changed "
            f"under it {MAX_CAS_ATTEMPTS} times; nothing of that slot was applied"
        )

    @asynccontextmanager
    async def _gates_held(self, tags: list[str]) -> AsyncIterator[dict[str, _Gate]]:
        joined: dict[str, _Gate] = {}
        locked: list[_Gate] = []
        try:
            for tag in tags:  # sorted: two batches never wait on each other crosswise
                gate = self._gates.get(tag)
                if gate is None:
                    gate = self._gates[tag] = _Gate()
                gate.users += 1
                joined[tag] = gate
                await gate.lock.acquire()  # a timeout here leaves the lock to its holder
                locked.append(gate)
            yield joined
        finally:
            for gate in locked:
                gate.lock.release()
            for tag, gate in joined.items():
                gate.users -= 1
                if gate.users == 0:
                    self._gates.pop(tag, None)

    def _first_plan(self, index: int, w: SlotWrite, gates: Mapping[str, _Gate]) -> _Plan:
        if w.mutate is None:
            mode = "-" if w.slot.kind != "session" else ("t" if w.tier_ttl_s > 0 else "r")
            return _Plan(index, w, 0, mode)
        expected, base = w.expected_version, w.base_doc
        hint = gates[K.slot_tag(self._prefix, w.slot)].hint
        if hint is not None and hint[0] > expected:
            expected, base = hint[0], decode_doc(hint[1])
        elif expected > 0 and base is None:
            # No base document to apply onto: let this attempt only fetch the fresh one.
            return _Plan(index, w, -1, "w", "")
        elif base is not None:
            base = decode_doc(dumps(base))  # mutate gets its own copy
        return self._mutated(_Plan(index, w, expected), base)

    def _replan(self, plan: _Plan, fresh_text: str | None) -> _Plan:
        return self._mutated(
            _Plan(plan.index, plan.write, doc_version(fresh_text)), decode_doc(fresh_text)
        )

    def _mutated(self, plan: _Plan, base: TierDoc | None) -> _Plan:
        assert plan.write.mutate is not None
        new = plan.write.mutate(base)
        if new is None:
            plan.mode, plan.doc = "d", ""
        else:
            plan.mode, plan.doc = "w", encode_doc(new, plan.expected + 1)
        return plan

    def _slot_cmd(self, request_id: str, plan: _Plan) -> Cmd:
        return C.slot_command(
            self._prefix, request_id, plan.write, plan.mode, plan.expected, plan.doc
        )

    def _trace_cmd(self, request_id: str, trace: Mapping[str, Any], now: float) -> Cmd:
        return C.trace_command(
            self._prefix, request_id, trace, now, self._trace_ttl_s, self._trace_max
        )

    # --- operator side ---------------------------------------------------------------------
    # An operator's scan walks the whole keyspace, page by page: no request waits on it, so
    # each call may take longer than the request path's `timeout_ms` (a large or busy Redis).

    @property
    def _operator_timeout_s(self) -> float:
        return max(self._timeout_s, OPERATOR_CALL_TIMEOUT_S)

    async def _scan_keys(self, pattern: str) -> list[str]:
        if self._mode == "cluster":

            async def every_primary() -> list[str]:
                return [k async for k in self._client().scan_iter(match=pattern, count=1000)]

            return await self._guarded("scan", every_primary, self._timeout_s * 40)
        found: list[str] = []
        cursor = 0
        while True:
            cursor, batch = await self._guarded("scan", partial(self._scan_page, cursor, pattern),
                                                self._operator_timeout_s)
            found += batch
            if int(cursor) == 0:
                return found

    async def _scan_page(self, cursor: int, pattern: str) -> tuple[int, list[str]]:
        cursor, keys = await self._client().scan(cursor, match=pattern, count=1000)
        return int(cursor), list(keys)

    async def _inspect(self, keys: Sequence[str]) -> list[tuple[Any, float | None] | None]:
        """(decoded value, TTL seconds) per key, None for a key that is gone."""
        out: list[tuple[Any, float | None] | None] = []
        for i in range(0, len(keys), _SCAN_CHUNK):
            chunk = keys[i : i + _SCAN_CHUNK]
            probe = [cmd for k in chunk for cmd in (("TYPE", k), ("PTTL", k))]
            meta = await self._guarded("scan", partial(self._pipeline, probe),
                                       self._operator_timeout_s)
            kinds, ttls = meta[0::2], meta[1::2]
            fetch = [C.fetch_cmd(k, t) for k, t in zip(chunk, kinds, strict=True)]
            wanted = [c for c in fetch if c]
            vals = await self._guarded("scan", partial(self._pipeline, wanted),
                                       self._operator_timeout_s)
            it = iter(vals)
            for kind, ttl, cmd in zip(kinds, ttls, fetch, strict=True):
                if cmd is None or isinstance(ttl, Exception) or ttl == -2:
                    out.append(None)
                    continue
                value = next(it)
                out.append((C.decode(kind, value), None if ttl < 0 else ttl / 1000))
        return out

    async def scan(
        self,
        slot_kind: str,
        *,
        router: str | None = None,
        session: str | None = None,
        key_prefix: str = "",
    ) -> list[KeyEntry]:
        pattern = K.scan_pattern(
            self._prefix, slot_kind, router=router, session=session, key_prefix=key_prefix
        )
        wanted: list[tuple[str, SlotRef, str]] = []
        for key in sorted(set(await self._scan_keys(pattern))):
            parsed = K.parse_key(self._prefix, key)
            if parsed and K.key_matches(
                parsed[0],
                parsed[1],
                slot_kind,
                router=router,
                session=session,
                key_prefix=key_prefix,
            ):
                wanted.append((key, parsed[0], parsed[1]))
        views = await self._inspect([k for k, _, _ in wanted])
        return [
            KeyEntry(slot, suffix, v[0], v[1])
            for (_, slot, suffix), v in zip(wanted, views, strict=True)
            if v is not None
        ]

    async def get(self, slot: SlotRef, key: str) -> KeyEntry | None:
        view = (await self._inspect([K.slot_tag(self._prefix, slot) + key]))[0]
        return None if view is None else KeyEntry(slot, key, view[0], view[1])

    async def get_trace(self, request_id: str) -> Mapping[str, Any] | None:
        tag = K.slot_tag(self._prefix, K.TRACES)

        async def lookup() -> Mapping[str, Any] | None:
            res, _ = await self._run(
                [("GET", tag + K.trace_key(request_id)), ("GET", tag + K.client_id_key(request_id))]
            )
            if res[0] is None and res[1] is not None:
                res, _ = await self._run([("GET", tag + K.trace_key(res[1]))])
            return decode_doc(res[0])

        return await self._guarded("trace lookup", lookup)

    async def list_audit(
        self, router: str | None = None, since: float | None = None
    ) -> list[Mapping[str, Any]]:
        streams = [K.slot_tag(self._prefix, K.WORKSPACE) + K.AUDIT_KEY]
        if router:
            streams.append(K.slot_tag(self._prefix, SlotRef.of_router(router)) + K.AUDIT_KEY)
        else:
            pattern = K.scan_pattern(self._prefix, "router", key_prefix=K.AUDIT_KEY)
            for key in await self._scan_keys(pattern):
                parsed = K.parse_key(self._prefix, key)
                if parsed and parsed[0].kind == "router" and parsed[1] == K.AUDIT_KEY:
                    streams.append(key)
        low = "-inf" if since is None else repr(float(since))
        res, _ = await self._guarded(
            "audit listing",
            lambda: self._run(
                [("ZRANGEBYSCORE", key, low, "+inf", "WITHSCORES") for key in streams]
            ),
        )
        events = sorted((score, member) for rows in res for member, score in C.pairs(rows))
        return [decode_doc(m) or {} for _, m in events]
