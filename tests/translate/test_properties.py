"""Property tests: what both formats can express survives decode∘encode in every direction,
and translation is deterministic (same input → same bytes)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from orca_cli.translate import TranslationOptions, decode_request, encode_request, translate_request
from orca_cli.translate.model import Image, Message, Part, Request, Text, Tool, ToolCall, ToolResult
from orca_cli.types import APIS, Api
from tests.translate.samples import PNG

OPTS = TranslationOptions()
FAMILY = {"anthropic": "anthropic", "openai": "openai", "responses": "openai"}

words = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=30
).filter(lambda s: s.strip() == s and s != "")
ids = st.from_regex(r"[A-Za-z0-9_-]{4,20}", fullmatch=True)
names = st.from_regex(r"[a-z][a-z0-9_]{1,15}", fullmatch=True)
scalars = st.one_of(st.integers(-1000, 1000), st.booleans(), words)
args = st.dictionaries(names, scalars, max_size=3).map(lambda d: orjson.dumps(d).decode())


@st.composite
def requests(draw: st.DrawFn) -> Request:
    tools = [
        Tool(n, draw(words), {"type": "object", "properties": {}})
        for n in draw(st.lists(names, min_size=1, max_size=3, unique=True))
    ]
    messages: list[Message] = []
    used: set[str] = set()
    for _ in range(draw(st.integers(1, 3))):
        user: list[Part] = [Text(draw(words))]
        if draw(st.booleans()):
            user.append(Image("image/png", PNG))
        messages.append(Message("user", user))
        assistant: list[Part] = []
        if draw(st.booleans()):
            assistant.append(Text(draw(words)))
        calls = []
        for _ in range(draw(st.integers(0, 2))):
            call_id = draw(ids.filter(lambda i: i not in used))
            used.add(call_id)
            calls.append(ToolCall(call_id, draw(st.sampled_from(tools)).name, draw(args)))
        assistant.extend(calls)
        if not assistant:
            assistant.append(Text(draw(words)))
        messages.append(Message("assistant", assistant))
        if calls:
            messages.append(Message("user", [ToolResult(c.id, [Text(draw(words))]) for c in calls]))
    messages.append(Message("user", [Text(draw(words))]))
    req = Request(messages=messages, system=[Text(draw(words))], tools=tools)
    req.tool_choice = draw(st.sampled_from([None, "auto", "required"]))
    req.max_tokens = draw(st.integers(1, 4000))
    req.temperature = draw(st.sampled_from([None, 0.0, 0.5, 1.0]))
    return req


def _norm_parts(parts: list[Any]) -> list[Any]:
    out: list[Any] = []
    for p in parts:
        if isinstance(p, Text):
            if not p.text:
                continue
            if out and out[-1][0] == "text":
                out[-1] = ("text", out[-1][1] + "\n\n" + p.text)
            else:
                out.append(("text", p.text))
        elif isinstance(p, Image):
            out.append(("image", p.media_type, p.data))
        elif isinstance(p, ToolCall):
            out.append(("call", p.id, p.name, orjson.loads(p.arguments or "{}")))
        elif isinstance(p, ToolResult):
            out.append(("result", p.call_id, _norm_parts(p.content)))
    return out


def normal(req: Request) -> dict[str, Any]:
    messages: list[tuple[str, list[Any]]] = []
    system = [t.text for t in req.system]
    rest = list(req.messages)
    while rest and rest[0].role in ("system", "developer"):  # a leading system message
        system.extend(t.text for t in rest.pop(0).parts if isinstance(t, Text))
    for m in rest:
        parts = list(m.parts)
        if messages and messages[-1][0] == m.role:
            messages[-1][1].extend(parts)
        else:
            messages.append((m.role, parts))
    return {
        "system": "\n\n".join(system),
        "messages": [(role, _norm_parts(parts)) for role, parts in messages],
        "tools": [(t.name, t.description) for t in req.tools],
        "tool_choice": req.tool_choice,
        "max_tokens": req.max_tokens,
        "temperature": req.temperature,
    }


def _body(req: Request, api: Api) -> dict[str, Any]:
    raw, _ = encode_request(req, api, model="m", family=FAMILY[api], options=OPTS)
    return orjson.loads(raw)  # type: ignore[no-any-return]


@settings(max_examples=60, deadline=None)
@given(requests())
def test_decode_encode_keeps_what_both_express(req: Request) -> None:
    expected = normal(req)
    for src in APIS:
        body = _body(req, src)
        assert normal(decode_request(body, src)) == expected, src
        for dst in APIS:
            if dst == src:
                continue
            out = translate_request(
                copy.deepcopy(body),
                src,
                dst,
                model="m",
                target_model_family=FAMILY[dst],
                options=OPTS,
            )
            assert out.report["untranslatable"] == []
            got = normal(decode_request(orjson.loads(out.body), dst))
            assert got == expected, (src, dst)


@settings(max_examples=40, deadline=None)
@given(requests())
def test_translation_is_deterministic(req: Request) -> None:
    for src in APIS:
        body = _body(req, src)
        for dst in APIS:
            if dst == src:
                continue
            a = translate_request(
                copy.deepcopy(body),
                src,
                dst,
                model="m",
                target_model_family=FAMILY[dst],
                options=OPTS,
            )
            b = translate_request(
                orjson.loads(orjson.dumps(body)),
                src,
                dst,
                model="m",
                target_model_family=FAMILY[dst],
                options=OPTS,
            )
            assert a.body == b.body and a.report == b.report
