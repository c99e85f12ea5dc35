"""The auto router through the real server and the official SDK (SPEC §16): spend caps and
patterns hold, a session keeps its first choice, a 429 falls back in rank order, and the
trace explains the decision without content."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anthropic
import openai
import orjson
import pytest
import pytest_asyncio

from orca_cli.config.load import loads
from orca_cli.testing import Sidecar, sidecar
from tests.e2e.scripted import Reply, ScriptedTransport

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHANNELS = {  # channel -> (model, $/1M in, $/1M out, quality)
    "eco": ("nano", 0.05, 0.40, 0.30),
    "alt": ("mini", 0.08, 0.30, 0.35),
    "std": ("small", 0.25, 1.20, 0.50),
    "pro": ("big", 3.00, 15.0, 0.90),
}
PRICES = {m: (i, o) for m, i, o, _ in CHANNELS.values()}


def config(auto: str, routers: str = "") -> str:
    out = []
    for name, (model, inp, outp, q) in CHANNELS.items():
        out.append(f'[[channels]]\nname = "{name}"\ntype = "openai-compatible"\n'
                   f'base_url = "http://{name}.invalid/v1"\nkeys = ["sk-{name}"]\n'
                   f'models = ["{model}"]\n')
        out.append(f'[models.{model}]\ninput = {inp}\noutput = {outp}\nquality = {q}\n')
    return "\n".join(out) + "\n[auto]\n" + auto + "\n" + routers


EASY = "Hello! Say hi back."
HARD = ("Prove step by step why this lock-free queue is linearizable: explain the invariant, "
        "the race condition on the tail pointer, why a deadlock cannot happen, the trade-off "
        "against a mutex, and derive the bound O(n log n) for the amortised cost; prove the "
        "lemma by induction and justify each step of the theorem. ") * 3
ASKS = [EASY, HARD, "Translate to French: good morning", "Summarize: the meeting moved.",
        "Fix this:\n```python\ndef f(x):\n    return x +\n```"]
_sessions = itertools.count()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[Sidecar]:
    async with sidecar() as sc:
        yield sc


def _ups() -> dict[str, ScriptedTransport]:
    return {name: ScriptedTransport() for name in CHANNELS}


async def _chat(st: Sidecar, messages: list[dict[str, Any]], session: str | None = None,
                **extra: Any) -> tuple[str, Mapping[str, Any]]:
    """One request through the OpenAI SDK; (served model, the request's trace)."""
    client = openai.AsyncOpenAI(base_url=st.base + "/v1", api_key="agent", max_retries=0,
                                default_headers={"x-orca-session":
                                                 session or f"auto-{next(_sessions)}"})
    try:
        raw = await client.chat.completions.with_raw_response.create(
            model="orca/auto", messages=messages, **extra)  # type: ignore[arg-type]
    finally:
        await client.close()
    raw.parse()
    trace = await st.rt.gate.store.get_trace(raw.headers["x-orca-request-id"])
    assert trace is not None
    return raw.headers["x-orca-model"], trace


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


async def test_the_economy_profile_never_serves_above_its_caps(server: Sidecar) -> None:
    ups = _ups()
    cfg = loads(config('spend_profile = "economy"\nobjective = "quality"'), source="t")
    async with server.use(cfg, transports=ups) as st:
        served = {(await _chat(st, _user(ask)))[0] for ask in ASKS}
    assert served and all(PRICES[m][0] <= 0.10 and PRICES[m][1] <= 0.50 for m in served)
    assert not ups["std"].requests and not ups["pro"].requests


async def test_patterns_restrict_the_models(server: Sidecar) -> None:
    ups = _ups()
    cfg = loads(config('models = ["std/*", "nano"]\nobjective = "quality"'), source="t")
    async with server.use(cfg, transports=ups) as st:
        served = {(await _chat(st, _user(ask)))[0] for ask in ASKS}
        assert st.rt.cfg.routers["auto"].allowed_models == ("nano", "small")
    assert served and served <= {"small", "nano"}
    assert not ups["pro"].requests and not ups["alt"].requests


async def test_the_objective_and_the_capability_margin_decide(server: Sidecar) -> None:
    cfg = loads(config('objective = "cost"'), source="t")
    async with server.use(cfg, transports=_ups()) as st:
        easy, easy_trace = await _chat(st, _user(EASY))
        hard, hard_trace = await _chat(st, _user(HARD))
    assert easy == "mini"  # the cheapest blended price wins a simple ask under `cost`
    assert easy_trace["auto"]["complexity"] < hard_trace["auto"]["complexity"]
    assert hard_trace["auto"]["workloads"][0] == "reasoning"
    # the hard ask excludes the weak models; `big` is the strong tier (held for escalation),
    # so the base tier serves the best of what remains
    assert hard == "small"
    assert {"model": "nano", "reason": "capability"} in hard_trace["auto"]["excluded"]


async def test_a_session_keeps_its_model_across_turns(server: Sidecar) -> None:
    routers = ('[routers.auto]\nstrategy = "auto"\nallowed_models = ["nano", "mini", "small", '
               '"big"]\n[routers.auto.escalation]\nmode = "off"\n')
    cfg = loads(config('objective = "cost"', routers), source="t")
    async with server.use(cfg, transports=_ups()) as st:
        alone, _ = await _chat(st, _user(HARD))
        first, _ = await _chat(st, _user(EASY), session="keep-1")
        history = [*_user(EASY), {"role": "assistant", "content": "done"}, *_user(HARD)]
        second, trace = await _chat(st, history, session="keep-1")
        third, _ = await _chat(st, [*history, {"role": "assistant", "content": "done"},
                                    *_user("and in Spanish?")], session="keep-1")
    assert alone == "big" and first == "mini"  # the hard ask alone would move to big
    assert second == third == first
    assert any(p["kind"] == "model" and p["status"] == "hit" for p in trace["pins"])


async def test_a_429_on_the_first_choice_falls_back_in_rank_order(server: Sidecar) -> None:
    ups = _ups()
    cfg = loads(config('objective = "cost"\nspend_profile = "standard"'), source="t")
    async with server.use(cfg, transports=ups) as st:
        _, probe = await _chat(st, _user(EASY))
        order = probe["auto"]["fallback_order"]
        by_model = {m: name for name, (m, *_rest) in CHANNELS.items()}
        limited = Reply(429, b'{"error":{"message":"slow down","type":"rate_limit_error"}}')
        ups[by_model[order[0]]].script = [limited]
        served, trace = await _chat(st, _user(EASY))
    assert len(order) >= 2 and served == order[1]
    assert [a["model"] for a in trace["attempts"]] == order[:2]
    assert [a["status"] for a in trace["attempts"]] == [429, 200]


async def test_a_client_error_never_switches_model(server: Sidecar) -> None:
    ups = _ups()
    cfg = loads(config('objective = "cost"'), source="t")
    async with server.use(cfg, transports=ups) as st:
        bad = Reply(400, b'{"error":{"message":"bad request","type":"invalid_request_error"}}')
        for t in ups.values():
            t.script = [bad]
        with pytest.raises(openai.BadRequestError):
            await _chat(st, _user(EASY))
    assert sum(len(t.requests) for t in ups.values()) == 1


async def test_the_trace_explains_the_decision_without_content(server: Sidecar) -> None:
    cfg = loads(config('spend_profile = "standard"'), source="t")
    secret = "my password is hunter2, translate it to French"
    async with server.use(cfg, transports=_ups()) as st:
        _, trace = await _chat(st, _user(secret), response_format={"type": "json_object"})
    auto = trace["auto"]
    assert {"algorithm", "workloads", "complexity", "confidence", "classifier", "objective",
            "spend_profile", "caps", "candidates", "excluded", "fallback_order"} <= set(auto)
    assert auto["workloads"][0] == "structured_output" and "translation" in auto["workloads"]
    assert auto["caps"] == {"input": 0.3, "output": 1.5}
    assert {"model": "big", "reason": "price_cap"} in auto["excluded"] or "big" not in [
        c["model"] for c in auto["candidates"]]
    for c in auto["candidates"]:
        assert set(c["factors"]) == {"quality", "price", "latency", "health"}
    assert "hunter2" not in orjson.dumps(trace).decode()


async def test_the_example_configs_auto_router_serves_both_sdks(server: Sidecar) -> None:
    from orca_cli.config.template import example_text

    cfg = loads(example_text(), source="example")
    allowed = cfg.routers["auto"].allowed_models
    async with server.use(cfg) as st:  # the example's sim channels answer
        oa = openai.AsyncOpenAI(base_url=st.base + "/v1", api_key="agent", max_retries=0)
        an = anthropic.AsyncAnthropic(base_url=st.base, api_key="agent", max_retries=0)
        try:
            raw = await oa.chat.completions.with_raw_response.create(
                model="orca/auto", messages=[{"role": "user", "content": "Summarize: ok."}])
            msg = await an.messages.with_raw_response.create(
                model="orca/auto", max_tokens=50,
                messages=[{"role": "user", "content": "Fix this: ```def f(: pass```"}])
        finally:
            await oa.close()
            await an.close()
    assert raw.parse().choices[0].message.content and (await msg.parse()).content
    assert raw.headers["x-orca-model"] in allowed and msg.headers["x-orca-model"] in allowed


async def test_the_strong_tier_is_the_top_quality_band(server: Sidecar) -> None:
    cfg = loads(config('objective = "cost"'), source="t")
    assert cfg.routers["auto"].strong_pool == ("big",)
    async with server.use(cfg, transports=_ups()) as st:
        client = openai.AsyncOpenAI(base_url=st.base + "/v1", api_key="agent", max_retries=0,
                                    default_headers={"x-orca-session": "strong-1",
                                                     "x-orcarouter-tier": "strong"})
        try:
            raw = await client.chat.completions.with_raw_response.create(
                model="orca/auto", messages=_user(EASY))  # type: ignore[arg-type]
        finally:
            await client.close()
    assert raw.headers["x-orca-model"] == "big"
    assert raw.headers["x-orca-session-tier"].startswith("strong")


async def test_concurrent_first_turns_of_a_new_session_share_its_first_pick(
        server: Sidecar) -> None:
    """Parallel sub-agents under one new session id: each request reads no pin, and alone
    the hard ask would go to `big` and the easy one to `mini`; they all follow the first
    request's pick (model and key) while it is in flight, and their traces say so. The
    upstreams hold every answer until all eight requests have been sent, so all eight are
    decided before any commits."""
    import asyncio

    burst = 8
    go = asyncio.Event()
    sent = [0]

    class Held(ScriptedTransport):
        armed = False

        async def send(self, req: Any, timeouts: Any) -> Any:
            if Held.armed:
                sent[0] += 1
                if sent[0] >= burst:
                    go.set()
                await asyncio.wait_for(go.wait(), 10)
            return await super().send(req, timeouts)

    routers = ('[routers.auto]\nstrategy = "auto"\nallowed_models = ["nano", "mini", "small", '
               '"big"]\n[routers.auto.escalation]\nmode = "off"\n')
    cfg = loads(config('objective = "cost"', routers), source="t")
    ups: dict[str, ScriptedTransport] = {name: Held() for name in CHANNELS}
    async with server.use(cfg, transports=ups) as st:
        alone_hard, _ = await _chat(st, _user(HARD))
        alone_easy, _ = await _chat(st, _user(EASY))
        Held.armed = True
        replies = await asyncio.gather(*(_chat(st, _user(EASY if i % 2 else HARD),
                                               session="burst-1") for i in range(burst)))
        Held.armed = False
        after, _ = await _chat(st, _user(EASY), session="burst-1")
    assert alone_hard != alone_easy
    models = {m for m, _ in replies}
    assert len(models) == 1 and after in models
    keys = {(t["selected"]["channel"], t["selected"]["key_index"]) for _, t in replies}
    assert len(keys) == 1
    followed = [t for _, t in replies
                if any(p["reason"] == "in_flight" for p in t["pins"])]
    assert len(followed) == burst - 1  # the first picks; the others follow it
