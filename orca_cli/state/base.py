"""The state store interface (SPEC §9).

One `read` before the upstream call and one `commit` after it, each a single round trip on
Redis. The store knows nothing about escalation semantics: a commit carries, per hash slot,

* an idempotency marker for the request (a second commit with the same request id is a no-op
  for that slot, so a commit retried after an unknown outcome applies exactly once),
* for the session slot, a pure `mutate(fresh_tier_doc) -> new_tier_doc` applied onto the
  *fresh* tier document with optimistic versioning (a stale writer re-applies its intents onto
  what is stored now; it never overwrites it), and
* a list of plain key operations (set with TTL, delete, counters, capped lists, sorted sets).

The semantics of intents live once, in pure code (`state/apply.py`), and reach the store only
as that `mutate` function; the backends differ in how they make the apply atomic (memory: no
`await` inside the apply; Redis: a Lua script per slot that compares versions and sets the
marker, all slots sent in one pipeline).

Keys are given as *suffixes* inside a slot; `state/keys.py` builds the full hash-tagged name:
`<prefix>:{r:<router>:s:<session>}:<suffix>`, `<prefix>:{r:<router>}:<suffix>`,
`<prefix>:{w}:<suffix>`, `<prefix>:{t}:<suffix>`.

`Snapshot`, `ShareCounts` and `TierDoc` are defined by the routing core
(`routing/snapshot.py`) and re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any, Literal, Protocol, TypeAlias

import orjson

from orca_cli.immutable import immutable, replaced

# The routing side owns what a read hands over; re-exported here for the store backends.
from orca_cli.routing.snapshot import ShareCounts, Snapshot, TierDoc

__all__ = [
    "MARKER_TTL_S",
    "MAX_CAS_ATTEMPTS",
    "CommitBatch",
    "CommitResult",
    "DelOp",
    "ExpireAtLeastOp",
    "HIncrManyOp",
    "HIncrOp",
    "IncrOp",
    "KeyEntry",
    "Mutate",
    "Op",
    "PushOp",
    "ReadRequest",
    "SetOp",
    "ShareCounts",
    "SlotRef",
    "SlotResult",
    "SlotWrite",
    "Snapshot",
    "Store",
    "TierDoc",
    "WindowIncrOp",
    "ZAddOp",
]

Mutate: TypeAlias = Callable[["TierDoc | None"], "TierDoc | None"]
# A mutate may set `plain = True` on itself when its latest output is plain JSON data: dicts
# with text keys, lists, text, whole numbers, finite floats, booleans and None, built afresh
# and held by nobody else. Decoding that output's encoding gives it back, so the memory store
# keeps it as the document the next read hands out (no decode). `state.plan.TierMutate` does.

# How long a commit's idempotency markers are kept: a batch whose outcome is unknown is held
# by the store gate and re-sent with the same request id once the store answers again, so a
# marker must outlive the longest outage a held batch waits through (Redis). The memory store
# keeps its own for `MEMORY_MARKER_TTL_S` (`state.memory`).
MARKER_TTL_S = 86400
MAX_CAS_ATTEMPTS = 8  # bounded: a conflict storm is reported, never looped on forever


@immutable
class SlotRef:
    """A hash slot: a session's, a router's, the workspace's or the trace store's."""

    kind: Literal["session", "router", "workspace", "traces", "budgets"]
    router: str = ""
    session: str = ""

    @staticmethod
    def of_session(router: str, session: str) -> SlotRef:
        return SlotRef("session", router, session)

    @staticmethod
    def of_router(router: str) -> SlotRef:
        return SlotRef("router", router)


@immutable
class SetOp:
    key: str  # suffix inside the slot, e.g. "pin:base"
    value: str
    ttl_s: float  # > 0


@immutable
class DelOp:
    key: str


@immutable
class IncrOp:
    """INCRBYFLOAT a plain counter; the TTL is (re)set on every increment."""

    key: str
    amount: float
    ttl_s: float


@immutable
class HIncrOp:
    """HINCRBYFLOAT one field of a hash; the TTL is (re)set on every increment."""

    key: str
    field: str
    amount: float
    ttl_s: float


@immutable
class HIncrManyOp:
    """HINCRBYFLOAT several fields of one hash, in order; the TTL is (re)set once. One op
    where a request's figures (requests, tokens, cost) would be one `HIncrOp` each."""

    key: str
    fields: tuple[tuple[str, float], ...]
    ttl_s: float


@immutable
class PushOp:
    """Prepend to a capped list (newest first), keeping at most `maxlen` items."""

    key: str
    value: str
    maxlen: int
    ttl_s: float


@immutable
class ZAddOp:
    """Add to a sorted set, keeping the `maxlen` highest scores."""

    key: str
    member: str
    score: float
    maxlen: int
    ttl_s: float


@immutable
class ExpireAtLeastOp:
    """Extend a key's TTL to at least `ttl_s` (never shortens it; no-op when absent)."""

    key: str
    ttl_s: float


@immutable
class WindowIncrOp:
    """Count into an hour-bucketed window hash (the share window, SPEC §6.4): HINCRBYFLOAT
    its field `<hour>:<kind>` by `amount`; keep in its field `w` the widest `window_h` any
    writer asked for; once the hash holds more than 2·w + 1 fields, drop the buckets of hours
    ≤ hour − w (out of every window a writer reads); extend the hash's TTL to at least `ttl_s`
    (never shortened: a short-window writer does not expire a long window's buckets)."""

    key: str
    hour: int
    kind: str  # "s" | "t" (keys.share_field)
    amount: float
    window_h: int
    ttl_s: float


Op: TypeAlias = (SetOp | DelOp | IncrOp | HIncrOp | HIncrManyOp | PushOp | ZAddOp
                 | ExpireAtLeastOp | WindowIncrOp)


@immutable
class SlotWrite:
    slot: SlotRef
    ops: tuple[Op, ...] = ()
    # Session slots only: the tier document's pure update, applied onto fresh state.
    mutate: Mutate | None = None
    expected_version: int = 0  # the version the intents were resolved on (0 = no document)
    tier_ttl_s: float = 0  # the tier document's sliding TTL, reset by every commit that writes it
    # The snapshot's tier document the intents were resolved on (`Snapshot.tier`). The store
    # caches nothing, so its first attempt sends `mutate(base_doc)` guarded by
    # `expected_version`: on a version match base_doc *is* the fresh document. On a mismatch the
    # store re-runs `mutate` on the fresh document it got back. Leaving it None with
    # expected_version > 0 costs one extra round trip (the first attempt only fetches).
    base_doc: TierDoc | None = None


@immutable
class CommitBatch:
    request_id: str
    writes: tuple[SlotWrite, ...] = ()
    # Written with the commit, in the same round trip; not subject to the slot markers.
    audit: tuple[Mapping[str, Any], ...] = ()
    trace: Mapping[str, Any] | None = None

    def with_trace(self, trace: Mapping[str, Any] | None) -> CommitBatch:
        """This batch carrying `trace` (every request's one copy: `immutable.replaced`)."""
        return replaced(self, trace=trace)


@immutable
class SlotResult:
    slot: SlotRef
    status: Literal["applied", "duplicate"]
    # The tier document after the commit (session slots) as stored: decoded only when read
    # (`tier`), since the request path never reads it back.
    tier_text: str | None = None
    attempts: int = 1  # CAS attempts (1 = no conflict)
    # Or the document itself, plain JSON data the memory store holds without its text
    # (`keyspace.DOC_TEXT`); `tier` decodes a copy. Not hashed: a dict.
    tier_doc: TierDoc | None = field(default=None, hash=False)

    @property
    def tier(self) -> TierDoc | None:
        """The tier document after the commit, as `codec.decode_doc` reads it."""
        if self.tier_doc is not None:
            # plain JSON data: orjson encodes it as `codec.dumps` does
            return orjson.loads(orjson.dumps(self.tier_doc))  # type: ignore[no-any-return]
        if not self.tier_text:
            return None
        try:
            doc = orjson.loads(self.tier_text)
        except orjson.JSONDecodeError:
            return None
        return doc if isinstance(doc, dict) else None


@immutable
class CommitResult:
    results: tuple[SlotResult, ...] = ()
    round_trips: int = 1


@immutable
class ReadRequest:
    router: str
    session: str | None = None
    # The share window: the hour buckets (int(ts // 3600)) from share_hours[0] through
    # share_hours[-1] (`routing.caps.window_hours`), summed into the snapshot.
    share_hours: tuple[int, ...] = ()
    workspace: bool = True
    affinity_key: str | None = None  # sessionless cache-aware affinity (SPEC §5)
    linucb_arms: tuple[str, ...] = ()
    percentile_samples: int = 0  # how many of the newest samples to read (0 = none)
    # SPEC §17: budget counters (`routing/routes/budget.py` names) and raised limits
    # (`<name>:<key>`) to read in the same round trip; empty unless budgets are configured.
    budget_counters: tuple[str, ...] = ()
    budget_limits: tuple[str, ...] = ()


@immutable
class KeyEntry:
    """One key found by a prefix scan, with its remaining TTL (None = no expiry)."""

    slot: SlotRef
    key: str  # suffix inside the slot
    value: Any
    ttl_s: float | None


class Store(Protocol):
    """Both backends implement exactly this; one contract suite tests both."""

    backend: str
    reads: int  # number of `read` calls (round trips before the upstream call)
    commits: int  # number of `commit` calls

    async def read(self, req: ReadRequest) -> Snapshot: ...

    async def commit(self, batch: CommitBatch) -> CommitResult: ...

    # --- operator side (admin API, CLI); never on the request path -------------------
    async def scan(self, slot_kind: str, *, router: str | None = None,
                   session: str | None = None, key_prefix: str = "") -> list[KeyEntry]: ...

    async def get(self, slot: SlotRef, key: str) -> KeyEntry | None: ...

    async def get_trace(self, request_id: str) -> Mapping[str, Any] | None:
        """By orca's request id or the client's X-Request-Id."""
        ...

    async def list_audit(self, router: str | None = None,
                         since: float | None = None) -> list[Mapping[str, Any]]: ...

    async def ping(self) -> None:
        """Raise StoreUnavailable when the store does not answer within its timeout."""
        ...

    async def close(self) -> None: ...
