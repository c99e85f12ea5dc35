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
from orca_cli.routing.routes import RequestFacts, check_budgets, spend_keys
from orca_cli.state.budgets import MemoryBudgets, RedisBudgets, effective_limits, ttl_of
from tests.routes.test_routes_cli import CONFIG
from tests.state.conftest import delete_prefix, redis_url

__all__ = ["redis_url"]


@pytest.fixture
def prefix(redis_url: str) -> Iterator[str]:
    p = f"t{uuid.uuid4().hex[:10]}"
    yield p
    delete_prefix(redis_url, p)


async def _scenario(store: Any) -> None:
    facts = RequestFacts("openai", "small", key_name="ci", session_id="s1", now=time.time())
    keys = spend_keys(facts, "r")
    # 64 concurrent commits of 8 request ids, each retried 8 times: counted once per id
    commits = [store.add(keys, 0.25, f"req-{i % 8}") for i in range(64)]
    applied = await asyncio.gather(*commits)
    assert sum(applied) == 8
    got = await store.read(keys)
    assert set(got) == set(keys)
    assert all(s.requests == 8 and abs(s.usd - 2.0) < 1e-9 for s in got.values())
    assert await store.read(["key:nobody:day:2026-01-01"]) == {}
    limits = {"session_usd": 2.5, "day_usd": 2.0, "month_usd": 0.0}
    assert check_budgets(limits, facts, got).verdict == "refuse"
    await store.raise_limit("day_usd", "ci", 10.0)
    raised = effective_limits(limits, await store.limits(), "ci")
    assert raised["day_usd"] == 10.0
    assert check_budgets(raised, facts, got).verdict == "deny_strong"  # session at 80 %
    assert set(await store.all_counters()) == set(keys)


def test_memory_budgets() -> None:
    asyncio.run(_scenario(MemoryBudgets()))


def test_redis_budgets(prefix: str, redis_url: str) -> None:
    from redis.asyncio import Redis

    async def go() -> None:
        client = Redis.from_url(redis_url, decode_responses=True)
        try:
            await _scenario(RedisBudgets(client, prefix))
            ttl = await client.ttl(f"{prefix}:{{budgets}}:c:key:ci:day:"
                                   + time.strftime("%Y-%m-%d", time.gmtime()))
            assert 2 * 86400 < ttl <= 3 * 86400
        finally:
            await client.aclose()
    asyncio.run(go())


def test_ttl_of() -> None:
    assert ttl_of("key:ci:day:2026-12-04") == 3 * 86400
    assert ttl_of("session:s1:all:-") == 70 * 86400


@pytest.fixture
def config(tmp_path: Path, prefix: str, redis_url: str) -> str:
    cfg = tmp_path / "orca.toml"
    cfg.write_text(CONFIG + f'\n[budgets]\nday_usd = 4\nsession_usd = 1\n\n[state]\n'
                   f'backend = "redis"\nredis_url = "{redis_url}"\nkey_prefix = "{prefix}"\n')
    return str(cfg)


def test_cli_budget_shows_spend_and_raise_moves_the_limit(config: str, prefix: str,
                                                          redis_url: str) -> None:
    from redis.asyncio import Redis

    async def spend() -> None:
        client = Redis.from_url(redis_url, decode_responses=True)
        facts = RequestFacts("openai", "small", key_name="ci", session_id="s1", now=time.time())
        await RedisBudgets(client, prefix).add(spend_keys(facts, ""), 3.0, "r1")
        await client.aclose()
    asyncio.run(spend())
    r = CliRunner().invoke(app, ["budget", "--json", "--config", config])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["budgets"]
    day = next(x for x in rows if x["budget"] == "day_usd" and x["holder"] == "key ci")
    assert (day["spent_usd"], day["limit_usd"], day["share"], day["requests"]) == (
        3.0, 4.0, 0.75, 1)
    sess = next(x for x in rows if x["budget"] == "session_usd")
    assert (sess["holder"], sess["spent_usd"], sess["limit_usd"]) == ("session s1", 3.0, 1.0)
    r = CliRunner().invoke(app, ["budget", "raise", "day_usd", "12", "--key", "ci",
                                 "--config", config])
    assert r.exit_code == 0 and "day_usd for key ci is now $12.00" in r.output
    rows = json.loads(CliRunner().invoke(app, ["budget", "--json", "--config", config]).stdout)
    day = next(x for x in rows["budgets"] if x["budget"] == "day_usd" and x["holder"] == "key ci")
    assert (day["limit_usd"], day["share"]) == (12.0, 0.25)
    text = CliRunner().invoke(app, ["budget", "--config", config]).output
    assert "key ci" in text and "$3.00 of $12.00 (25%)" in text


def test_cli_budget_raise_usage(config: str) -> None:
    r = CliRunner().invoke(app, ["budget", "raise", "week_usd", "3", "--config", config])
    assert r.exit_code == 2 and "NAME must be one of" in r.output
    r = CliRunner().invoke(app, ["budget", "raise", "day_usd", "3", "--key", "nope",
                                 "--config", config])
    assert r.exit_code == 1 and "names no [[inbound_keys]]" in r.output


