"""What the Redis backend sends and how it reads the replies (SPEC §9); pure, no I/O.

Commands are plain tuples for `pipeline.execute_command(*cmd)`. Every command of one slot names
keys of that slot only, so a Cluster pipeline routes each to its node unchanged. Arguments that
are the same on every request (script SHAs, the marker TTL, flags) and the JSON documents are
handed over as bytes, which redis-py sends as they are instead of encoding each one again;
command names stay `str` (a Cluster client routes by them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from orca_cli.immutable import immutable
from orca_cli.routing.routes.budget import Spend
from orca_cli.state import keys as K
from orca_cli.state.base import (
    MARKER_TTL_S,
    DelOp,
    ExpireAtLeastOp,
    HIncrManyOp,
    HIncrOp,
    IncrOp,
    Op,
    PushOp,
    ReadRequest,
    SetOp,
    ShareCounts,
    SlotRef,
    SlotWrite,
    Snapshot,
    WindowIncrOp,
    ZAddOp,
)
from orca_cli.state.codec import (
    AUDIT_MAX_AGE_S,
    as_dict,
    audit_member,
    audit_slot,
    decode_doc,
    decode_value,
    doc_version,
    dumps_bytes,
    ttl_ms,
    vector_from_hash,
    vector_from_text,
)
from orca_cli.state.scripts import (
    LEGACY_FOLD,
    ROUTER_READ,
    SLOT_COMMIT,
    TRACE_WRITE,
    WINDOW_READ,
)

__all__ = [
    "Cmd",
    "ReadLayout",
    "audit_commands",
    "decode",
    "encode_op",
    "fetch_cmd",
    "float_or_zero",
    "floats",
    "fold_command",
    "has_read_only_scripts",
    "pairs",
    "read_commands",
    "run_id",
    "share_counts",
    "slot_command",
    "snapshot_from",
    "trace_command",
    "wire",
]

Cmd = tuple[Any, ...]

# Constant arguments, encoded once.
_SLOT_COMMIT_SHA = SLOT_COMMIT.sha.encode()
_TRACE_WRITE_SHA = TRACE_WRITE.sha.encode()
_ROUTER_READ_SHA = ROUTER_READ.sha.encode()
_WINDOW_READ_SHA = WINDOW_READ.sha.encode()
_MARKER_TTL_MS = str(ttl_ms(MARKER_TTL_S)).encode()
_SMALL = tuple(str(i).encode() for i in range(64))  # key counts, flags, versions
_MODES = {m: m.encode() for m in "-rtwd"}  # SLOT_COMMIT's document modes


def _int(n: int) -> bytes | int:
    return _SMALL[n] if 0 <= n < 64 else n


def wire(cmd: Cmd) -> Cmd:
    """`cmd` with its str and int arguments as the bytes redis-py would send: its encoder
    spends about 0.45 µs on each (type checks, a codec looked up by name), `str.encode()`
    0.02. The command name stays as it is: a Cluster client routes by it and replies are
    parsed by it."""
    return (cmd[0], *[a.encode() if type(a) is str else b"%d" % a if type(a) is int else a
                      for a in cmd[1:]])


@immutable
class ReadLayout:
    """Where each slot's reply sits in a read pipeline (-1 = not asked)."""

    session: int = -1
    router: int = -1
    workspace: int = -1
    budgets: int = -1  # the first of one HMGET per budget counter, then the limits' MGET


def _window(hours: Sequence[int]) -> tuple[int, int]:
    return hours[0], hours[-1]


def fold_command(prefix: str, slot: SlotRef, hours: Sequence[int]) -> Cmd:
    """One LEGACY_FOLD call: the per-hour share keys of `hours` into the slot's share hash."""
    tag = K.slot_tag(prefix, slot)
    buckets = [(h, kind) for h in hours for kind in ("s", "t")]
    return ("EVALSHA", LEGACY_FOLD.sha, len(buckets) + 1, tag + K.SHARE_KEY,
            *[tag + K.share_key(h, kind) for h, kind in buckets],
            ttl_ms((len(hours) + 1) * 3600), *[K.share_field(h, kind) for h, kind in buckets])


def read_commands(
    prefix: str, req: ReadRequest, *, read_only: bool = False, head: Sequence[Cmd] = ()
) -> tuple[list[Cmd], ReadLayout]:
    """The session MGET, the router read script and the workspace window script a read
    needs, after the commands of `head` (the first read's legacy folds).

    `read_only` sends the scripts as EVALSHA_RO (Redis >= 7): a write pause (`CLIENT PAUSE
    WRITE`, as a coordinated failover issues) blocks every EVALSHA but lets reads through.
    """
    cmds: list[Cmd] = list(head)
    session = router = workspace = -1
    verb = "EVALSHA_RO" if read_only else "EVALSHA"
    window = ("", "") if not req.share_hours else _window(req.share_hours)
    if req.router:
        K.check_name(req.router)
        if req.session:
            tag = K.slot_tag(prefix, SlotRef.of_session(req.router, req.session))
            session = len(cmds)
            names = (
                K.tier_key(),
                K.pin_key("base"),
                K.pin_key("strong"),
                K.chan_key("base"),
                K.chan_key("strong"),
            )
            cmds.append(("MGET", *[tag + n for n in names]))
        rtag = K.slot_tag(prefix, SlotRef.of_router(req.router))
        rkeys = [rtag + K.SHARE_KEY] if req.share_hours else []
        if req.affinity_key:
            rkeys.append(rtag + K.affinity_key(req.affinity_key))
        if req.percentile_samples > 0:
            rkeys.append(rtag + K.PCT_KEY)
        rkeys += [rtag + K.linucb_key(arm) for arm in req.linucb_arms]
        if rkeys:
            router = len(cmds)
            flags = (*window, _SMALL[1 if req.affinity_key else 0],
                     _int(max(0, req.percentile_samples)))
            cmds.append((verb, _ROUTER_READ_SHA, _int(len(rkeys)), *rkeys, *flags))
    if req.workspace and req.share_hours:
        workspace = len(cmds)
        wkey = K.slot_tag(prefix, K.WORKSPACE) + K.SHARE_KEY
        cmds.append((verb, _WINDOW_READ_SHA, _SMALL[1], wkey, *window))
    budgets = -1
    if req.budget_counters or req.budget_limits:
        budgets = len(cmds)
        cmds += budget_commands(prefix, req.budget_counters)
        btag = K.slot_tag(prefix, K.BUDGETS)
        limits = [btag + K.budget_limit_key(n) for n in req.budget_limits]
        cmds.append(("MGET", *(limits or [btag + K.budget_limit_key("-")])))
    return cmds, ReadLayout(session, router, workspace, budgets)


def budget_commands(prefix: str, counters: Sequence[str]) -> list[Cmd]:
    """One HMGET {requests, usd} per budget counter (all in the `{budgets}` slot)."""
    btag = K.slot_tag(prefix, K.BUDGETS)
    return [("HMGET", btag + K.budget_counter_key(c), "requests", "usd") for c in counters]


def spends_from(counters: Sequence[str], rows: Sequence[Any]) -> dict[str, Spend]:
    """The HMGET replies of `budget_commands`: counters that exist, as `Spend`."""
    return {c: Spend(int(float(r or 0)), float(u or 0.0))
            for c, (r, u) in zip(counters, rows, strict=True) if r is not None or u is not None}


def snapshot_from(
    res: Sequence[Any], layout: ReadLayout, req: ReadRequest, state_lost_at: float | None
) -> Snapshot:
    tier_text: str | None = None
    pins: dict[str, str] = {}
    chans: dict[str, Mapping[str, Any]] = {}
    if layout.session >= 0:
        tier_text, pin_base, pin_strong, chan_base, chan_strong = res[layout.session]
        pins = {t: m for t, m in (("base", pin_base), ("strong", pin_strong)) if m is not None}
        for tier, text in (("base", chan_base), ("strong", chan_strong)):
            doc = decode_doc(text)
            if doc:
                chans[tier] = doc
    share = ShareCounts()
    affinity: Mapping[str, Any] | None = None
    linucb: dict[str, list[float]] = {}
    pct: tuple[float, ...] = ()
    if layout.router >= 0:
        shares, aff, samples, arms = res[layout.router]
        share = share_counts(shares)
        affinity = decode_doc(aff)
        pct = tuple(floats(samples))
        for arm, (kind, data) in zip(req.linucb_arms, arms, strict=True):
            if kind == "hash":
                linucb[arm] = vector_from_hash(dict(zip(data[::2], data[1::2], strict=False)))
            else:
                linucb[arm] = vector_from_text(data[0] if data else None)
    ws = share_counts(res[layout.workspace]) if layout.workspace >= 0 else ShareCounts()
    budgets: dict[str, Spend] = {}
    limits: dict[str, float] = {}
    if layout.budgets >= 0:
        n = len(req.budget_counters)
        budgets = spends_from(req.budget_counters, res[layout.budgets:layout.budgets + n])
        limits = {name: float(v) for name, v in zip(req.budget_limits, res[layout.budgets + n],
                                                    strict=False) if v is not None}
    return Snapshot(
        tier=decode_doc(tier_text),
        tier_version=doc_version(tier_text),
        pins=pins,
        channel_pins=chans,
        share=share,
        workspace_share=ws,
        affinity=affinity,
        linucb=linucb,
        percentile_samples=pct,
        state_lost_at=state_lost_at,
        budgets=budgets,
        budget_limits=limits,
    )


def slot_command(
    prefix: str, request_id: str, w: SlotWrite, mode: str, expected: int, doc: str
) -> Cmd:
    """One SLOT_COMMIT call: KEYS = marker, tier, then every key the ops name."""
    tag = K.slot_tag(prefix, w.slot)
    keys = [tag + K.marker_key(request_id), tag + K.tier_key()]
    index: dict[str, int] = {}
    ops = []
    for op in w.ops:
        full = tag + op.key
        if full not in index:
            keys.append(full)
            index[full] = len(keys)
        ops.append(encode_op(op, index[full]))
    tier_ttl = ttl_ms(w.tier_ttl_s) if w.tier_ttl_s > 0 else 0
    return (
        "EVALSHA",
        _SLOT_COMMIT_SHA,
        _int(len(keys)),
        *keys,
        _MARKER_TTL_MS,
        _MODES[mode],
        _int(expected),
        doc,
        _int(tier_ttl),
        dumps_bytes(ops),
    )


def audit_commands(
    prefix: str, events: Sequence[Mapping[str, Any]], now: float, audit_max: int
) -> list[Cmd]:
    """ZADD each event to its stream, then trim every touched stream by age and count."""
    cmds: list[Cmd] = []
    streams: list[str] = []
    for ev in events:
        key = K.slot_tag(prefix, audit_slot(ev["router"])) + K.AUDIT_KEY
        cmds.append(("ZADD", key, repr(float(ev["ts"])), audit_member(ev)))
        if key not in streams:
            streams.append(key)
    for key in streams:
        cmds += [
            ("ZREMRANGEBYSCORE", key, "-inf", f"({now - AUDIT_MAX_AGE_S!r}"),
            ("ZREMRANGEBYRANK", key, 0, -(audit_max + 1)),
            ("PEXPIRE", key, ttl_ms(AUDIT_MAX_AGE_S)),
        ]
    return cmds


def trace_command(
    prefix: str,
    request_id: str,
    trace: Mapping[str, Any],
    now: float,
    ttl_s: float,
    trace_max: int,
) -> Cmd:
    """One TRACE_WRITE call: the trace, its client-id alias, the index and its eviction."""
    tag = K.slot_tag(prefix, K.TRACES)
    tid = K.safe_component(request_id)
    keys = [tag + K.trace_key(tid), tag + K.TRACE_INDEX_KEY]
    member = tid
    cid = trace.get("client_request_id")
    if isinstance(cid, str) and cid:
        safe_cid = K.safe_component(cid)
        keys.append(tag + K.client_id_key(safe_cid))
        member = f"{tid}\n{safe_cid}"
    ts = trace.get("ts")
    score = float(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool) else now
    return (
        "EVALSHA",
        _TRACE_WRITE_SHA,
        _int(len(keys)),
        *keys,
        dumps_bytes(as_dict(trace)),
        ttl_ms(ttl_s),
        repr(score),
        member,
        tid,
        repr(now - ttl_s),
        trace_max,
        tag + "trace:",
        tag + "cid:",
    )


def encode_op(op: Op, ki: int) -> list[Any]:
    if isinstance(op, SetOp):
        return ["s", ki, op.value, ttl_ms(op.ttl_s)]
    if isinstance(op, DelOp):
        return ["d", ki]
    if isinstance(op, IncrOp):
        return ["i", ki, repr(float(op.amount)), ttl_ms(op.ttl_s)]
    if isinstance(op, HIncrOp):
        return ["h", ki, op.field, repr(float(op.amount)), ttl_ms(op.ttl_s)]
    if isinstance(op, HIncrManyOp):
        out: list[Any] = ["H", ki, ttl_ms(op.ttl_s)]
        for name, amount in op.fields:
            out += (name, repr(float(amount)))
        return out
    if isinstance(op, PushOp):
        return ["p", ki, op.value, op.maxlen, ttl_ms(op.ttl_s)]
    if isinstance(op, ZAddOp):
        return ["z", ki, op.member, repr(float(op.score)), op.maxlen, ttl_ms(op.ttl_s)]
    if isinstance(op, ExpireAtLeastOp):
        return ["x", ki, ttl_ms(op.ttl_s)]
    if isinstance(op, WindowIncrOp):
        return ["w", ki, K.share_field(op.hour, op.kind), int(op.hour), repr(float(op.amount)),
                int(op.window_h), ttl_ms(op.ttl_s)]
    raise TypeError(f"unknown store op {op!r}")


def fetch_cmd(key: str, kind: Any) -> Cmd | None:
    return {
        "string": ("GET", key),
        "hash": ("HGETALL", key),
        "list": ("LRANGE", key, 0, -1),
        "zset": ("ZRANGE", key, 0, -1, "WITHSCORES"),
    }.get(kind if isinstance(kind, str) else "")


def decode(kind: str, value: Any) -> Any:
    if kind == "string":
        return decode_value(value)
    if kind == "hash":
        return {k: decode_value(v) for k, v in value.items()}
    if kind == "list":
        return [decode_value(v) for v in value]
    return [[decode_value(m), sc] for m, sc in pairs(value)]


def run_id(info: Any) -> str | None:
    if isinstance(info, Mapping):
        rid = info.get("run_id")
        return str(rid) if rid else None
    return None


def has_read_only_scripts(info: Any) -> bool:
    """Whether INFO server reports Redis >= 7.0, which has EVALSHA_RO."""
    version = str(info.get("redis_version", "")) if isinstance(info, Mapping) else ""
    major = version.split(".", 1)[0]
    return major.isdigit() and int(major) >= 7


def share_counts(reply: Any) -> ShareCounts:
    """A window script's {strong, total}; no window (false / None) reads 0."""
    if not reply:
        return ShareCounts()
    return ShareCounts(float_or_zero(reply[0]), float_or_zero(reply[1]))


def float_or_zero(v: Any) -> float:
    try:
        return float(v) if v is not None else 0.0
    except (TypeError, ValueError):
        return 0.0


def pairs(value: Any) -> list[tuple[str, float]]:
    """WITHSCORES replies, whether the client paired them already or not."""
    if value and isinstance(value[0], (list, tuple)):
        return [(m, float(sc)) for m, sc in value]
    return [(m, float(sc)) for m, sc in zip(value[0::2], value[1::2], strict=False)]


def floats(values: Sequence[Any]) -> list[float]:
    out = []
    for v in values:
        try:
            out.append(float(v))
        except (TypeError, ValueError):
            continue
    return out
