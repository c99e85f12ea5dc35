"""What the translation tests share: the three-format config, the SDK clients (recording the
request id of every answer), one question in each inbound format, a request's trace."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import openai
import orjson
from rich.console import Console

from orca_cli.cli.explain import render_trace
from orca_cli.testing import Sidecar
from orca_cli.types import Api

WAIT_S = 5.0

CONFIG = """
[[channels]]
name = "oa"
type = "openai-compatible"
base_url = "{up}/oa/v1"
keys = ["sk-oa-0"]
models = ["gpt-t", "gpt-5-mini"]

[models.gpt-t]
max_output_tokens = 2000

[[channels]]
name = "an"
type = "anthropic"
base_url = "{up}/an"
keys = ["sk-an-0"]
models = ["claude-t", "duo"]
cache_ttl_s = 3600

[[channels]]
name = "rs"
type = "openai"
api = "responses"
base_url = "{up}/rs/v1"
keys = ["sk-rs-0"]
models = ["codex-t", "duo"]
weight = 2

[routers.pair]
strategy = "cheapest"
mode = "price"
allowed_models = ["duo"]
[routers.pair.escalation]
mode = "off"
"""

# model -> (channel prefix, the channel's format)
TARGETS: dict[str, tuple[str, Api]] = {
    "gpt-t": ("oa", "openai"), "claude-t": ("an", "anthropic"), "codex-t": ("rs", "responses")}
CROSS = [(inbound, model) for inbound in ("openai", "anthropic", "responses")
         for model, (_, fmt) in TARGETS.items() if fmt != inbound]


RIDS: list[str] = []  # x-orca-request-id of every answer the SDK clients got


async def note(resp: httpx2.Response) -> None:
    RIDS.append(resp.headers.get("x-orca-request-id", ""))


def http_client() -> httpx2.AsyncClient:
    """The SDKs' HTTP client (both run on httpx2), noting every answer's request id."""
    return httpx2.AsyncClient(event_hooks={"response": [note]}, timeout=WAIT_S * 4)


def oa(st: Sidecar) -> openai.AsyncOpenAI:
    c = openai.AsyncOpenAI(base_url=st.base + "/v1", api_key="agent", max_retries=0,
                           http_client=http_client())
    st.closers.append(c.close)
    return c


def an(st: Sidecar) -> anthropic.AsyncAnthropic:
    c = anthropic.AsyncAnthropic(base_url=st.base, api_key="agent", max_retries=0,
                                 http_client=http_client())
    st.closers.append(c.close)
    return c


async def ask(st: Sidecar, inbound: str, model: str, *, stream: bool) -> tuple[str, str]:
    """One question through the SDK of `inbound`: (answer text, the answer's model name)."""
    if inbound == "openai":
        if stream:
            chunks = await oa(st).chat.completions.create(
                model=model, messages=[{"role": "user", "content": "hi"}], stream=True,
                stream_options={"include_usage": True})
            text, name = "", ""
            async for c in chunks:
                name = c.model
                if c.choices and c.choices[0].delta.content:
                    text += c.choices[0].delta.content
            return text, name
        r = await oa(st).chat.completions.create(
            model=model, messages=[{"role": "user", "content": "hi"}])
        return r.choices[0].message.content or "", r.model
    if inbound == "anthropic":
        if stream:
            async with an(st).messages.stream(
                    model=model, max_tokens=100,
                    messages=[{"role": "user", "content": "hi"}]) as s:
                got = await s.get_final_message()
            return "".join(b.text for b in got.content if b.type == "text"), got.model
        m = await an(st).messages.create(model=model, max_tokens=100,
                                          messages=[{"role": "user", "content": "hi"}])
        return "".join(b.text for b in m.content if b.type == "text"), m.model
    if stream:
        events = await oa(st).responses.create(model=model, input="hi", stream=True)
        final: Any = None
        async for ev in events:
            if ev.type == "response.completed":
                final = ev.response
        assert final is not None, "the stream had no response.completed"
        return final.output_text, final.model
    r2 = await oa(st).responses.create(model=model, input="hi")
    return r2.output_text, r2.model


async def trace_of(st: Sidecar) -> dict[str, Any]:
    """The trace of the last answer an SDK client got."""
    await st.settled(RIDS[-1])
    trace = await st.rt.gate.store.get_trace(RIDS[-1])
    assert trace is not None, "no trace"
    return dict(trace)




def explained(trace: dict[str, Any]) -> str:
    """What `orca explain` prints of `trace`, as plain text."""
    console = Console(record=True, width=200)
    console.print(render_trace(trace))
    return console.export_text()


def two_tier(router: str, base: str, strong: str) -> str:
    """A session router's config: one base and one strong model, its caps lifted."""
    return f"""
[routers.{router}]
strategy = "cheapest"
mode = "price"
session_aware = true
allowed_models = ["{base}", "{strong}"]
strong_pool = ["{strong}"]
[routers.{router}.escalation]
mode = "auto"
share_cap = 1.0
warmup_requests = 0
max_per_session = 5
"""


def one_channel_two_tier(url: str, channel: str, key: str, base: tuple[str, float, float],
                         strong: tuple[str, float, float], alias: tuple[str, str],
                         api: str = "") -> str:
    """A whole config: one channel of type `channel` (its name too; `api` a TOML value when
    given) serving a base and a strong model, each `(id, input, output)` in $ per 1M tokens,
    the workspace cap lifted, and `alias` = (pattern, router) sending agents to the session
    router (`two_tier`)."""
    api_line = f"api = {api}\n" if api else ""
    pattern, router = alias
    models = "".join(f'[models."{m}"]\ninput = {i}\noutput = {o}\n' for m, i, o in (base, strong))
    return f"""
[[channels]]
name = "{channel}"
type = "{channel}"
{api_line}base_url = "{url}"
keys = ["{key}"]
models = ["{base[0]}", "{strong[0]}"]

{models}
[workspace]
share_cap = 1.0

[aliases]
"{pattern}" = "orca/{router}"
""" + two_tier(router, base[0], strong[0])


HAIKU_45, SONNET_55 = "claude-haiku-4-5", "claude-sonnet-5-5"
THINKING_ENABLED_REFUSED = (
    '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" '
    'and "output_config.effort" to control thinking behavior.')


def messages_refusal(body: dict[str, Any]) -> str | None:
    """What the Messages API refuses of Claude Haiku 4.5 and Claude Sonnet 5.5, in its own
    words (the models' documentation and migration guides), or None.

    Haiku 4.5 knows only a thinking budget, no `role: "system"` message inside `messages`
    (from Opus 4.8 on), no message's own `output_config` (a per-turn effort, the 5.5
    generation) and no `thinking.display: "updates"`. Sonnet 5.5 knows only adaptive
    thinking, no sampling parameters, no forced tool call and no disabled thinking."""
    model = body.get("model")
    thinking = body.get("thinking") or {}
    kind = thinking.get("type")
    if model == HAIKU_45:
        if kind == "adaptive" or "effort" in (body.get("output_config") or {}):
            return "adaptive thinking is not supported on this model"
        if thinking.get("display") == "updates":
            return 'thinking.display: "updates" is not supported on this model'
        for i, msg in enumerate(body.get("messages") or []):
            if msg.get("role") == "system":
                return f"messages.{i}.role: 'system' is not supported on this model"
            if "output_config" in msg:
                return f"messages.{i}.output_config: Extra inputs are not permitted"
    if model == SONNET_55:
        if kind == "enabled":
            return THINKING_ENABLED_REFUSED
        for key in ("temperature", "top_p", "top_k"):
            if key in body:
                return f"{key} is deprecated for this model."
        if (body.get("tool_choice") or {}).get("type") in ("any", "tool"):
            return "Forced tool use is not supported for this model. Use tool_choice auto."
        if kind == "disabled":
            return ('thinking.type "disabled" is not supported for this model. Use '
                    '"between_tools".')
    return None


def chat_tools_refusal(path: str, body: dict[str, Any]) -> bytes | None:
    """OpenAI's 400 body for a Chat Completions request with function tools and a reasoning
    effort the model refuses beside them, in its own words (quoted in public issues), or
    None: GPT-5.2 and 5.4 take no effort there; GPT-6 Sol and Luna only "none" (their
    default counts); GPT-6 Astra and GPT-6.1 Sol and later no tools at all (OpenAI's guide:
    "tool calling requires Responses"; this message is the test's, not a quote)."""
    model = str(body.get("model"))
    if not path.endswith("/chat/completions") or not body.get("tools"):
        return None
    effort = body.get("reasoning_effort")
    refused = (f"Function tools with reasoning_effort are not supported for {model} in "
               "/v1/chat/completions.")
    if model.startswith("gpt-6") and not model.startswith(("gpt-6-sol", "gpt-6-luna")):
        refused = f"Tool calling with {model} requires /v1/responses."
    elif model in ("gpt-5.2", "gpt-5.4") and effort is not None:
        refused += " Please use /v1/responses instead."
    elif model.startswith("gpt-6") and effort != "none":
        refused += " To use function tools, use /v1/responses or set reasoning_effort to 'none'."
    else:
        return None
    return orjson.dumps({"error": {"message": refused, "type": "invalid_request_error",
                                   "param": "reasoning_effort", "code": None}})
