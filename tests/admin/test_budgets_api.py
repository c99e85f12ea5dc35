"""Budgets through the admin API and the CLI's direct Redis path (SPEC §1.1, §17): the limit
in force (raised or configured) and the share against it, raises that apply from the next
request on either backend, and one rule for showing amounts."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.clock import SystemClock
from orca_cli.config.load import loads
from orca_cli.config.schema import Config
from orca_cli.routing.routes.budget import budget_refusal, format_usd
from orca_cli.state.factory import open_store
from orca_cli.testing import Sidecar, sidecar
from tests.admin.conftest import sidecar_on
from tests.state.conftest import delete_prefix

ADMIN = {"authorization": "Bearer budget-admin-token"}
CONFIG = """
[state]
backend = "{backend}"
redis_url = "{url}"
key_prefix = "{prefix}"
timeout_ms = 2000

[[channels]]
name = "sim-cheap"
type = "sim"
api = ["openai", "anthropic"]
keys = ["sim-key-1"]
models = ["small"]

[models.small]   # one request spends more than the session budget
input = 100.0
output = 100.0

[routers.coding]
strategy = "cheapest"
allowed_models = ["small"]
[routers.coding.escalation]
mode = "off"

[[inbound_keys]]
name = "ci"
token = "ci-token"

[budgets]
session_usd = 0.004
day_usd = 5
"""


def _config(backend: str, url: str, prefix: str) -> str:
    return CONFIG.format(backend=backend, url=url or "redis://127.0.0.1:6379/0", prefix=prefix)


@pytest.fixture
def prefix() -> str:
    return f"orcabudget-{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=["memory", "redis"])
async def served(request: pytest.FixtureRequest, prefix: str) -> AsyncIterator[Sidecar]:
    url = request.getfixturevalue("redis_url") if request.param == "redis" else ""
    cfg = loads(_config(request.param, url, prefix), source="test")
    async with sidecar_on(cfg, cfg.state, ADMIN["authorization"][7:]) as sc:
        yield sc


async def _chat(sc: Sidecar, session: str, **headers: str) -> httpx.Response:
    return await sc.http.post("/v1/chat/completions", headers={"x-orca-session": session,
                                                               **headers},
                              json={"model": "orca/coding",
                                    "messages": [{"role": "user", "content": "rename x"}]})


def _rows(doc: dict[str, Any], budget: str) -> dict[str, dict[str, Any]]:
    return {r["holder"]: r for r in doc["budgets"] if r["budget"] == budget}


async def test_a_raise_through_the_admin_api_serves_the_next_request(served: Sidecar) -> None:
    assert (await served.http.get("/orca/v1/budgets")).status_code == 401
    first = await _chat(served, "s-1")
    assert first.status_code == 200, first.text
    await served.idle()
    refused = await _chat(served, "s-1")
    assert refused.status_code == 429
    doc = (await served.http.get("/orca/v1/budgets", headers=ADMIN)).json()
    row = _rows(doc, "session_usd")["session s-1"]
    spent = row["spent_usd"]
    assert spent > 0.004 and (row["limit_usd"], row["raised"]) == (0.004, False)
    assert f"is spent: {format_usd(spent)} of $0.004" in refused.json()["error"]["message"]
    day = _rows(doc, "day_usd")["key -"]
    assert (day["spent_usd"], day["limit_usd"], day["requests"]) == (spent, 5.0, 1)
    assert _rows(doc, "month_usd")["key -"]["limit_usd"] is None  # 0 in the config: none

    r = await served.http.post("/orca/v1/budgets/session_usd/raise", headers=ADMIN,
                               json={"usd": 0.5, "actor": "test"})
    assert r.status_code == 200, r.text
    assert (r.json()["limit_usd"], r.json()["previous_limit_usd"]) == (0.5, 0.004)
    assert (await _chat(served, "s-1")).status_code == 200
    assert (await _chat(served, "s-1", authorization="Bearer ci-token")).status_code == 429

    await served.idle()
    doc = (await served.http.get("/orca/v1/budgets", headers=ADMIN)).json()
    row = _rows(doc, "session_usd")["session s-1"]
    assert (row["limit_usd"], row["configured_usd"], row["raised"]) == (0.5, 0.004, True)
    assert row["share"] == round(row["spent_usd"] / 0.5, 4)
    assert row["key_limits_usd"] == {"ci": 0.004}  # key ci's sessions keep the configured one


async def test_raise_refuses_what_it_cannot_set(served: Sidecar) -> None:
    path = "/orca/v1/budgets/{}/raise"
    for name, body, status, words in [
        ("week_usd", {"usd": 1}, 400, "NAME must be one of session_usd, day_usd, month_usd"),
        ("day_usd", {"usd": "12"}, 400, "USD must be a number > 0"),
        ("day_usd", {"usd": 0}, 400, "USD must be a number > 0"),
        ("day_usd", {}, 400, "USD must be a number > 0"),
        ("day_usd", {"usd": 1, "key": 7}, 400, "key must be a string"),
        ("day_usd", {"usd": 1, "key": "ops"}, 404, "names no [[inbound_keys]] entry (ci)"),
        ("month_usd", {"usd": 1}, 409, "[budgets] month_usd is 0 (no budget)"),
    ]:
        r = await served.http.post(path.format(name), headers=ADMIN, json=body)
        assert r.status_code == status and words in r.json()["error"]["message"], (name, body)
    assert (await served.http.get(path.format("day_usd"), headers=ADMIN)).status_code == 405
    r = await served.http.post(path.format("day_usd"), headers=ADMIN,
                               json={"usd": 12, "key": "ci"})
    assert r.status_code == 200 and "day_usd for key ci is now $12.00 (was $5.00)" in (
        r.json()["message"])
    doc = (await served.http.get("/orca/v1/budgets", headers=ADMIN)).json()
    assert _rows(doc, "day_usd")["key ci"]["limit_usd"] == 12.0
    assert _rows(doc, "day_usd")["key -"]["limit_usd"] == 5.0


# --- the CLI straight to Redis, no sidecar running (sync tests: the CLI runs its own loop) ----


@pytest.fixture
def redis_config(tmp_path: Path, prefix: str, redis_url: str) -> Iterator[Path]:
    path = tmp_path / "orca.toml"
    path.write_text(_config("redis", redis_url, prefix))
    yield path
    delete_prefix(redis_url, prefix)


async def _spend(config: Path) -> None:
    from orca_cli.config.load import load

    cfg: Config = load(str(config))
    store = open_store(cfg.state, clock=SystemClock())
    try:
        async with sidecar(cfg, store=store) as sc:
            assert (await _chat(sc, "s-direct")).status_code == 200
            await sc.idle()
    finally:
        await store.close()


def test_the_direct_redis_path_shows_the_raised_limit_in_force(redis_config: Path) -> None:
    asyncio.run(_spend(redis_config))

    def orca(*args: str) -> tuple[int, str, str]:
        r = CliRunner().invoke(app, [*args, "--config", str(redis_config)])
        return r.exit_code, r.stdout, r.stderr

    code, out, err = orca("budget", "raise", "session_usd", "0.01")
    assert code == 0 and "reading the Redis store directly" in err, err
    assert "session_usd for requests without an inbound key is now $0.01" in out
    code, out, err = orca("budget", "--json")
    assert code == 0, err
    row = _rows(json.loads(out), "session_usd")["session s-direct"]
    assert row["limit_usd"] == 0.01  # the limit in force, not the configured $0.004
    assert row["share"] == round(row["spent_usd"] / 0.01, 4)
    assert (row["configured_usd"], row["raised"]) == (0.004, True)
    code, out, _ = orca("budget")
    line = next(ln for ln in out.splitlines() if ln.startswith("session_usd"))
    # the session's requests carried no key: its limit is the one for requests without one
    assert row["keys"] == ["-"] and row["key_limits_usd"] == {"ci": 0.004}
    assert (f"{format_usd(row['spent_usd'])} of $0.01 ({row['share']:.0%}; no key; raised from "
            "$0.004), 1 requests") in line


def test_redis_url_reads_that_store_without_asking_a_sidecar(
        tmp_path: Path, prefix: str, redis_config: Path, redis_url: str) -> None:
    asyncio.run(_spend(redis_config))
    memory = tmp_path / "memory.toml"
    memory.write_text(_config("memory", "", prefix))
    r = CliRunner().invoke(app, ["budget", "--json", "--config", str(memory),
                                 "--redis-url", redis_url])
    assert r.exit_code == 0, r.stderr
    assert "session s-direct" in _rows(json.loads(r.stdout), "session_usd")


def test_amounts_keep_four_significant_digits_below_a_dollar() -> None:
    cases = {0.0: "$0.00", 0.004: "$0.004", 0.0040219: "$0.004022", 0.123456: "$0.1235",
             0.5: "$0.50", 0.99996: "$1.00", 1.0: "$1.00", 50.123: "$50.12", 1e-9: "$0.000000001"}
    assert {usd: format_usd(usd) for usd in cases} == cases
    msg = budget_refusal("session_usd", 0.0040219, 0.004, 'session "s1"', "this session")
    assert "is spent: $0.004022 of $0.004 in this session" in msg


def test_the_cli_names_the_budgets_the_request_path_enforces() -> None:
    from orca_cli.cli.budget import NAMES
    from orca_cli.turn.routes import BUDGET_NAMES

    assert NAMES == BUDGET_NAMES
