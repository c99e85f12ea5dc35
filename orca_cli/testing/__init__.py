"""A kit for testing orca, and configs for it, over real sockets.

- `sidecar(cfg)` — a served sidecar (`orca_cli.compose.running`) and an HTTP client for it.
- `fake_upstream()` — a fake provider speaking Chat Completions, Messages and the Responses
  API (JSON and SSE) with scripted faults, recording every request.
- `openai_sse`, `anthropic_sse`, `responses_sse` (and `*_json`), `sse_events` — wire bodies.
- `eventually(condition, timeout)` / `eventually_sync` — wait on a condition, bounded.
- `free_port`, `closed_port`, `listening_socket` — loopback sockets.

Example::

    from orca_cli.config.load import loads
    from orca_cli.testing import Act, fake_upstream, sidecar

    async def test_my_config_falls_back() -> None:
        async with fake_upstream() as up:
            cfg = loads(MY_TOML.replace("UPSTREAM", up.url("a")), environ={})
            up.on("a", Act(status=429, retry_after=1))
            async with sidecar(cfg) as sc:
                r = await sc.http.post("/v1/chat/completions", json=BODY)
            assert r.status_code == 200 and len(up.calls("a")) == 2
"""

from orca_cli.testing.net import closed_port, free_port, listening_socket
from orca_cli.testing.sidecar import ADMIN_TOKEN, Sidecar, Tracker, sidecar
from orca_cli.testing.sse import (
    anthropic_json,
    anthropic_sse,
    event,
    json_body,
    openai_json,
    openai_sse,
    responses_json,
    responses_sse,
    sse_events,
    sse_stream,
)
from orca_cli.testing.upstream import Act, FakeUpstream, Script, Seen, fake_upstream
from orca_cli.testing.wait import eventually, eventually_sync

__all__ = [
    "ADMIN_TOKEN",
    "Act",
    "FakeUpstream",
    "Script",
    "Seen",
    "Sidecar",
    "Tracker",
    "anthropic_json",
    "anthropic_sse",
    "closed_port",
    "event",
    "eventually",
    "eventually_sync",
    "fake_upstream",
    "free_port",
    "json_body",
    "listening_socket",
    "openai_json",
    "openai_sse",
    "responses_json",
    "responses_sse",
    "sidecar",
    "sse_events",
    "sse_stream",
]
