"""What one running sidecar holds: config, store gate, transports, health, metrics (SPEC §9, §7).

`StoreGate` wraps the store for the request path. The store is called at most once before the
upstream call (`read`) and once after (`commit`). When a call fails the gate marks the store
unhealthy: requests then skip the store entirely (no 250 ms timeout per request), are served
base from the in-process `DegradedPins` table, and a background probe pings the store once a
second and recovers by itself, discarding the degraded table (SPEC §9). One log line is
written per transition, not per request.

A commit that fails, or that arrives while the store is unhealthy, is held (bounded, oldest
dropped first) and re-sent by the probe before the gate reports healthy again: a commit whose
outcome was unknown applies exactly once thanks to its per-slot markers (SPEC §9), a billed
escalation is not lost to a store blip, and traces written meanwhile reach the store late
rather than never.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from orca_cli.clock import Clock, SystemClock
from orca_cli.config.schema import Config
from orca_cli.errors import CommitConflict, StoreStateLost, StoreUnavailable
from orca_cli.proxy.aiohttp_transport import AiohttpTransport
from orca_cli.proxy.health import Health, RetryBudget
from orca_cli.proxy.in_flight import InFlightTransitions
from orca_cli.proxy.measure import Measurements
from orca_cli.proxy.metrics import Metrics
from orca_cli.proxy.sim import SimTransport
from orca_cli.proxy.transport import Transport
from orca_cli.proxy.xlate import Translations
from orca_cli.routing.features import Scorer
from orca_cli.routing.routes.budget import Spend
from orca_cli.state.active_routes import ActiveRoutes
from orca_cli.state.base import CommitBatch, CommitResult, ReadRequest, Snapshot, Store
from orca_cli.state.route_versions import RouteVersions
from orca_cli.turn.model import Turn
from orca_cli.turn.routes import LiveRoutes

__all__ = ["DegradedPins", "FollowUp", "Runtime", "StoreGate", "new_request_id"]

log = logging.getLogger("orca")

PROBE_INTERVAL_S = 1.0
HOUSEKEEPING_INTERVAL_S = 15.0  # how often an idle sidecar asks its store to sweep
ROUTES_CHECK_S = 0.5  # how often the active route version number is read (SPEC §17)
DEGRADED_PINS_MAX = 10_000
PENDING_COMMITS_MAX = 1000
# A conflict storm (`CommitConflict`) is sent again up to this many rounds, pausing up to
# CONFLICT_PAUSE_S, doubled each round, between them: 4 rounds of 8 compare-and-sets each.
CONFLICT_ROUNDS = 4
CONFLICT_PAUSE_S = 0.002
# How long a transition's reservation across sidecars may hold its request up (one round trip
# on loopback takes well under a millisecond)
RESERVE_TIMEOUT_S = 0.05
# At shutdown, how long the gate may spend re-sending what it still holds (a store that does
# not answer fails its ping within its own timeout, well before this).
SHUTDOWN_FLUSH_S = 5.0

# What to commit once a commit's result is known (e.g. the audit of the tier change it made).
OUTAGE_EVENTS_MAX = 64  # `degraded` audit events kept while the store stays down
FollowUp = Callable[[CommitResult], "CommitBatch | None"]


_ID_BYTES = 12
_ID_BATCH = 341  # ids drawn from one read of the OS's random source (4 KB)


class _RandomIds:
    """12-byte ids from the OS's CSPRNG, read 341 at a time rather than one system call per
    request. A forked child starts with an empty batch, so no two processes share ids."""

    __slots__ = ("_at", "_pool")

    def __init__(self) -> None:
        self._pool = b""
        self._at = 0

    def next_hex(self) -> str:
        at = self._at
        if at >= len(self._pool):
            self._pool, at = secrets.token_bytes(_ID_BYTES * _ID_BATCH), 0
        self._at = at + _ID_BYTES
        return self._pool[at:at + _ID_BYTES].hex()

    def clear(self) -> None:
        self._pool, self._at = b"", 0


_random_ids = _RandomIds()
os.register_at_fork(after_in_child=_random_ids.clear)


def new_request_id() -> str:
    """orca's request id: `req_` + 24 hex characters (unguessable, log-safe)."""
    return "req_" + _random_ids.next_hex()


class DegradedPins:
    """Pins kept in process only while the store is down; bounded LRU; dropped on recovery."""

    def __init__(self, clock: Clock, max_entries: int = DEGRADED_PINS_MAX) -> None:
        self._clock = clock
        self._max = max_entries
        self._pins: OrderedDict[tuple[str, str], tuple[str, dict[str, Any], float]] = OrderedDict()

    def get(self, router: str, session: str) -> Snapshot:
        found = self._pins.get((router, session))
        if found is None or found[2] < self._clock.now():
            return Snapshot()
        self._pins.move_to_end((router, session))
        model, chan, _ = found
        # A degraded router request is served base; a concrete model's tier is its own
        # (`strong` for a strong-pool model), so its channel pin is read under either.
        return Snapshot(pins={"base": model}, channel_pins={"base": chan, "strong": chan})

    def put(self, router: str, session: str, model: str, chan: dict[str, Any],
            ttl_s: float) -> None:
        self._pins[(router, session)] = (model, chan, self._clock.now() + ttl_s)
        self._pins.move_to_end((router, session))
        while len(self._pins) > self._max:
            self._pins.popitem(last=False)

    def clear(self) -> None:
        self._pins.clear()

    def __len__(self) -> int:
        return len(self._pins)


class StoreGate:
    """The store as the request path sees it: healthy, or degraded and re-probed."""

    def __init__(self, store: Store, clock: Clock, *,
                 pending_max: int = PENDING_COMMITS_MAX) -> None:
        self.store = store
        self._pending_max = max(1, pending_max)
        self.degraded_pins = DegradedPins(clock)
        self.healthy = True
        self.state_lost_at: float | None = None
        self._clock = clock
        self._probe: asyncio.Task[None] | None = None
        self.since: float | None = None  # when the current degraded period began
        self.pending: deque[CommitBatch] = deque()  # commits to re-send once the store answers
        self._follow_ups: dict[str, FollowUp] = {}  # by request id, for held commits
        self.outages: deque[CommitBatch] = deque(maxlen=OUTAGE_EVENTS_MAX)  # audit to write
        self.replayed = 0  # held commits re-sent after recovery
        self.conflict_storms = 0  # commits a conflict storm made send again
        self.dropped = 0  # held commits given up (the hold was full, or the store refused one)

    async def read(self, req: ReadRequest) -> Snapshot | None:
        """The snapshot, or None when the store is degraded (the caller serves base)."""
        if not self.healthy:
            return None
        try:
            snap = await self.store.read(req)
        except StoreStateLost:
            self._state_lost(self._clock.now())
            return await self._read_again(req)
        except (TimeoutError, StoreUnavailable, OSError) as exc:
            self._mark_down(exc)
            return None
        if snap.state_lost_at is not None and self.state_lost_at != snap.state_lost_at:
            self._state_lost(snap.state_lost_at)  # the store's record, shown by /healthz
        return snap

    async def read_turn(self, turn: Turn) -> None:
        """Read the snapshot `turn.read` names into the turn, as the decision sees it; on a
        store fault, the turn is degraded and gets the in-process pins (SPEC §9). The one
        place the request path (`proxy.handler`) and the replay read the store."""
        if turn.read is None:
            return
        got = await self.read(turn.read)
        if got is not None:
            turn.snapshot = got
            return
        turn.degraded = True
        scope = turn.pin_router
        if scope is not None and turn.session is not None:
            turn.snapshot = self.degraded_pins.get(scope, turn.session)

    async def read_counters(self, names: tuple[str, ...]) -> dict[str, Spend]:
        """Budget counters (a route's budget nodes); none while the store is degraded or when
        it fails (a route's budget node then takes its `within` exit)."""
        read = getattr(self.store, "read_counters", None)
        if not self.healthy or read is None:
            return {}
        try:
            got: dict[str, Spend] = await read(names)
        except (TimeoutError, StoreUnavailable, OSError) as exc:
            self._mark_down(exc)
            return {}
        return got

    async def reserve_transition(self, router: str, session: str, request_id: str, *,
                                 escalate: bool, max_count: int, ttl_s: float) -> bool:
        """Reserve a session's tier transition in the store, across the sidecars sharing it
        (SPEC §6.4): False when the cap leaves no room. A store without reservations (memory:
        one process, whose in-flight table already counts) always has room. A store that does
        not take the reservation within `RESERVE_TIMEOUT_S` (a write pause, a fault) does not
        hold the request up: the transition goes ahead as this sidecar alone decided it, and
        the commit's count still binds; the commit, not this, tells the gate of an outage."""
        reserve = getattr(self.store, "reserve_transition", None)
        if reserve is None or not self.healthy:
            return True
        try:
            ok: bool = await reserve(router, session, request_id, escalate=escalate,
                                     max_count=max_count, ttl_s=ttl_s,
                                     timeout_s=RESERVE_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - a store fault never fails the request
            log.debug("a transition was not reserved in the store: %s", type(exc).__name__)
            return True
        return ok

    async def release_transition(self, router: str, session: str, request_id: str) -> None:
        """Give a reservation back; a store that cannot take it lets it lapse on its own."""
        release = getattr(self.store, "release_transition", None)
        if release is None or not self.healthy:
            return
        try:
            await release(router, session, request_id)
        except Exception as exc:  # noqa: BLE001 - it lapses with its TTL
            log.debug("a transition reservation was left to lapse: %s", type(exc).__name__)

    def _state_lost(self, at: float) -> None:
        """Each loss of the store's state is logged once, the second and later ones too."""
        if self.state_lost_at != at:
            log.warning("state store lost its state (at %.0f); share caps run inverted "
                        "warm-up", at)
        self.state_lost_at = at

    async def _read_again(self, req: ReadRequest) -> Snapshot | None:
        try:
            return await self.store.read(req)
        except Exception as exc:  # noqa: BLE001 - any store fault degrades, never fails
            self._mark_down(exc)
            return None

    async def commit(self, batch: CommitBatch, *,
                     follow_up: FollowUp | None = None) -> CommitResult | None:
        """The store's result, or None when the commit was held for the probe to re-send.

        `follow_up` runs on the result whenever it is known, now or after a re-send, and the
        batch it returns (if any) is committed in turn: what depends on a commit's outcome is
        not lost when that commit is held.
        """
        if not self.healthy:
            self._hold(batch, follow_up)
            return None
        try:
            try:
                result = await self.store.commit(batch)
            except CommitConflict:
                result = await self._after_conflict(batch)
        except Exception as exc:  # noqa: BLE001 - a store fault never fails the request
            self._hold(batch, follow_up)  # its outcome is unknown: re-sent with the same id
            self._mark_down(exc)
            return None
        extra = follow_up(result) if follow_up is not None else None
        if extra is not None:
            await self.commit(extra)
        return result

    async def _after_conflict(self, batch: CommitBatch) -> CommitResult:
        """`batch` sent again after a conflict storm (`CommitConflict`: sidecars racing on one
        busy session), a few times with a growing random pause. Contention is no outage: only
        when the storm outlasts every round does the batch go the way of a store fault (held,
        the store probed, re-sent; its markers apply it once)."""
        self.conflict_storms += 1
        for attempt in range(1, CONFLICT_ROUNDS):
            await asyncio.sleep(random.uniform(0, CONFLICT_PAUSE_S * 2 ** (attempt - 1)))
            try:
                return await self.store.commit(batch)
            except CommitConflict as exc:
                self.conflict_storms += 1
                if attempt == CONFLICT_ROUNDS - 1:
                    log.warning("%s, in %d rounds; held as in an outage", exc, CONFLICT_ROUNDS)
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _hold(self, batch: CommitBatch, follow_up: FollowUp | None = None) -> None:
        if len(self.pending) >= self._pending_max:
            gone = self.pending.popleft()
            self._follow_ups.pop(gone.request_id, None)
            self.dropped += 1
        self.pending.append(batch)
        if follow_up is not None:
            self._follow_ups[batch.request_id] = follow_up

    async def check(self) -> bool:
        """Ping the store now (at startup, so `/healthz` is true before the first request)."""
        try:
            await self.store.ping()
        except Exception as exc:  # noqa: BLE001 - a down store degrades, never fails startup
            self._mark_down(exc)
            return False
        return True

    def _mark_down(self, exc: BaseException) -> None:
        if self.healthy:
            self.healthy = False
            self.since = self._clock.now()
            log.warning("state store unavailable (%s); serving base tier from in-process pins "
                        "until it answers again", type(exc).__name__)
            # One `degraded` audit event per outage (SPEC §6.6), written first once the store
            # answers again; kept apart from the bounded hold so no burst can push it out.
            self.outages.append(CommitBatch(f"degraded-{self.since:.6f}", audit=({
                "ts": self.since, "router": "", "session": "", "event": "degraded",
                "reason": type(exc).__name__, "actor": "engine"},)))
        if self._probe is None or self._probe.done():
            with contextlib.suppress(RuntimeError):
                self._probe = asyncio.get_running_loop().create_task(self._probe_loop())

    async def _probe_loop(self) -> None:
        while not self.healthy:
            await asyncio.sleep(PROBE_INTERVAL_S)
            try:
                await self.store.ping()
                # What was held that writes state goes first, in order. Requests keep arriving
                # (degraded) while it is re-sent; chasing their commits to an empty hold would
                # keep the gate down for as long as the load lasts. Theirs, and every other
                # trace-only commit (a degraded turn writes no state), follow the recovery.
                await self._replay(self._state_first())
            except Exception as exc:  # noqa: BLE001 - still down; probe again
                log.debug("the state store is still down: %s", type(exc).__name__)
                continue
            self.healthy = True  # no await since the replay: nothing held before it is left
            self.since = None
            self.degraded_pins.clear()
            log.warning("state store answers again; degraded pins discarded")
            if self.pending:
                self._probe = asyncio.get_running_loop().create_task(self._drain())

    def _state_first(self) -> int:
        """Order the hold with the commits that write state first (in their order) and the
        trace-only ones after them (a trace's place in time is its own timestamp): how many
        must be re-sent before the gate may report healthy."""
        state = [b for b in self.pending if b.writes or b.audit]
        if len(state) < len(self.pending):
            traces = [b for b in self.pending if not (b.writes or b.audit)]
            self.pending = deque(state + traces)
        return len(state)

    async def _drain(self) -> None:
        """Re-send what was held during the replay, now that the store answers."""
        try:
            await self._replay(len(self.pending))
        except Exception as exc:  # noqa: BLE001 - down again: held, the probe takes over
            self._mark_down(exc)

    async def _replay(self, held: int) -> None:
        """Re-send the first `held` held commits in order (and what they lead to); a store
        fault stops here and keeps the rest."""
        while self.outages:
            try:
                await self.store.commit(self.outages[0])
            except StoreUnavailable:
                raise
            except Exception as exc:  # noqa: BLE001 - an event the store refuses is dropped
                log.warning("a degraded audit event was refused by the state store (%s)",
                            type(exc).__name__)
            self.outages.popleft()
        while self.pending and held > 0:
            batch = self.pending.popleft()
            held -= 1
            try:
                result = await self.store.commit(batch)
            except (StoreUnavailable, asyncio.CancelledError):
                # Outcome unknown again (a fault, or shutdown mid-send): it stays first, and
                # its markers apply it once whenever it is re-sent.
                self.pending.appendleft(batch)
                raise
            except Exception as exc:  # noqa: BLE001 - a batch the store refuses is dropped
                log.warning("a held commit was refused by the state store (%s); dropped",
                            type(exc).__name__)
                self._follow_ups.pop(batch.request_id, None)
                self.dropped += 1
                continue
            self.replayed += 1
            follow_up = self._follow_ups.pop(batch.request_id, None)
            extra = follow_up(result) if follow_up is not None else None
            if extra is not None:
                self.pending.appendleft(extra)  # sent next, before the gate reports healthy
                held += 1

    async def close(self, flush_s: float = SHUTDOWN_FLUSH_S) -> None:
        """Stop probing, re-send what is still held if the store answers within `flush_s`
        (held commits carry spend, escalations and the outage's audit event: stopping the
        sidecar right after the store came back must not drop them), then close the store.
        What stays unwritten is said in one log line."""
        if self._probe is not None:
            self._probe.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._probe
        if self.pending or self.outages:
            with contextlib.suppress(Exception):  # still down, or slower than `flush_s`
                async with asyncio.timeout(flush_s):
                    await self.store.ping()
                    await self._replay(len(self.pending))
            if self.pending or self.outages:
                state = sum(1 for b in self.pending if b.writes or b.audit)
                log.warning("shutdown: %d held commit(s) not written, %d of them with state "
                            "(the rest traces), and %d outage audit event(s): the state store "
                            "did not take them", len(self.pending), state, len(self.outages))
        await self.store.close()


@dataclass
class Runtime:
    """Everything a request handler needs; built once at startup."""

    cfg: Config
    gate: StoreGate
    transports: Mapping[str, Transport]
    clock: Clock = field(default_factory=SystemClock)
    health: Health | None = None
    budget: RetryBudget = field(default_factory=RetryBudget)
    metrics: Metrics = field(default_factory=Metrics)
    scorer: Scorer = field(default_factory=Scorer)
    # One generator for the whole process (weighted channel order, key rotation): seeding
    # a fresh one per request costs more than the draws it makes.
    rng: random.Random = field(default_factory=random.Random)
    admin_token: str = ""
    started_at: float = field(default_factory=time.time)
    # Who sees each finished request's trace besides the store (the request log, telemetry);
    # called after the response was sent. A sink's fault is logged, never the request's.
    trace_sinks: list[Callable[[Mapping[str, Any]], None]] = field(default_factory=list)
    # Run last when the sidecar stops (the request log's queued lines, the last spans).
    on_close: list[Callable[[], None]] = field(default_factory=list)
    # SPEC §20: measured first-byte latency and throughput per (channel, model).
    measured: Measurements = field(init=False, repr=False)
    # SPEC §6.4: each session's transitions decided here and not yet committed.
    in_flight: InFlightTransitions = field(default_factory=InFlightTransitions)
    _housekeeping: asyncio.Task[None] | None = field(default=None, init=False, repr=False)
    # SPEC §17: the routes, inbound keys and budgets applied now; None when none is set (the
    # request path's one check). A deployed version replaces the config's routes.
    live_routes: LiveRoutes | None = field(default=None, init=False)
    routes: ActiveRoutes | None = field(default=None, init=False, repr=False)
    _routes_watch: asyncio.Task[None] | None = field(default=None, init=False, repr=False)
    _routes_error: str = field(default="", init=False, repr=False)
    # SPEC §13.2: each target's translation options and the cache of translated messages.
    translations: Translations = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.scorer = Scorer(self.cfg.difficulty)
        self.translations = Translations(self.cfg, clock=self.clock)
        self.measured = Measurements(self.clock)
        versions: Callable[[], RouteVersions] | None = getattr(
            self.gate.store, "route_versions", None)
        self.routes = ActiveRoutes(self.cfg, versions() if versions else None, period_s=0.0)
        self.live_routes = LiveRoutes.of(self.cfg, self.routes.table)
        if self.health is None:
            self.health = Health(self.clock, keys_per_channel={
                c.name: max(1, len(c.keys)) for c in self.cfg.channels})

    @classmethod
    def build(cls, cfg: Config, store: Store, *, clock: Clock | None = None,
              transports: Mapping[str, Transport] | None = None,
              admin_token: str = "") -> Runtime:
        """Transports per channel: `sim` channels in process, every other one over aiohttp."""
        clock = clock or SystemClock()
        if transports is None:
            live = AiohttpTransport(limit=max(16, cfg.server.max_concurrency), clock=clock)
            transports = {c.name: (SimTransport(c, clock) if c.type == "sim" else live)
                          for c in cfg.channels}
        return cls(cfg=cfg, gate=StoreGate(store, clock), transports=transports, clock=clock,
                   admin_token=admin_token)

    def emit_trace(self, trace: Mapping[str, Any] | None) -> None:
        if trace is None:
            return
        for sink in self.trace_sinks:
            try:
                sink(trace)
            except Exception:
                log.warning("a trace sink failed; the request was served", exc_info=True)

    def start(self) -> None:
        """Background housekeeping, on the running loop (the app's lifespan calls it): a store
        that sweeps expired keys only inside commits (memory) is swept while idle too."""
        # Not part of the Store protocol: only the in-process store sweeps on its own.
        sweep: Callable[[], object] | None = getattr(self.gate.store, "sweep_if_due", None)
        if self._housekeeping is None and sweep is not None:
            self._housekeeping = asyncio.get_running_loop().create_task(self._housekeep(sweep))
        if self._routes_watch is None:
            self._routes_watch = asyncio.get_running_loop().create_task(self._watch_routes())

    async def _watch_routes(self) -> None:
        """The active route version, checked every ROUTES_CHECK_S (one GET on Redis); a new
        one is validated, compiled and applied between two requests, without a restart."""
        while True:
            await asyncio.sleep(ROUTES_CHECK_S)
            await self.apply_routes()

    async def apply_routes(self) -> None:
        """Read the store's active route version and apply it now if it changed (the watcher
        every ROUTES_CHECK_S; a deploy or rollback through the admin API before it answers,
        so its next request walks the new version). A version that does not fit the config
        is logged once and not applied."""
        active = self.routes
        if active is None:
            return
        version = active.version
        await active.refresh(self.clock.monotonic())
        if active.version != version:
            self.live_routes = LiveRoutes.of(self.cfg, active.table, active.version)
            log.info("routes version %d applied", active.version)
        elif active.last_error and active.last_error != self._routes_error:
            log.warning("routes: the active version is not applied: %s", active.last_error)
        self._routes_error = active.last_error

    async def _housekeep(self, sweep: Callable[[], object]) -> None:
        while True:
            await asyncio.sleep(HOUSEKEEPING_INTERVAL_S)
            try:
                sweep()
            except Exception:
                log.warning("the state store's idle sweep failed; retried later", exc_info=True)

    async def aclose(self) -> None:
        if self._routes_watch is not None:
            self._routes_watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._routes_watch
            self._routes_watch = None
        if self._housekeeping is not None:
            self._housekeeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._housekeeping
            self._housekeeping = None
        closed: set[int] = set()
        for t in self.transports.values():
            if id(t) not in closed:
                closed.add(id(t))
                with contextlib.suppress(Exception):
                    await t.aclose()
        await self.gate.close()
        for close in self.on_close:
            try:
                close()
            except Exception:
                log.warning("a trace sink failed to close", exc_info=True)
