"""Translating unit by unit with a memo (what the request path does) gives exactly the bytes,
report and tool map of translating the whole body at once, cold or warm: fidelity rule 1
(deterministic, cache-stable) holds whether a message was translated now or turns ago."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orca_cli.translate import TranslationOptions, translate_request
from orca_cli.translate.units import UnitOut, units
from orca_cli.types import APIS, Api
from tests.translate.golden.make_fixtures import SOURCES
from tests.translate.samples import PNG, REQUESTS

FAMILY = {"anthropic": "anthropic", "openai": "deepseek", "responses": "openai"}
MODEL = {"anthropic": "claude-x", "openai": "deepseek-chat", "responses": "gpt-x"}
OPTIONS = [
    TranslationOptions(),
    TranslationOptions(anthropic_cache="off", foreign_reasoning="as_text"),
    TranslationOptions(cache_ttl_1h=True, target_reasoning=True, max_tokens_cap=100),
    TranslationOptions(inbound_family="deepseek", foreign_reasoning="as_text"),
    TranslationOptions(inbound_family="anthropic"),
]


class DictMemo:
    """The simplest memo: a dict, never evicting (the request path's is `proxy.unit_cache`)."""

    def __init__(self) -> None:
        self.kept: dict[bytes, UnitOut] = {}
        self.hits = 0

    def get_many(self, keys: list[bytes]) -> list[UnitOut | None]:
        out = [self.kept.get(k) for k in keys]
        self.hits += sum(1 for o in out if o is not None)
        return out

    def put_many(self, keys: list[bytes], values: list[UnitOut]) -> None:
        self.kept.update(zip(keys, values, strict=True))


def _run(body: dict[str, Any], src: Api, dst: Api, options: TranslationOptions,
         memo: DictMemo | None) -> tuple[Any, ...]:
    try:
        out = translate_request(copy.deepcopy(body), src, dst, model=MODEL[dst],
                                target_model_family=FAMILY[dst], options=options, memo=memo)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # as `xlate.cross` catches
        return ("raised", type(exc))
    return (out.body, out.report, dict(out.tools))


def assert_same_every_way(body: dict[str, Any], src: Api) -> None:
    for dst in APIS:
        if dst == src:
            continue
        for options in OPTIONS:
            whole = _run(body, src, dst, options, None)
            memo = DictMemo()
            cold = _run(body, src, dst, options, memo)
            warm = _run(body, src, dst, options, memo)
            assert cold == whole, (src, dst, options)
            assert warm == whole, (src, dst, options)


def _tricky(src: Api) -> dict[str, Any]:
    """Shapes where a message's translation could depend on its neighbours."""
    said = {"type": "text", "text": "same words"}
    if src == "anthropic":
        return {"model": "m", "max_tokens": 50, "system": "sys", "messages": [
            {"role": "user", "content": [said, {"type": "text", "text": "a",
                                                "cache_control": {"type": "ephemeral"}}]},
            {"role": "user", "content": [said]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hm", "signature": "sig"},
                {"type": "tool_use", "id": "call.1", "name": "t", "input": {"x": 1}}]},
            {"role": "user", "content": [
                {"type": "text", "text": "before the result"},
                {"type": "tool_result", "tool_use_id": "call.1", "content": "ok"}]},
            {"role": "user", "content": [said]},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": [said]},
            {"role": "user", "content": [{"type": "document", "source": {
                "type": "url", "url": "https://x/y.pdf"}}, {"type": "mystery"}]},
        ], "tools": [{"name": "t", "input_schema": {"type": "object"}}]}
    if src == "openai":
        return {"model": "m", "messages": [
            {"role": "system", "content": "sys"},
            {"role": "developer", "content": "dev"},
            {"role": "user", "content": None},
            {"role": "tool", "tool_call_id": "c0", "content": "orphan"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "reasoning_content": "think",
             "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": "t", "arguments": "{\"a\":1}"}},
                            {"id": "c 2", "type": "function",
                             "function": {"name": "t", "arguments": "not json"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "r1"},
            {"role": "tool", "tool_call_id": "c 2", "content": [{"type": "text", "text": "r2"}]},
            {"role": "user", "content": [{"type": "text", "text": "look"}, {
                "type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]},
            {"role": "developer", "content": "late"},
            {"role": "assistant", "content": "same"},
            {"role": "assistant", "content": "same"},
            {"role": "wizard", "content": "?"},
            {"role": "user", "content": "hi"},
        ], "tools": [{"type": "function", "function": {"name": "t", "parameters": {}}}]}
    return {"model": "m", "instructions": "sys", "input": [
        "not an item",
        {"type": "mystery"},
        {"role": "developer", "content": "dev"},
        {"role": "developer", "content": "dev2"},
        {"role": "user", "content": "hi"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "more"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"},
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "calling"}]},
        {"type": "mystery"},
        {"type": "function_call", "call_id": "c1", "name": "t", "arguments": "{}"},
        {"type": "web_search_call", "action": {"type": "search", "query": "q"}},
        {"type": "function_call_output", "call_id": "c1", "output": "r"},
        {"role": "user", "content": "same"},
        {"type": "custom_tool_call", "call_id": "c2", "name": "p", "input": "raw"},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "ok"},
        {"role": "system", "content": "late"},
        {"role": "user", "content": "same"},
    ], "tools": [{"type": "function", "name": "t", "parameters": {}},
                 {"type": "custom", "name": "p"}]}


CORPUS = [(f"sample-{src}-{stream}", src, REQUESTS[src](stream))
          for src in APIS for stream in (False, True)]
GOLDEN = Path(__file__).parent / "golden"
CORPUS += [(f"golden-{name}", src, orjson.loads((GOLDEN / f"{name}.{src}.json").read_bytes()))
           for name, (src, _) in SOURCES.items()]
CORPUS += [(f"tricky-{src}", src, _tricky(src)) for src in APIS]


@pytest.mark.parametrize(("name", "src", "body"), CORPUS, ids=[c[0] for c in CORPUS])
def test_unit_by_unit_equals_whole_cold_and_warm(name: str, src: Api,
                                                 body: dict[str, Any]) -> None:
    assert_same_every_way(body, src)


def test_a_warm_turn_reuses_every_unit_but_the_new_ones() -> None:
    body = REQUESTS["openai"](False)
    memo = DictMemo()
    opts = TranslationOptions()
    translate_request(body, "openai", "anthropic", model="c", target_model_family="anthropic",
                      options=opts, memo=memo)
    n = len(units(body, "openai"))
    later = copy.deepcopy(body)
    later["messages"] += [{"role": "assistant", "content": "Explained."},
                          {"role": "user", "content": "Thanks."}]
    memo.hits = 0
    warm = translate_request(later, "openai", "anthropic", model="c",
                             target_model_family="anthropic", options=opts, memo=memo)
    assert memo.hits == n
    whole = translate_request(later, "openai", "anthropic", model="c",
                              target_model_family="anthropic", options=opts)
    assert warm.body == whole.body


def test_markers_never_stick_to_a_kept_unit() -> None:
    """A breakpoint goes on a copy: the block kept for the next turn stays unmarked, so the
    next turn's breakpoints are where they belong, and identical messages stay apart."""
    said = {"role": "user", "content": "same"}
    turn = [said, {"role": "assistant", "content": "a"}, said]
    memo = DictMemo()
    bodies = []
    for extra in ([], [{"role": "assistant", "content": "b"}, said]):
        body = {"model": "m", "messages": turn + extra}
        out = translate_request(body, "openai", "anthropic", model="c",
                                target_model_family="anthropic",
                                options=TranslationOptions(), memo=memo)
        bodies.append(orjson.loads(out.body))
        assert out.body == translate_request(body, "openai", "anthropic", model="c",
                                             target_model_family="anthropic",
                                             options=TranslationOptions()).body
    marked = [[("cache_control" in b) for m in b_["messages"] for b in m["content"]]
              for b_ in bodies]
    assert marked == [[True, False, True], [False, False, True, False, True]]


def test_responses_items_of_one_message_are_one_unit() -> None:
    body = _tricky("responses")
    got = [[i.get("type", "message") if isinstance(i, dict) else i for i in unit]
           for unit in units(body, "responses")]
    assert got == [
        ["mystery"], ["message"], ["message"], ["message", "message"],
        ["reasoning", "message", "mystery", "function_call", "web_search_call"],
        ["function_call_output", "message"], ["custom_tool_call"],
        ["custom_tool_call_output"], ["message"], ["message"],
    ]
    assert units({"input": "just text"}, "responses") == ["just text"]


# Random bodies of every format, shaped by the decoders' branches.
text = st.text(alphabet="ab c\n", min_size=0, max_size=6)
call_ids = st.sampled_from(["c1", "c2", "call 3", "toolu_4"])


def _openai_message() -> st.SearchStrategy[dict[str, Any]]:
    call = st.builds(lambda i, a: {"id": i, "type": "function",
                                   "function": {"name": "t", "arguments": a}},
                     call_ids, st.sampled_from(["{}", '{"a":1}', "oops"]))
    part = st.one_of(st.builds(lambda t: {"type": "text", "text": t}, text),
                     st.just({"type": "image_url", "image_url": {"url": "https://x/i.png"}}),
                     st.just({"type": "input_audio"}))
    content = st.one_of(st.none(), text, st.lists(part, max_size=2))
    return st.one_of(
        st.builds(lambda r, c: {"role": r, "content": c},
                  st.sampled_from(["system", "developer", "user", "other"]), content),
        st.builds(lambda c, calls, think: {"role": "assistant", "content": c,
                                           "tool_calls": calls, "reasoning_content": think},
                  content, st.lists(call, max_size=2), st.one_of(st.none(), text)),
        st.builds(lambda i, c: {"role": "tool", "tool_call_id": i, "content": c},
                  call_ids, content),
    )


def _anthropic_message() -> st.SearchStrategy[dict[str, Any]]:
    marker = st.sampled_from([{}, {"cache_control": {"type": "ephemeral"}}])
    block = st.one_of(
        st.builds(lambda t, m: {"type": "text", "text": t, **m}, text, marker),
        st.builds(lambda i: {"type": "tool_use", "id": i, "name": "t", "input": {"k": 1}},
                  call_ids),
        st.builds(lambda i, t: {"type": "tool_result", "tool_use_id": i, "content": t},
                  call_ids, text),
        st.builds(lambda t, s: {"type": "thinking", "thinking": t, "signature": s},
                  text, st.sampled_from(["sig", ""])),
        st.just({"type": "redacted_thinking", "data": "r"}),
        st.just({"type": "document", "source": {"type": "url", "url": "https://x/d.pdf"}}),
        st.just({"type": "server_tool_use"}),
    )
    return st.builds(lambda r, c: {"role": r, "content": c},
                     st.sampled_from(["user", "assistant"]),
                     st.one_of(text, st.lists(block, max_size=3)))


def _responses_item() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(lambda r, t: {"type": "message", "role": r, "content": t},
                  st.sampled_from(["user", "assistant", "system", "developer"]), text),
        st.builds(lambda i: {"type": "function_call", "call_id": i, "name": "t",
                             "arguments": "{}"}, call_ids),
        st.builds(lambda i, t: {"type": "function_call_output", "call_id": i, "output": t},
                  call_ids, text),
        st.builds(lambda t, e: {"type": "reasoning", "summary": [
            {"type": "summary_text", "text": t}], "encrypted_content": e},
                  text, st.sampled_from(["enc", None])),
        st.just({"type": "custom_tool_call", "call_id": "c9", "name": "p", "input": "x"}),
        st.just({"type": "item_reference", "id": "x"}),
        st.just(7),
    )


BODIES = {
    "openai": st.builds(lambda ms: {"model": "m", "messages": ms},
                        st.lists(_openai_message(), max_size=8)),
    "anthropic": st.builds(lambda ms: {"model": "m", "max_tokens": 9, "messages": ms},
                           st.lists(_anthropic_message(), max_size=8)),
    "responses": st.builds(lambda it: {"model": "m", "input": it},
                           st.lists(_responses_item(), max_size=10)),
}


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(APIS).flatmap(lambda src: st.tuples(st.just(src), BODIES[src])))
def test_random_bodies_unit_by_unit_equal_whole(case: tuple[Api, dict[str, Any]]) -> None:
    src, body = case
    assert_same_every_way(body, src)
