"""The cache of translated conversation units (SPEC §13.2): a hit gives the bytes a miss gives,
it stays within its bounds, and two translation targets never share an entry."""

from __future__ import annotations

import copy
import tracemalloc
from typing import Any

import orjson

from orca_cli.config.schema import ChannelConfig, Config, ModelConfig, TranslationConfig
from orca_cli.proxy.unit_cache import UnitCache
from orca_cli.proxy.xlate import Translations
from orca_cli.translate import TranslationOptions, translate_request
from orca_cli.translate.units import UnitOut
from tests.translate.samples import REQUESTS


def _out(tag: str) -> UnitOut:
    return UnitOut([tag], [], [], 0, [])


def _translate(body: dict[str, Any], memo: Any, options: TranslationOptions | None = None,
               model: str = "claude-x") -> bytes:
    return translate_request(copy.deepcopy(body), "openai", "anthropic", model=model,
                             target_model_family="anthropic",
                             options=options or TranslationOptions(), memo=memo).body


def test_a_hit_gives_the_bytes_of_a_miss() -> None:
    cache = UnitCache()
    memo = cache.scope("ctx")
    body = REQUESTS["openai"](False)
    cold = _translate(body, memo)
    assert cache.hits == 0 and cache.misses == len(body["messages"]) == len(cache)
    warm = _translate(body, memo)
    assert cache.hits == len(body["messages"])
    assert warm == cold == _translate(body, None)


def test_bounded_by_entries_least_recently_used_first() -> None:
    cache = UnitCache(max_entries=3)
    memo = cache.scope("ctx")
    memo.put_many([b"a", b"b", b"c"], [_out("a"), _out("b"), _out("c")])
    assert memo.get_many([b"a"])[0] is not None  # now b is the oldest
    memo.put_many([b"d"], [_out("d")])
    assert len(cache) == 3
    assert [o is not None for o in memo.get_many([b"a", b"b", b"c", b"d"])] == [
        True, False, True, True]


def test_bounded_by_bytes_and_large_units_not_kept() -> None:
    cache = UnitCache(max_bytes=100, max_unit_bytes=40)
    memo = cache.scope("ctx")
    memo.put_many([b"x" * 41], [_out("big")])
    assert len(cache) == 0 and memo.get_many([b"x" * 41]) == [None]
    keys = [bytes([65 + i]) * 30 for i in range(4)]
    memo.put_many(keys, [_out(str(i)) for i in range(4)])
    assert cache.bytes == 90 and len(cache) == 3
    assert memo.get_many(keys[:1]) == [None]  # the oldest went


def test_the_scope_used_least_recently_gives_first() -> None:
    cache = UnitCache(max_entries=4)
    old, new = cache.scope("old"), cache.scope("new")
    old.put_many([b"1", b"2"], [_out("1"), _out("2")])
    new.put_many([b"3", b"4"], [_out("3"), _out("4")])
    new.get_many([b"3"])
    new.put_many([b"5"], [_out("5")])
    gone, kept = old.get_many([b"1", b"2"])
    assert gone is None and kept is not None
    assert all(o is not None for o in new.get_many([b"3", b"4", b"5"]))


def test_different_options_never_share_an_entry() -> None:
    cache = UnitCache()
    auto, off = TranslationOptions(), TranslationOptions(anthropic_cache="off")
    a, b = cache.scope(("openai", "anthropic", "anthropic", "m", auto)), cache.scope(
        ("openai", "anthropic", "anthropic", "m", off))
    assert a is not b and a is cache.scope(("openai", "anthropic", "anthropic", "m", auto))
    body = REQUESTS["openai"](False)
    _translate(body, a, auto)
    before = cache.hits
    assert _translate(body, b, off) == _translate(body, None, off)
    assert cache.hits == before  # nothing of the other scope was found


def _config(**translation: Any) -> Config:
    ant = ChannelConfig(name="ant", type="anthropic", api="anthropic", models=("claude-x",),
                        cache_ttl_s=3600)
    oai = ChannelConfig(name="oai", type="openai", api="openai", models=("gpt-x", "claude-x"),
                        model_map={"claude-x": "anthropic/claude-x"})
    return Config(channels=[ant, oai], models={"claude-x": ModelConfig(max_output_tokens=1000)},
                  translation=TranslationConfig(**translation))


def test_targets_worked_out_once_per_channel_model_and_format() -> None:
    cfg = _config(foreign_reasoning="as_text")
    tr = Translations(cfg)
    ant = cfg.channel("ant")
    assert ant is not None
    t = tr.target(ant, "claude-x", "openai")
    assert tr.target(ant, "claude-x", "openai") is t
    assert (t.dst, t.upstream_model, t.family) == ("anthropic", "claude-x", "anthropic")
    assert t.options == TranslationOptions(foreign_reasoning="as_text", cache_ttl_1h=True,
                                           max_tokens_cap=1000, anthropic_max_tokens=1000)
    assert tr.target(ant, "claude-x", "responses").memo is not t.memo
    oai = cfg.channel("oai")
    assert oai is not None
    other = tr.target(oai, "claude-x", "anthropic")
    assert (other.upstream_model, other.family) == ("anthropic/claude-x", "openai")
    assert other.memo is not t.memo


def test_unit_bytes_are_the_key() -> None:
    """Two bodies with the same message in another key order are two units (never one
    wrongly), and the same message in two bodies is one."""
    cache = UnitCache()
    memo = cache.scope("ctx")
    one = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    two = {"messages": [{"content": "hi", "role": "user"}], "model": "m"}
    _translate(one, memo)
    _translate(two, memo)
    assert len(cache) == 2
    _translate(orjson.loads(orjson.dumps(one)), memo)
    assert len(cache) == 2 and cache.hits == 1


def test_a_kept_key_takes_its_own_size() -> None:
    """orjson's bytes keep their 4 KiB write buffer; the cache keeps a copy of the key's size."""
    cache = UnitCache()
    memo = cache.scope("ctx")
    outs = [_out(str(i)) for i in range(200)]
    tracemalloc.start()
    try:
        keys = [orjson.dumps({"role": "user", "content": f"hi {i}"}) for i in range(200)]
        memo.put_many(keys, outs)
        del keys
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(cache) == 200 and held < 200 * 512  # not 200 × 4 KiB
