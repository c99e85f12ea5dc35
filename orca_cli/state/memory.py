"""The embedded store (SPEC §9): dicts in the `orca serve` process, TTLs by the injected Clock.

Same key names, same encodings and the same semantics as the Redis backend (one contract suite
runs on both). Atomicity comes from the event loop: `commit` applies everything with no `await`
inside, so no other task can interleave. Memory stays bounded: an expired key is dropped when
touched, and a sweep drops every expired key every `sweep_interval_s` seconds and every
`sweep_every` commits, or one commit per eighth of the keys resident when that is more (a sweep
reads every key: `keyspace.SWEEP_SHARE`), so 10,000 idle sessions do not stay resident (SPEC
§12) and a large store costs a commit no more than a small one. With no commits at all, the
sidecar's housekeeping calls `sweep_if_due` (`Runtime.start`), so an idle store empties too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orca_cli.clock import Clock
from orca_cli.routing.routes.budget import Spend
from orca_cli.state import keys as K
from orca_cli.state.base import (
    CommitBatch,
    CommitResult,
    DelOp,
    ExpireAtLeastOp,
    HIncrManyOp,
    HIncrOp,
    IncrOp,
    KeyEntry,
    Op,
    PushOp,
    ReadRequest,
    SetOp,
    ShareCounts,
    SlotRef,
    SlotResult,
    SlotWrite,
    Snapshot,
    WindowIncrOp,
    ZAddOp,
)
from orca_cli.state.codec import (
    AUDIT_MAX,
    AUDIT_MAX_AGE_S,
    OP_CHECKS,
    audit_event,
    audit_member,
    audit_slot,
    decode_doc,
    dumps,
    vector_from_hash,
    vector_from_text,
    versioned_doc,
)
from orca_cli.state.keyspace import (
    DOC_TEXT,
    KIND_OF_OP,
    KIND_OF_VALUE,
    Entry,
    Keyspace,
    ZSet,
    check_kind,
    decode_view,
    entry_doc,
    entry_text,
    entry_version,
    expiry,
    floats,
    num,
)
from orca_cli.state.route_versions import MemoryRouteVersions

__all__ = ["MEMORY_MARKER_TTL_S", "MemoryStore"]

_TIER_KEY = K.tier_key()
_SHARE_KEY = K.SHARE_KEY
# A session's pins per tier: (tier, model pin key, channel pin key).
_PIN_KEYS = tuple((tier, K.pin_key(tier), K.chan_key(tier)) for tier in ("base", "strong"))


# The memory store's idempotency markers are kept an hour, not the 24 h of Redis's
# (`base.MARKER_TTL_S`, which must outlive an outage). A commit here applies on the loop with
# no await, so its outcome is known, except for a batch that raised part-way through; the
# store gate holds that one and re-sends it at its next probe, a second later
# (`proxy.runtime.PROBE_INTERVAL_S`), or as the sidecar stops. A day of markers, one a request
# and slot, was about 0.6 KiB a request resident (50 MB a day at one request a second); an
# hour covers any re-send with room.
MEMORY_MARKER_TTL_S = 3600


class MemoryStore(Keyspace):
    """The `memory` backend; also the fast fake every unit test uses (no fakeredis)."""

    backend = "memory"

    def __init__(
        self,
        *,
        clock: Clock,
        key_prefix: str = "orca",
        trace_max: int = 20000,
        trace_ttl_s: float = 86400,
        audit_max: int = AUDIT_MAX,
        sweep_every: int = 1024,
        sweep_interval_s: float = 60.0,
    ) -> None:
        super().__init__(clock, sweep_every, sweep_interval_s)
        self._prefix = K.check_name(key_prefix, "state.key_prefix")
        # The tags every request writes under, spelled once.
        self._workspace_tag = K.slot_tag(self._prefix, K.WORKSPACE)
        self._traces_tag = K.slot_tag(self._prefix, K.TRACES)
        self._trace_index_key = self._traces_tag + K.TRACE_INDEX_KEY
        self._trace_prefix = self._traces_tag + K.TRACE_PREFIX
        self._cid_prefix = self._traces_tag + K.CLIENT_ID_PREFIX
        self._trace_max = max(1, trace_max)
        self._trace_ttl_s = trace_ttl_s
        self._audit_max = audit_max
        # The share window's sums per `share` hash key and (first, last) hour, valid until the
        # hash is written otherwise than by a count into it (`_window_incr` keeps them), or
        # expires.
        self._share_sums: dict[str, dict[tuple[int, int], tuple[ShareCounts, float]]] = {}
        # `keys.share_field` per (hour, kind) counted into: every commit counts the same few.
        self._share_fields: dict[tuple[int, str], str] = {}
        self._router_tags: dict[str, str] = {}
        self.reads = 0
        self.commits = 0
        self.state_lost_at: float | None = None  # an embedded store never loses state on its own
        self._route_versions: MemoryRouteVersions | None = None

    # --- request path ----------------------------------------------------------------------

    async def read(self, req: ReadRequest) -> Snapshot:
        self.reads += 1
        now = self._clock.now()
        got: dict[str, Any] = {}
        if req.router:
            K.check_name(req.router)
            if req.session:
                self._read_session(req.router, req.session, now, got)
            self._read_router(req, req.router, now, got)
        if req.workspace:
            got["workspace_share"] = self._share(self._workspace_tag, req.share_hours, now)
        if req.budget_counters or req.budget_limits:
            got["budgets"] = self._counters(req.budget_counters, now)
            got["budget_limits"] = self._limits(req.budget_limits, now)
        return Snapshot(**got)

    def _read_session(self, router: str, session: str, now: float, got: dict[str, Any]) -> None:
        """The session slot: tier document and version, model and channel pins per tier."""
        tag = K.session_tag(self._prefix, router, session)
        e = self._entry(tag + _TIER_KEY, now)
        if e is not None:
            got["tier"] = entry_doc(e)
            got["tier_version"] = entry_version(e)
        pins: dict[str, str] = {}
        chans: dict[str, Mapping[str, Any]] = {}
        for tier, pin_key, chan_key in _PIN_KEYS:
            model = self._text(tag + pin_key, now)
            if model is not None:
                pins[tier] = model
            chan = self._doc(tag + chan_key, now)
            if chan is not None:
                chans[tier] = chan
        got["pins"], got["channel_pins"] = pins, chans

    def _read_router(self, req: ReadRequest, router: str, now: float,
                     got: dict[str, Any]) -> None:
        """The router slot: the share window, an affinity pin, bandit arms, percentile samples."""
        rtag = K.router_tag(self._prefix, router)
        got["share"] = self._share(rtag, req.share_hours, now)
        if req.affinity_key:
            got["affinity"] = self._doc(rtag + K.affinity_key(req.affinity_key), now)
        if req.linucb_arms:
            linucb: dict[str, list[float]] = {}
            for arm in req.linucb_arms:
                v = self._value(rtag + K.linucb_key(arm), now)
                linucb[arm] = (vector_from_hash(v) if isinstance(v, dict)
                               else vector_from_text(v if isinstance(v, str) else None))
            got["linucb"] = linucb
        if req.percentile_samples > 0:
            samples = self._value(rtag + K.PCT_KEY, now)
            if isinstance(samples, list):
                got["percentile_samples"] = tuple(floats(samples[: req.percentile_samples]))

    def _limits(self, names: tuple[str, ...], now: float) -> dict[str, float]:
        btag = K.slot_tag(self._prefix, K.BUDGETS)
        limits: dict[str, float] = {}
        for name in names:
            raw = self._text(btag + K.budget_limit_key(name), now)
            if raw is not None:
                limits[name] = float(raw)
        return limits

    def _counters(self, names: tuple[str, ...], now: float) -> dict[str, Spend]:
        btag = K.slot_tag(self._prefix, K.BUDGETS)
        out: dict[str, Spend] = {}
        for name in names:
            h = self._value(btag + K.budget_counter_key(name), now)
            if isinstance(h, dict):
                out[name] = Spend(int(h.get("requests", 0)), float(h.get("usd", 0.0)))
        return out

    def route_versions(self) -> MemoryRouteVersions:
        """The deployed route versions, kept in this process (SPEC §17)."""
        if self._route_versions is None:
            self._route_versions = MemoryRouteVersions()
        return self._route_versions

    async def read_counters(self, names: tuple[str, ...]) -> dict[str, Spend]:
        """Budget counters alone (a route's budget nodes, read before its target is known)."""
        return self._counters(names, self._clock.now())

    def _share(self, tag: str, hours: tuple[int, ...], now: float) -> ShareCounts:
        """The sum of the `share` hash's buckets from hours[0] through hours[-1]."""
        if not hours:
            return ShareCounts()
        key = tag + K.SHARE_KEY
        sums = self._share_sums.get(key)
        if sums is None:
            sums = self._share_sums[key] = {}
        window = (hours[0], hours[-1])
        hit = sums.get(window)
        if hit is not None and now < hit[1]:
            return hit[0]
        strong = total = 0.0
        e = self._entry(key, now)
        until = float("inf")
        if e is not None and isinstance(e.value, dict):
            until = e.expires_at if e.expires_at is not None else until
            for field, value in e.value.items():
                bucket = K.parse_share_field(field)
                if bucket is None or not window[0] <= bucket[0] <= window[1]:
                    continue
                if bucket[1] == "s":
                    strong += value
                else:
                    total += value
        if len(sums) >= 8:  # the window moved on: older windows are not read again
            sums.clear()
        counts = ShareCounts(strong, total)
        sums[window] = (counts, until)
        return counts

    def _window_incr(self, key: str, op: WindowIncrOp, now: float) -> None:
        """`WindowIncrOp`, as SLOT_COMMIT's op 'w' does it on Redis; the window sums kept for
        reads of `key` follow it."""
        # `_live(key, dict, now)` inline: every billed success counts into two share hashes.
        e = self._data.get(key)
        if (e is None or type(e.value) is not dict
                or (e.expires_at is not None and e.expires_at <= now)):
            e = self._entry(key, now)
            if e is None or not isinstance(e.value, dict):
                e = self._data[key] = Entry({}, None)
        h: dict[str, float] = e.value  # type: ignore[assignment]
        bucket = (op.hour, op.kind)
        field = self._share_fields.get(bucket)
        if field is None:
            if len(self._share_fields) >= 16:  # the hour moved on
                self._share_fields.clear()
            field = self._share_fields[bucket] = K.share_field(op.hour, op.kind)
        h[field] = h.get(field, 0.0) + op.amount
        held = h.get("w", 0)
        w = op.window_h
        # The widest window asked for, kept as a float: most counts find their own there.
        if type(held) is not float or held != w:
            w = max(int(held), w)
            if held != w or type(held) is not float:  # else it holds float(w) already
                h["w"] = float(w)
        if len(h) > 2 * w + 1:
            for f in [f for f in h if (b := K.parse_share_field(f)) and b[0] <= op.hour - w]:
                del h[f]
        until = now + op.ttl_s
        if e.expires_at is not None and e.expires_at > until:
            until = e.expires_at  # never shortened
        e.expires_at = until
        sums = self._share_sums.get(key)
        if sums:
            _count_into(sums, op, op.hour - w, until, now)

    async def commit(self, batch: CommitBatch) -> CommitResult:
        self.commits += 1
        now = self._clock.now()
        # No await beyond this point: the whole batch applies atomically on the loop.
        self._maybe_sweep(now)
        tid = K.safe_component(batch.request_id)  # the request's marker and trace name it
        marker = K.MARKER_PREFIX + tid
        results = []
        for w in batch.writes:  # a loop, not a comprehension: no function built per commit
            results.append(self._apply_slot(marker, w, now))
        for event in batch.audit:
            self._append_audit(audit_event(event, batch.request_id, now), now)
        if batch.trace is not None:
            self._write_trace(tid, batch.trace, now)
        return CommitResult(tuple(results), 1)  # round_trips

    def _apply_slot(self, marker_suffix: str, w: SlotWrite, now: float) -> SlotResult:
        slot = w.slot
        kind = slot.kind
        session = kind == "session"
        if w.mutate is not None and not session:
            raise ValueError(f"a tier mutate belongs to a session slot, not a {kind} slot")
        ops = w.ops
        checks = OP_CHECKS  # `check_ops`, inline
        for op in ops:
            checks[type(op)](op)
        if kind == "workspace":
            tag = self._workspace_tag
        elif kind == "router":
            tag = self._router_tag(slot.router)
        else:
            tag = K.slot_tag(self._prefix, slot)
        marker, tkey = tag + marker_suffix, tag + _TIER_KEY if session else ""
        # The marker: `_entry` and `_put` inline (a fresh request's marker is a new key).
        data = self._data
        e = data.get(marker)
        if e is not None:
            if e.expires_at is None or e.expires_at > now:
                return SlotResult(slot, "duplicate", self._text(tkey, now) if session else None)
            del data[marker]
        keys = self._slot_keys(tag, tkey, ops, now)
        # The tier document as the slot's result gives it: as the mutate left it, before the ops.
        result = self._write_tier(tkey, w, now) if session else SlotResult(slot, "applied")
        for key, op in zip(keys, ops):
            _APPLY[type(op)](self, key, op, now)
        if marker in data:  # an op of the slot wrote it
            self._put(marker, "1", MEMORY_MARKER_TTL_S, now)
        else:
            data[marker] = Entry("1", now + MEMORY_MARKER_TTL_S)
        return result

    def _router_tag(self, router: str) -> str:
        """`keys.router_tag` of `router`, spelled once per router (configured routers and the
        concrete models' `keys.direct_router` names: a few)."""
        tag = self._router_tags.get(router)
        if tag is None:
            if len(self._router_tags) >= 256:
                self._router_tags.clear()
            tag = self._router_tags[router] = K.router_tag(self._prefix, router)
        return tag

    def _write_tier(self, tkey: str, w: SlotWrite, now: float) -> SlotResult:
        """Write the session slot's tier document: `mutate` applied onto the stored one (its
        version + 1), or the stored one with its TTL slid. The slot's result, with the
        document after the write."""
        e = self._entry(tkey, now)
        if w.mutate is None:
            if e is None or not (isinstance(e.value, str) or e.value is DOC_TEXT):
                return SlotResult(w.slot, "applied")
            if w.tier_ttl_s > 0:
                e.expires_at = now + w.tier_ttl_s
            if e.value is DOC_TEXT:
                return SlotResult(w.slot, "applied", None, 1, e.doc)
            return SlotResult(w.slot, "applied", entry_text(e))
        new = w.mutate(None if e is None else entry_doc(e))
        if new is None:
            self._data.pop(tkey, None)
            return SlotResult(w.slot, "applied")
        version = (0 if e is None else entry_version(e)) + 1
        body = versioned_doc(new, version)
        if getattr(w.mutate, "plain", False):
            # Plain JSON data: decoding its text gives it back, so the key holds it as the
            # next read's document, and its text is encoded only if something reads that.
            kept = self._put(tkey, DOC_TEXT, w.tier_ttl_s or None, now)
            kept.doc, kept.version = body, version
            return SlotResult(w.slot, "applied", None, 1, body)
        text = dumps(body)
        kept = self._put(tkey, text, w.tier_ttl_s or None, now)
        kept.version = version
        return SlotResult(w.slot, "applied", text)

    def _slot_keys(self, tag: str, tkey: str, ops: tuple[Op, ...], now: float) -> list[str]:
        """The full keys of a slot's ops, checked for WRONGTYPE before anything is written, as
        the Redis script checks first (`tkey`: the tier document's key, "" for a slot without
        one). A `share` hash an op other than a count is about to write loses its kept window
        sums: the next read sums the hash again."""
        data = self._data
        # A value of the op's own kind passes at one lookup; only a mismatch (or a subclass)
        # goes to `check_kind`, where an expired key still takes any type.
        of_value = KIND_OF_VALUE
        if tkey and (e := data.get(tkey)) is not None and of_value.get(type(e.value)) != "string":
            check_kind(e, tkey, "string", now)
        kinds = KIND_OF_OP
        keys = []
        for op in ops:
            key = tag + op.key
            keys.append(key)
            kind = kinds.get(type(op))
            if (kind is not None and (e := data.get(key)) is not None
                    and of_value.get(type(e.value)) != kind):
                check_kind(e, key, kind, now)
            if op.key == _SHARE_KEY and type(op) is not WindowIncrOp:
                self._share_sums.pop(key, None)
        return keys

    def _set(self, key: str, op: SetOp, now: float) -> None:
        self._put(key, op.value, op.ttl_s, now)

    # The read-modify-write appliers look their entry up once (`_entry`, not `_value`): a
    # commit applies several ops a request.
    def _incr(self, key: str, op: IncrOp, now: float) -> None:
        e = self._entry(key, now)
        self._put(key, num(None if e is None else e.value) + op.amount, op.ttl_s, now)

    def _hincr(self, key: str, op: HIncrOp, now: float) -> None:
        e = self._entry(key, now)
        fields: dict[str, float] = e.value if e is not None and isinstance(e.value, dict) else {}
        fields[op.field] = fields.get(op.field, 0.0) + op.amount
        self._put(key, fields, op.ttl_s, now)

    def _hincr_many(self, key: str, op: HIncrManyOp, now: float) -> None:
        e = self._live(key, dict, now)
        if e is not None:
            # A live hash counted into in place: `_put` of the same value sets the expiry only.
            held: dict[str, float] = e.value  # type: ignore[assignment]
            for name, amount in op.fields:
                held[name] = held.get(name, 0.0) + amount
            e.expires_at = expiry(op.ttl_s, now)
            return
        e = self._entry(key, now)
        fields: dict[str, float] = e.value if e is not None and isinstance(e.value, dict) else {}
        for name, amount in op.fields:
            fields[name] = fields.get(name, 0.0) + amount
        self._put(key, fields, op.ttl_s, now)

    def _del(self, key: str, op: DelOp, now: float) -> None:
        self._data.pop(key, None)

    def _push(self, key: str, op: PushOp, now: float) -> None:
        e = self._entry(key, now)
        lst: list[str] = e.value if e is not None and isinstance(e.value, list) else []
        lst.insert(0, op.value)
        del lst[op.maxlen :]
        self._put(key, lst, op.ttl_s, now)

    def _zadd(self, key: str, op: ZAddOp, now: float) -> None:
        live = self._live(key, ZSet, now)
        e = live if live is not None else self._entry(key, now)
        zs = e.value if e is not None and isinstance(e.value, ZSet) else ZSet()
        zs.add(op.member, float(op.score))
        if len(zs) > op.maxlen:
            zs.pop_lowest(len(zs) - op.maxlen)
        if live is not None:  # `_put` of the same set sets the expiry only
            live.expires_at = expiry(op.ttl_s, now)
        else:
            self._put(key, zs, op.ttl_s, now)

    def _expire_at_least(self, key: str, op: ExpireAtLeastOp, now: float) -> None:
        e = self._entry(key, now)
        if e is not None and e.expires_at is not None and e.expires_at - now < op.ttl_s:
            e.expires_at = now + op.ttl_s

    def _append_audit(self, event: dict[str, Any], now: float) -> None:
        key = K.slot_tag(self._prefix, audit_slot(event["router"])) + K.AUDIT_KEY
        z = self._value(key, now)
        zs = z if isinstance(z, ZSet) else ZSet()
        zs.add(audit_member(event), float(event["ts"]))
        zs.remove_below(now - AUDIT_MAX_AGE_S)
        zs.pop_lowest(len(zs) - self._audit_max)
        self._put(key, zs, AUDIT_MAX_AGE_S, now)

    def _write_trace(self, tid: str, trace: Mapping[str, Any], now: float) -> None:
        """The trace of the request whose safe id (`keys.safe_component`) is `tid`."""
        tag = self._traces_tag
        ttl = self._trace_ttl_s
        data = self._data
        # A request's trace and client id are new keys: `_put` inline for those.
        expires_at = expiry(ttl, now)
        key = self._trace_prefix + tid
        if type(trace) is dict:
            if key in data:
                self._put(key, dumps(trace), ttl, now)
            else:
                data[key] = Entry(dumps(trace), expires_at)
        elif key in data:  # a lazy trace (`trace.build.Trace`): text made when it is read
            self._put(key, DOC_TEXT, ttl, now).doc = trace
        else:
            data[key] = Entry(DOC_TEXT, expires_at, trace)
        member = tid
        cid = trace.get("client_request_id")
        if isinstance(cid, str) and cid:
            safe_cid = K.safe_component(cid)
            key = self._cid_prefix + safe_cid
            if key in data:
                self._put(key, tid, ttl, now)
            else:
                data[key] = Entry(tid, expires_at)
            member = f"{tid}\n{safe_cid}"
        ts = trace.get("ts")
        score = (ts if type(ts) is float
                 else float(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool)
                 else now)
        index_key = self._trace_index_key
        live = self._live(index_key, ZSet, now)
        z = live.value if live is not None else self._value(index_key, now)
        idx = z if isinstance(z, ZSet) else ZSet()
        idx.add(member, score)
        idx.remove_below(now - ttl)
        over = len(idx) - self._trace_max
        for old in idx.pop_lowest(over) if over > 0 else ():
            old_id, _, old_cid = old.partition("\n")
            self._data.pop(tag + K.trace_key(old_id), None)
            if old_cid and self._text(tag + K.client_id_key(old_cid), now) == old_id:
                self._data.pop(tag + K.client_id_key(old_cid), None)
        if live is not None:  # `_put` of the same set sets the expiry only
            live.expires_at = expiry(ttl, now)
        else:
            self._put(index_key, idx, ttl, now)

    # --- operator side ---------------------------------------------------------------------

    async def scan(
        self,
        slot_kind: str,
        *,
        router: str | None = None,
        session: str | None = None,
        key_prefix: str = "",
    ) -> list[KeyEntry]:
        K.scan_pattern(self._prefix, slot_kind)  # validates slot_kind
        now = self._clock.now()
        out: list[KeyEntry] = []
        for key in sorted(self._data):
            parsed = K.parse_key(self._prefix, key)
            if parsed is None or not K.key_matches(
                parsed[0],
                parsed[1],
                slot_kind,
                router=router,
                session=session,
                key_prefix=key_prefix,
            ):
                continue
            entry = self._entry_view(key, parsed[0], parsed[1], now)
            if entry is not None:
                out.append(entry)
        return out

    def _entry_view(self, key: str, slot: SlotRef, suffix: str, now: float) -> KeyEntry | None:
        e = self._entry(key, now)
        if e is None:
            return None
        ttl = None if e.expires_at is None else e.expires_at - now
        return KeyEntry(slot, suffix, decode_view(e), ttl)

    async def get(self, slot: SlotRef, key: str) -> KeyEntry | None:
        full = K.slot_tag(self._prefix, slot) + key
        parsed = K.parse_key(self._prefix, full)
        return self._entry_view(full, parsed[0] if parsed else slot, key, self._clock.now())

    async def get_trace(self, request_id: str) -> Mapping[str, Any] | None:
        now = self._clock.now()
        tag = K.slot_tag(self._prefix, K.TRACES)
        doc = decode_doc(self._text(tag + K.trace_key(request_id), now))
        if doc is None:
            tid = self._text(tag + K.client_id_key(request_id), now)
            if tid is not None:
                doc = decode_doc(self._text(tag + K.trace_key(tid), now))
        return doc

    async def list_audit(
        self, router: str | None = None, since: float | None = None
    ) -> list[Mapping[str, Any]]:
        now = self._clock.now()
        streams = [K.slot_tag(self._prefix, K.WORKSPACE) + K.AUDIT_KEY]
        if router:
            streams.append(K.slot_tag(self._prefix, SlotRef.of_router(router)) + K.AUDIT_KEY)
        else:
            streams += [k for k in self._data if _is_router_audit(self._prefix, k)]
        events: list[tuple[float, str]] = []
        for key in streams:
            z = self._value(key, now)
            if isinstance(z, ZSet):
                events += z.range_from(since) if since is not None else z.items
        return [decode_doc(m) or {} for _, m in sorted(events)]

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        return None


def _is_router_audit(prefix: str, key: str) -> bool:
    parsed = K.parse_key(prefix, key)
    return parsed is not None and parsed[0].kind == "router" and parsed[1] == K.AUDIT_KEY


def _count_into(sums: dict[tuple[int, int], tuple[ShareCounts, float]], op: WindowIncrOp,
                pruned_to: int, until: float, now: float) -> None:
    """Keep the window sums of a `share` hash true after `op` counted into it: windows reaching
    pruned hours (<= `pruned_to`) or past their validity are dropped, the ones holding
    `op.hour` take its amount, and all stay valid until the hash's expiry `until`."""
    dead = None  # most counts drop no window: no list built
    hour = op.hour
    for window, (counts, valid_until) in sums.items():
        lo = window[0]
        if lo <= pruned_to or valid_until <= now:
            dead = [window] if dead is None else [*dead, window]
        elif lo <= hour <= window[1]:  # a value replaced in place: the keys stay as they are
            sums[window] = ((ShareCounts(counts.strong + op.amount, counts.total)
                             if op.kind == "s" else
                             ShareCounts(counts.strong, counts.total + op.amount)), until)
    if dead is not None:
        for window in dead:
            del sums[window]


# One applier per op type (a dict lookup instead of an isinstance chain per op).
_APPLY: dict[type, Any] = {
    SetOp: MemoryStore._set,
    IncrOp: MemoryStore._incr,
    HIncrOp: MemoryStore._hincr,
    HIncrManyOp: MemoryStore._hincr_many,
    DelOp: MemoryStore._del,
    PushOp: MemoryStore._push,
    ZAddOp: MemoryStore._zadd,
    ExpireAtLeastOp: MemoryStore._expire_at_least,
    WindowIncrOp: MemoryStore._window_incr,
}
