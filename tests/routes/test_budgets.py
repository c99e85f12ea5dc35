"""Budget counters (once per request id, on both stores), raised limits and `orca budget`."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.routing.routes import Decision, RequestFacts
from orca_cli.state.base import CommitBatch, ReadRequest
from orca_cli.state.budgets import StoreBudgets, ttl_of
from orca_cli.turn.routes import Routed
from tests.routes.test_routes_cli import CONFIG
from tests.state.conftest import delete_prefix, redis_url

__all__ = ["redis_url"]


@pytest.fixture
def prefix(redis_url: str) -> Iterator[str]:
    p = f"t{uuid.uuid4().hex[:10]}"
    yield p
    delete_prefix(redis_url, p)


def _routed(session: str = "s1") -> Routed:
    facts = RequestFacts("openai", "small", key_name="ci", session_id=session, now=time.time())
    return Routed(facts, Decision("target", "r"), 0, {"session_usd": 2.5, "day_usd": 2.0})


async def _scenario(store: Any) -> None:
    """Spend rides on the request's commit: 64 concurrent commits of 8 request ids (each sent
    8 times, as a retried commit is) count each request once."""
    routed = _routed()
    write = routed.spend_write(0.25)
    commits = [store.commit(CommitBatch(f"req-{i % 8}", (write,))) for i in range(64)]
    results = await asyncio.gather(*commits)
    assert sum(r.results[0].status == "applied" for r in results) == 8
    keys = routed.spend_counters()
    got = await store.read_counters(keys)
    assert set(got) == set(keys)
    assert all(s.requests == 8 and abs(s.usd - 2.0) < 1e-9 for s in got.values())
    assert await store.read_counters(("key:nobody:day:2026-01-01",)) == {}
    assert routed.check(got, {}).verdict == "refuse"  # day: $2 of $2
    assert routed.check(got, {"day_usd:ci": 10.0}).verdict == "deny_strong"  # session: 80 %
    snap = await store.read(ReadRequest(router="_direct", budget_counters=routed.read_counters(),
                                        budget_limits=routed.read_limits()))
    assert {c: s.usd for c, s in snap.budgets.items()} == {
        c: 2.0 for c in routed.read_counters()}


def test_memory_spend_counts_once_per_request() -> None:
    from orca_cli.clock import SystemClock
    from orca_cli.state.memory import MemoryStore

    asyncio.run(_scenario(MemoryStore(clock=SystemClock())))


def test_redis_spend_counts_once_per_request(prefix: str, redis_url: str) -> None:
    from redis.asyncio import Redis

    from orca_cli.clock import SystemClock
    from orca_cli.config.schema import StateConfig
    from orca_cli.state.factory import open_store

    async def go() -> None:
        store = open_store(StateConfig(backend="redis", redis_url=redis_url, key_prefix=prefix,
                                       timeout_ms=2000), clock=SystemClock())
        client = Redis.from_url(redis_url, decode_responses=True)
        try:
            await _scenario(store)
            ttl = await client.ttl(f"{prefix}:{{budgets}}:c:key:ci:day:"
                                   + time.strftime("%Y-%m-%d", time.gmtime()))
            assert 2 * 86400 < ttl <= 3 * 86400
            # what `orca budget` reads is what the request path wrote
            rows = await StoreBudgets(store).all_counters()
            assert {c: s.requests for c, s in rows.items()} == {
                c: 8 for c in _routed().spend_counters()}
        finally:
            await client.aclose()
            await store.close()
    asyncio.run(go())


def test_ttl_of() -> None:
    assert ttl_of("key:ci:day:2026-12-04") == 3 * 86400
    assert ttl_of("session:s1:all:-") == 70 * 86400


@pytest.fixture
def config(tmp_path: Path, prefix: str, redis_url: str) -> str:
    cfg = tmp_path / "orca.toml"
    cfg.write_text(CONFIG + f'\n[models.small]\ninput = 1000.0\noutput = 1000.0\n'
                   f'\n[budgets]\nday_usd = 4\nsession_usd = 1\n\n[state]\n'
                   f'backend = "redis"\nredis_url = "{redis_url}"\nkey_prefix = "{prefix}"\n')
    return str(cfg)


def test_cli_budget_shows_live_spend_and_raise_moves_the_limit(config: str, prefix: str,
                                                               redis_url: str) -> None:
    """Requests served by a sidecar on the Redis store; `orca budget` shows what they cost."""
    from orca_cli.clock import SystemClock
    from orca_cli.config.load import load
    from orca_cli.state.factory import open_store
    from orca_cli.testing import sidecar

    async def serve() -> float:
        cfg = load(config)
        store = open_store(cfg.state, clock=SystemClock())
        billed = 0.0
        async with sidecar(cfg, store=store) as sc:
            for _ in range(3):
                r = await sc.http.post("/v1/chat/completions", headers={
                    "authorization": "Bearer tok-ci", "x-orca-session": "s1"}, json={
                    "model": "small", "messages": [{"role": "user", "content": "hello"}]})
                assert r.status_code == 200, r.text
                await sc.idle()
                trace = await store.get_trace(r.headers["x-orca-request-id"])
                assert trace is not None
                billed += trace["cost_usd"]
        await store.close()
        return billed

    billed = asyncio.run(serve())
    assert billed > 0
    r = CliRunner().invoke(app, ["budget", "--json", "--config", config])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["budgets"]
    day = next(x for x in rows if x["budget"] == "day_usd" and x["holder"] == "key ci")
    assert (day["spent_usd"], day["limit_usd"], day["requests"]) == (round(billed, 6), 4.0, 3)
    sess = next(x for x in rows if x["budget"] == "session_usd")
    assert (sess["holder"], sess["spent_usd"], sess["limit_usd"]) == (
        "session s1", round(billed, 6), 1.0)
    r = CliRunner().invoke(app, ["budget", "raise", "day_usd", "12", "--key", "ci",
                                 "--config", config])
    assert r.exit_code == 0 and "day_usd for key ci is now $12.00" in r.output
    rows = json.loads(CliRunner().invoke(app, ["budget", "--json", "--config", config]).stdout)
    day = next(x for x in rows["budgets"] if x["budget"] == "day_usd" and x["holder"] == "key ci")
    assert day["limit_usd"] == 12.0
    text = CliRunner().invoke(app, ["budget", "--config", config]).output
    assert "key ci" in text and "of $12.00" in text and "3 requests" in text


def test_cli_budget_raise_usage(config: str) -> None:
    r = CliRunner().invoke(app, ["budget", "raise", "week_usd", "3", "--config", config])
    assert r.exit_code == 2 and "NAME must be one of" in r.output
    r = CliRunner().invoke(app, ["budget", "raise", "day_usd", "3", "--key", "nope",
                                 "--config", config])
    assert r.exit_code == 1 and "names no [[inbound_keys]]" in r.output


