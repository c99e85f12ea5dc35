"""The body of a same-format attempt (`proxy.forward._upstream_body`): the client's bytes with
only `model` swapped and an output limit above the model's `max_output_tokens` lowered in
place; a re-encode only when a patch would be ambiguous or orca's reasoning tags were
resolved (SPEC §13.2 fast path, rule 4)."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from orca_cli.proxy.forward import Inbound, _patch_limit, _swap_model, _upstream_body
from orca_cli.translate.native import Resolved
from orca_cli.types import Api


def _inbound(raw: bytes, api: Api = "anthropic") -> Inbound:
    body: dict[str, Any] = orjson.loads(raw)
    return Inbound(api=api, path="/v1/messages", body=body, headers=(), stream=False,
                   add_include_usage=False, max_tokens=body.get("max_tokens"),
                   orca_headers=lambda _: [], healthy=lambda _c, _k: True, raw=raw,
                   model_value=body["model"])


RAW = (b'{"model": "orca/cc", "max_tokens": 128000,\n'
       b' "messages": [{"role": "user", "content": "hi"}]}')


def test_a_body_within_the_limit_is_the_clients_bytes() -> None:
    inb = _inbound(RAW.replace(b"128000", b"1000"))
    assert _upstream_body(inb, "orca/cc", 4096) is inb.raw
    assert _upstream_body(inb, "claude-t", 4096) == inb.raw.replace(b"orca/cc", b"claude-t")
    assert _upstream_body(_inbound(RAW), "orca/cc", None) == RAW


def test_a_limit_above_the_models_is_lowered_in_the_clients_bytes() -> None:
    got = _upstream_body(_inbound(RAW), "claude-t", 4096)
    assert got == RAW.replace(b"orca/cc", b"claude-t").replace(b"128000", b"4096")
    chat = (b'{"model":"gpt-t","max_tokens":9000,"max_completion_tokens":9000,'
            b'"messages":[{"role":"user","content":"hi"}]}')
    assert _upstream_body(_inbound(chat, "openai"), "gpt-t", 2000) == chat.replace(
        b"9000", b"2000")


def test_an_ambiguous_limit_is_lowered_by_a_re_encode() -> None:
    """`"max_tokens"` also names a tool parameter: the top-level one cannot be told by the
    bytes alone, so the parsed body is re-encoded with the limit lowered there only."""
    raw = (b'{"model": "orca/cc", "max_tokens": 128000, "tools": [{"name": "t", '
           b'"input_schema": {"type": "object", "properties": {"max_tokens": '
           b'{"type": "integer"}}}}], "messages": [{"role": "user", "content": "hi"}]}')
    got = orjson.loads(_upstream_body(_inbound(raw), "claude-t", 4096))
    assert got["max_tokens"] == 4096 and got["model"] == "claude-t"
    assert got["tools"] == orjson.loads(raw)["tools"]


def test_a_resolved_body_is_what_goes() -> None:
    inb = _inbound(RAW)
    resolved = Resolved({**inb.body, "messages": [{"role": "user", "content": "swapped"}]},
                        dropped=1, restored=0)
    got = orjson.loads(_upstream_body(inb, "claude-t", 4096, resolved))
    assert got == {"model": "claude-t", "max_tokens": 4096,
                   "messages": [{"role": "user", "content": "swapped"}]}


def _swap_by_slices(raw: bytes, value: str, model: str) -> bytes | None:
    """`_swap_model` as it was before its tail was joined through a memoryview."""
    at = raw.find(b'"model"')
    if at < 0 or raw.find(b'"model"', at + 7) >= 0:
        return None
    quoted = orjson.dumps(value)
    for sep in (b'"model":', b'"model": '):
        needle = sep + quoted
        if raw.startswith(needle, at):
            if model == value:
                return raw
            return raw[:at] + sep + orjson.dumps(model) + raw[at + len(needle):]
    return None


_names = st.text(min_size=0, max_size=12)


@given(st.text(max_size=40), _names, _names, st.booleans(), st.booleans())
def test_the_model_swap_is_the_sliced_one(prefix: str, value: str, model: str, spaced: bool,
                                          twice: bool) -> None:
    """The swap joins the body's tail through a memoryview: the same bytes as slicing it."""
    sep = b'"model": ' if spaced else b'"model":'
    raw = (b'{"p": ' + orjson.dumps(prefix) + b", " + sep + orjson.dumps(value)
           + (b', "x": {"model": 1}' if twice else b"") + b', "messages": []}')
    got = _swap_model(raw, value, model)
    assert got == _swap_by_slices(raw, value, model)
    assert type(got) is bytes or got is None


def test_a_model_that_is_the_first_key_is_swapped_in_the_bytes_beside_a_tool_parameter() -> None:
    """Codex sends `model` first, and its `spawn_agent` tool has a `model` parameter: the
    first key is the top-level one, so the client's bytes go with only it swapped (no
    re-encode); a `model` that is not the first key beside another stays ambiguous."""
    tools = (b'"tools": [{"type": "function", "name": "spawn_agent", "parameters": '
             b'{"type": "object", "properties": {"model": {"type": "string"}}}}]')
    raw = b'{"model":"orca/coding","stream":true,' + tools + b',"input":[]}'
    got = _swap_model(raw, "orca/coding", "gpt-4.1-mini")
    assert got == raw.replace(b'"model":"orca/coding"', b'"model":"gpt-4.1-mini"')
    assert orjson.loads(got)["tools"] == orjson.loads(raw)["tools"]
    assert _swap_model(b' {\n  "model": "a", ' + tools + b"}", "a", "b") == (
        b' {\n  "model": "b", ' + tools + b"}")
    later = b'{"stream":true,"model":"orca/coding",' + tools + b"}"
    assert _swap_model(later, "orca/coding", "gpt-4.1-mini") is None


def test_a_last_top_level_limit_is_lowered_in_the_bytes_beside_a_tool_parameter() -> None:
    """Claude Code sends `max_tokens` among its last keys; a tool with a `max_tokens`
    parameter no longer forces a re-encode: the last occurrence's tail closes exactly the
    top-level object, so it is the top-level key."""
    tools = (b'"tools":[{"name":"t","input_schema":{"type":"object","properties":'
             b'{"max_tokens":{"type":"integer"}}}}]')
    raw = (b'{"model":"orca/cc","messages":[{"role":"user","content":"hi"}],' + tools
           + b',"max_tokens":128000,"thinking":{"type":"adaptive"},"stream":true}\n')
    got = _patch_limit(raw, "max_tokens", 128000, 4096)
    assert got == raw.replace(b'"max_tokens":128000', b'"max_tokens":4096')
    # the last occurrence nested (in a trailing object): told apart, then ambiguous
    nested = (b'{"max_tokens":128000,' + tools + b',"metadata":{"max_tokens":128000}}')
    assert _patch_limit(nested, "max_tokens", 128000, 4096) is None
    # a text that quotes the key is a string, not a key
    quoted = (b'{"messages":[{"role":"user","content":"set \\"max_tokens\\": 9}"}],'
              b'"max_tokens":128000}')
    assert _patch_limit(quoted, "max_tokens", 128000, 4096) == quoted.replace(
        b'"max_tokens":128000}', b'"max_tokens":4096}')


_keys = st.sampled_from(["max_tokens", "x"])
_json = st.recursive(st.integers(0, 10**6) | st.text(max_size=6),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_keys, inner, max_size=3), max_leaves=12)


_others = st.dictionaries(st.sampled_from(["a", "b", "c"]), _json, max_size=3)


@given(_others, _others, st.integers(0, 10**6), st.booleans())
def test_a_patched_limit_is_the_top_level_one_or_none(before: dict[str, Any],
                                                      after: dict[str, Any], value: int,
                                                      spaced: bool) -> None:
    """Whatever nests `max_tokens` keys before or after it, a patch lowers the top-level one
    only."""
    body = {**before, "max_tokens": value, **{f"z{k}": v for k, v in after.items()}}
    raw = (orjson.dumps(body, option=orjson.OPT_INDENT_2) if spaced else orjson.dumps(body))
    got = _patch_limit(raw, "max_tokens", value, 7)
    if got is not None:
        assert orjson.loads(got) == {**body, "max_tokens": 7}
