"""Translated conversation units kept for the next turn of their session (SPEC §13.2).

An agent resends its whole history every turn; through translation, all of it but the newest
messages was translated by the turn before. `translate.translate_request` cuts a conversation
into units (a message, or a run of Responses items that make one) and asks a `UnitScope` for
each unit's translation by its JSON bytes; this module keeps them.

* One cache per process, bounded by entries (`max_entries`, default 16,384) and by the JSON
  bytes of the units it holds (`max_bytes`, default 8 MiB). In memory an entry is its bytes
  plus about 1 KB (the translated message: ~25 MB at most). A unit larger than
  `max_unit_bytes` (64 KiB) is not kept: a large message is mostly one long string, which
  translation passes through at little cost.
* Entries are scoped: a `UnitScope` belongs to one (inbound format, target format, model
  family, upstream model, `TranslationOptions`), everything a unit's translation depends on,
  so two targets never share an entry. Within a scope the least recently used entry goes
  first; across scopes, the scope used least recently gives first.
* A hit returns the very object a miss stored: the translation of a unit is a pure function of
  its bytes and its scope, so the request's bytes are the same either way (tested).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

from orca_cli.translate.units import UnitOut

__all__ = ["UnitCache", "UnitScope"]

MAX_ENTRIES = 16384
MAX_BYTES = 8 << 20
MAX_UNIT_BYTES = 64 << 10


class UnitCache:
    """See the module docstring. `hits` / `misses` count the units looked up."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES,
                 max_unit_bytes: int = MAX_UNIT_BYTES) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_unit_bytes = min(max_unit_bytes, max_bytes)
        self.entries = 0
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._scopes: dict[Hashable, UnitScope] = {}
        self._tick = 0  # a clock of lookups: which scope was used last

    def scope(self, context: Hashable) -> UnitScope:
        """The view of the cache for one translation context (see the module docstring)."""
        found = self._scopes.get(context)
        if found is None:
            found = self._scopes[context] = UnitScope(self)
        return found

    def __len__(self) -> int:
        return self.entries

    def _evict(self) -> None:
        """Drop entries until within bounds: the oldest of the least recently used scope."""
        while self.entries > self.max_entries or self.bytes > self.max_bytes:
            victim = min((s for s in self._scopes.values() if s.kept),
                         key=lambda s: s.used)
            key, _ = victim.kept.popitem(last=False)
            self.entries -= 1
            self.bytes -= len(key)


class UnitScope:
    """`translate.UnitMemo` over one scope of a `UnitCache`."""

    __slots__ = ("_cache", "kept", "used")

    def __init__(self, cache: UnitCache) -> None:
        self._cache = cache
        self.kept: OrderedDict[bytes, UnitOut] = OrderedDict()
        self.used = 0

    def get_many(self, keys: list[bytes]) -> list[UnitOut | None]:
        cache = self._cache
        cache._tick += 1
        self.used = cache._tick
        get, refresh = self.kept.get, self.kept.move_to_end
        out: list[UnitOut | None] = []
        for key in keys:  # a key too large to keep is never found
            found = get(key)
            if found is not None:
                refresh(key)
            out.append(found)
        misses = out.count(None)
        cache.hits += len(out) - misses
        cache.misses += misses
        return out

    def put_many(self, keys: list[bytes], values: list[UnitOut]) -> None:
        cache, kept = self._cache, self.kept
        limit = cache.max_unit_bytes
        for key, value in zip(keys, values, strict=True):
            if len(key) > limit:
                continue
            if key not in kept:
                cache.entries += 1
                cache.bytes += len(key)
                # orjson's bytes keep their 4 KiB write buffer: keep a copy of the right size
                key = memoryview(key).tobytes()
            kept[key] = value
        cache._evict()
