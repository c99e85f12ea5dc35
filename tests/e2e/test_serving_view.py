"""What serves a session, as its requests and its status line see it: a pin its own requests
drop while several are in flight is picked again once, not once per request (SPEC §5,
`proxy/in_flight.py`); a strong session the share cap serves from base says so (SPEC §15)."""

from __future__ import annotations

import httpx
import orjson
import pytest

pytestmark = pytest.mark.asyncio

JSON = {"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "orca"}
TOOLS = [{"name": "Bash", "description": "Run a shell command",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]


async def test_concurrent_requests_that_drop_a_pin_repin_the_session_once() -> None:
    """SPEC §5: a Claude Code session
    pinned to deepseek-chat (128k window) whose main conversation outgrows it while its
    sub-agents and parallel tool calls keep requests in flight. Each concurrent over-window
    request drops the model pin (context_window) and the channel pin (the new model is not
    served there) and draws a key on its own: the session's requests land on several keys
    (cold caches), and the pin ends on whichever committed last. The in-flight pick
    (proxy/in_flight.py) counts a dropped pin as none: the others follow the first re-pick."""
    import asyncio

    from orca_cli.config.load import loads
    from orca_cli.config.template import example_text
    from tests.e2e.conftest import serve_sidecar

    text = example_text()
    assert 'models = ["deepseek-chat", "gpt-4.1-mini"]' in text and 'models = ["gpt-4.1"]' in text
    text = text.replace('models = ["deepseek-chat", "gpt-4.1-mini"]',
                        'models = ["deepseek-chat"]', 1)
    text = text.replace('models = ["gpt-4.1"]', 'models = ["gpt-4.1", "gpt-4.1-mini"]', 1)
    cfg = loads(text, source="example")
    session = "cc-overflow-race"
    hdrs = {**JSON, "x-claude-code-session-id": session}

    def body(tag: str, pad: int) -> bytes:
        return orjson.dumps({"model": "claude-opus-4-1", "max_tokens": 1024, "tools": TOOLS,
                             "system": "You are an agent.",
                             "messages": [{"role": "user", "content": "rename x to count"},
                                          {"role": "assistant", "content": "ok"},
                                          {"role": "user", "content": tag + " " + "lorem " * pad}]})

    async with serve_sidecar(cfg) as sc, httpx.AsyncClient(base_url=sc.base, timeout=60) as http:
        first = await http.post("/v1/messages", content=body("first", 10), headers=hdrs)
        assert first.status_code == 200 and first.headers["x-orca-model"] == "deepseek-chat", \
            first.headers
        big = await asyncio.gather(*[http.post("/v1/messages", content=body(f"big {i}", 95_000),
                                               headers=hdrs) for i in range(8)])
        assert [r.status_code for r in big] == [200] * 8
        traces = [await sc.rt.gate.store.get_trace(r.headers["x-orca-request-id"]) for r in big]
    served = {(t["selected"]["model"], t["selected"]["channel"], t["selected"]["key_index"])
              for t in traces}
    assert len(served) == 1, (served, [t["pins"] for t in traces])


async def test_the_status_line_names_the_model_that_serves_a_cap_denied_strong_session() -> None:
    """SPEC §15: the status line names the tier and the model serving the session. A strong
    session whose requests the share cap serves from base (`base:denied:share_cap`) shows
    that, with the base pin's model and cache clock, not the strong pin's; the tier state's
    own tier stays in `session_tier`."""
    import time

    from orca_cli.admin.status import session_status
    from orca_cli.config.load import loads
    from orca_cli.config.template import example_text
    from tests.e2e.conftest import serve_sidecar

    text = example_text().replace("warmup_requests = 20", "warmup_requests = 1", 1)
    cfg = loads(text, source="example")
    session = "cc-denied-1"
    hdrs = {**JSON, "x-claude-code-session-id": session}
    async with serve_sidecar(cfg) as sc, httpx.AsyncClient(base_url=sc.base, timeout=60) as http:
        msgs: list[dict] = [{"role": "user", "content": "rename x to count"}]
        strong = await http.post(
            "/v1/messages", headers={**hdrs, "X-OrcaRouter-Tier": "strong"},
            content=orjson.dumps({"model": "claude-opus-4-1", "max_tokens": 512,
                                  "tools": TOOLS, "messages": msgs}))
        assert strong.headers["x-orca-session-tier"].startswith("strong"), strong.headers
        msgs += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "and y"}]
        denied = await http.post("/v1/messages", headers=hdrs, content=orjson.dumps(
            {"model": "claude-opus-4-1", "max_tokens": 512, "tools": TOOLS, "messages": msgs}))
        assert denied.headers["x-orca-session-tier"] == "base; reason=denied:share_cap", \
            denied.headers
        status = await session_status(sc.rt.gate.store, cfg, session, router=None,
                                      now=time.time())
    served = denied.headers["x-orca-model"]
    assert (status["tier"], status["reason"], status["model"]) == (
        "base", "denied:share_cap", served), status
    assert status["session_tier"] == "strong" and status["cache_clock_s"] > 0
