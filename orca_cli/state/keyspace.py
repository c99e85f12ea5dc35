"""The embedded store's keyspace: values with TTLs by the injected Clock, the Redis-like
sorted set, and the sweep that keeps memory bounded (SPEC §9, §12). `MemoryStore` builds the
store protocol on top of it."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, TypeAlias

from orca_cli.clock import Clock
from orca_cli.errors import StoreUnavailable
from orca_cli.state.base import HIncrManyOp, HIncrOp, IncrOp, PushOp, WindowIncrOp, ZAddOp
from orca_cli.state.codec import as_dict, decode_doc, decode_value, doc_version, dumps

__all__ = ["DOC_TEXT", "KIND_OF_OP", "KIND_OF_VALUE", "SWEEP_SHARE", "Entry", "Keyspace",
           "Value", "ZSet", "check_kind", "decode_view", "entry_doc", "entry_text",
           "entry_version", "floats", "kind_of", "num"]

class ZSet:
    """A sorted set ordered like Redis's: by score, then member.

    Popping the lowest members (the trace index and audit streams trim their oldest on
    every write once full) advances a head offset instead of shifting the list; the dead
    prefix is dropped once it is the larger half, so a trim costs O(1) amortised. A member
    scored at or above the highest (a trace, an audit event or a session's latest activity,
    stamped now) is appended without a search."""

    __slots__ = ("_head", "_items", "scores")

    def __init__(self) -> None:
        self._items: list[tuple[float, str]] = []
        self._head = 0
        self.scores: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._items) - self._head

    @property
    def items(self) -> list[tuple[float, str]]:
        return self._items[self._head :]

    def add(self, member: str, score: float) -> None:
        old = self.scores.get(member)
        if old is not None:
            if old == score:
                return
            del self._items[bisect.bisect_left(self._items, (old, member), self._head)]
        self.scores[member] = score
        items, entry = self._items, (score, member)
        if len(items) == self._head or items[-1] < entry:
            items.append(entry)
        else:
            bisect.insort(items, entry, self._head)

    def pop_lowest(self, n: int) -> list[str]:
        if n <= 0:
            return []
        end = min(self._head + n, len(self._items))
        gone = [m for _, m in self._items[self._head : end]]
        self._head = end
        for m in gone:
            del self.scores[m]
        if self._head * 2 > len(self._items):
            del self._items[: self._head]
            self._head = 0
        return gone

    def remove_below(self, score: float) -> list[str]:
        if len(self._items) == self._head or self._items[self._head][0] >= score:
            return []  # the lowest is not below: nothing to search for
        below = bisect.bisect_left(self._items, (score, ""), self._head)
        return self.pop_lowest(below - self._head)

    def range_from(self, score: float) -> list[tuple[float, str]]:
        return self._items[bisect.bisect_left(self._items, (score, ""), self._head) :]


class DocText:
    """The type of `DOC_TEXT`: a text value not encoded yet."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DOC_TEXT"


# The value of a key that holds text, the JSON encoding (`codec.dumps`) of its entry's `doc`,
# not encoded yet. A commit writes a plain tier document so (`MemoryStore._write_tier`): the
# request path reads the document (`entry_doc`), never its text, so the text is encoded only
# when something reads the key as text (`entry_text`: an operator's read, a duplicate
# commit's result), and kept from then on. A trace is written so too, its `doc` the lazy
# document (`trace.build.Trace`) not built yet. To every command it is a string, as on Redis.
DOC_TEXT = DocText()

Value: TypeAlias = str | float | dict[str, float] | list[str] | ZSet | DocText
KIND_OF_OP: dict[type, str] = {IncrOp: "string", HIncrOp: "hash", HIncrManyOp: "hash",
                               PushOp: "list", ZAddOp: "zset", WindowIncrOp: "hash"}
# `kind_of` of the exact types a value is stored as.
KIND_OF_VALUE: dict[type, str] = {str: "string", float: "string", dict: "hash", list: "list",
                                  ZSet: "zset", DocText: "string"}


UNDECODED: Any = object()


@dataclass(slots=True)
class Entry:
    value: Value
    expires_at: float | None
    # The JSON document a text value decodes to, kept from a read (or from the commit that
    # wrote a plain tier document or a lazy trace, whose value is then `DOC_TEXT`) until the
    # key is written another value (`Keyspace._put` resets it). Readers share it and treat
    # it as read-only.
    doc: Any = UNDECODED
    # The tier document version of a text value (`codec.doc_version`), kept the same way: a
    # session's read and its commit both ask, and the commit that writes it knows it.
    version: int | None = None


def entry_doc(e: Entry) -> dict[str, Any] | None:
    """`decode_doc` of the entry's text (None for another value), decoded once."""
    doc = e.doc
    if type(doc) is dict or doc is None:
        return doc
    if doc is not UNDECODED:  # a lazy document: its text is made, then decoded as any text
        entry_text(e)
    e.doc = decode_doc(e.value) if isinstance(e.value, str) else None
    return e.doc  # type: ignore[no-any-return]


def entry_text(e: Entry) -> str | None:
    """The entry's value as text, None for a value other than text; `DOC_TEXT` is encoded
    here, once. A lazy document (a trace, `trace.build.Trace`) is let go once its text is
    made: the text is the record from then on."""
    v = e.value
    if v is DOC_TEXT:
        doc = e.doc
        v = e.value = dumps(as_dict(doc))
        if type(doc) is not dict:
            e.doc = UNDECODED
    return v if isinstance(v, str) else None


def entry_version(e: Entry) -> int:
    """`doc_version` of the entry's text (0 for another value), read once."""
    if e.version is None:
        e.version = doc_version(e.value if isinstance(e.value, str) else None)
    return e.version


def kind_of(value: Value) -> str:
    if isinstance(value, (str, float, DocText)):
        return "string"
    if isinstance(value, dict):
        return "hash"
    if isinstance(value, list):
        return "list"
    return "zset"


def expiry(ttl_s: float | None, now: float) -> float | None:
    """When a key written now with `ttl_s` expires: None (never) for a TTL of 0 or None."""
    return None if not ttl_s else now + ttl_s


def check_kind(e: Entry, key: str, kind: str, now: float) -> None:
    """WRONGTYPE: raise unless `e` holds a value of `kind`, or has expired (then any type may
    be written)."""
    if e.expires_at is not None and e.expires_at <= now:
        return
    got = kind_of(e.value)
    if got != kind:
        raise StoreUnavailable(f"store key {key} is a {got}, not a {kind}; nothing applied")


def decode_view(e: Entry) -> Any:
    """The operator-side view of the entry's value, identical to what the Redis backend
    decodes."""
    value = e.value
    if isinstance(value, float):
        return value
    if isinstance(value, (str, DocText)):
        return decode_value(entry_text(e) or "")
    if isinstance(value, dict):
        return {k: float(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    return [[decode_value(m), s] for s, m in value.items]


# A sweep reads every resident key: on the request path one runs once the commits since the
# last one number `sweep_every` and at least this share of the keys resident, so it costs
# each commit a bounded number of key reads (8 at 1/8) however large the store has grown.
# The idempotency markers (one a request and slot, kept an hour) make a busy store large: at
# 250,000 keys a sweep takes about 16 ms, which every 1,024 commits was 15 µs a commit and a
# 16 ms stall of the loop twice a second at 2,000 requests a second. Between two sweeps a
# store of N keys keeps, beyond its live keys, at most what N / 8 commits wrote (and never
# for longer than `sweep_interval_s`).
SWEEP_SHARE = 8


class Keyspace:
    """Keys with optional expiry; an expired key is dropped when touched, and `sweep` drops
    every expired key (every `sweep_interval_s` seconds, and on the request path every
    `sweep_every` writes or one write per `SWEEP_SHARE` keys resident, whichever is more)."""

    def __init__(self, clock: Clock, sweep_every: int, sweep_interval_s: float) -> None:
        self._clock = clock
        self._sweep_every = sweep_every
        self._sweep_interval_s = sweep_interval_s
        self._data: dict[str, Entry] = {}
        self._since_sweep = 0
        self._last_sweep = clock.now()

    # --- primitives (each mirrors one Redis command) ---------------------------------------

    def _entry(self, key: str, now: float) -> Entry | None:
        e = self._data.get(key)
        if e is not None and e.expires_at is not None and e.expires_at <= now:
            del self._data[key]
            return None
        return e

    def _value(self, key: str, now: float) -> Value | None:
        e = self._entry(key, now)
        if e is None:
            return None
        return entry_text(e) if e.value is DOC_TEXT else e.value

    def _text(self, key: str, now: float) -> str | None:
        e = self._entry(key, now)
        return None if e is None else entry_text(e)

    def _doc(self, key: str, now: float) -> dict[str, Any] | None:
        """`decode_doc` of a text key, cached on its entry until the key is written again."""
        e = self._entry(key, now)
        return None if e is None else entry_doc(e)

    def _live(self, key: str, kind: type, now: float) -> Entry | None:
        """The entry of `key` when it holds a live value of exactly `kind`, else None: the test
        of the writers that update a hash or a sorted set in place, and then only set its
        expiry (`expiry`) where `_put` of the same value would do just that."""
        e = self._data.get(key)
        if (e is not None and type(e.value) is kind
                and (e.expires_at is None or e.expires_at > now)):
            return e
        return None

    def _put(self, key: str, value: Value, ttl_s: float | None, now: float) -> Entry:
        # An entry already there is reused (its value, expiry and what was read of it
        # replaced): no allocation for the keys every commit rewrites. What was read of it
        # stays when the value does (a pin rewritten as it was, a hash counted into in
        # place): a text's document and version are the same for the same text.
        expires_at = expiry(ttl_s, now)
        e = self._data.get(key)
        if e is None:
            e = self._data[key] = Entry(value, expires_at)
        else:
            if value is not e.value and not (type(value) is str and value == e.value):
                e.doc, e.version = UNDECODED, None
            e.value, e.expires_at = value, expires_at
        return e

    def sweep(self) -> int:
        """Drop every expired key now; returns how many were dropped."""
        now = self._clock.now()
        dead = [
            k for k, e in self._data.items() if e.expires_at is not None and e.expires_at <= now
        ]
        for k in dead:
            del self._data[k]
        self._since_sweep = 0
        self._last_sweep = now
        return len(dead)

    def sweep_if_due(self) -> int:
        """Sweep when `sweep_interval_s` passed since the last sweep; returns keys dropped."""
        if self._clock.now() - self._last_sweep < self._sweep_interval_s:
            return 0
        return self.sweep()

    def _maybe_sweep(self, now: float) -> None:
        since = self._since_sweep = self._since_sweep + 1
        if (
            (since >= self._sweep_every and since * SWEEP_SHARE >= len(self._data))
            or now - self._last_sweep >= self._sweep_interval_s
        ):
            self.sweep()

    def __len__(self) -> int:
        """Keys resident (expired ones included until touched or swept)."""
        return len(self._data)

    # --- request path ----------------------------------------------------------------------

def num(value: Value | None) -> float:
    if value is None:
        return 0.0
    if isinstance(value, float):
        return value
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0


def floats(items: list[str]) -> list[float]:
    out = []
    for s in items:
        try:
            out.append(float(s))
        except ValueError:
            continue
    return out
