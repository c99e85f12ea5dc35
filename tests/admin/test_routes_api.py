"""Route versions through the admin API, on the memory store and a real Redis (SPEC §1.1, §17):
the admin token, a file validated exactly as `orca routes check` validates it, and a deploy or
rollback that the sidecar applies before it answers; then the CLI through a sidecar on Redis."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.config.load import loads
from orca_cli.testing import Sidecar
from orca_cli.testing.thread import sidecar_thread
from tests.admin.conftest import sidecar_on
from tests.routes.test_routes_live import DENY, LET_THROUGH, PAUSED
from tests.state.conftest import delete_prefix

TOKEN = "routes-admin-token"
ADMIN = {"authorization": f"Bearer {TOKEN}"}
CONFIG = """
[state]
backend = "{backend}"
redis_url = "{url}"
key_prefix = "{prefix}"
timeout_ms = 2000

[[channels]]
name = "sim"
type = "sim"
api = ["openai", "anthropic"]
keys = ["sim-key-1"]
models = ["small", "big"]

[routers.default]
weak_pool = ["small"]
strong_pool = ["big"]
"""
CYCLE = """
[[routes]]
name = "big"
models = ["big"]
[routes.nodes.stop]
type = "split"
branches = [{percent = 100, next = "stop"}]
"""


def _config(backend: str, url: str, prefix: str) -> str:
    return CONFIG.format(backend=backend, url=url or "redis://127.0.0.1:6379/0", prefix=prefix)


@pytest.fixture
def prefix() -> str:
    return f"orcaroutes-{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=["memory", "redis"])
async def served(request: pytest.FixtureRequest, prefix: str) -> AsyncIterator[Sidecar]:
    url = request.getfixturevalue("redis_url") if request.param == "redis" else ""
    cfg = loads(_config(request.param, url, prefix), source="test")
    async with sidecar_on(cfg, cfg.state, TOKEN) as sc:
        yield sc


async def _chat(sc: Sidecar) -> httpx.Response:
    return await sc.http.post("/v1/chat/completions",
                              json={"model": "big",
                                    "messages": [{"role": "user", "content": "rename x"}]})


async def _deploy(sc: Sidecar, text: str, **extra: object) -> httpx.Response:
    return await sc.http.post("/orca/v1/routes/deploy", headers=ADMIN,
                              json={"text": text, "source": "routes.toml", **extra})


async def test_every_routes_endpoint_needs_the_admin_token(served: Sidecar) -> None:
    assert (await served.http.get("/orca/v1/routes")).status_code == 401
    assert (await served.http.get("/orca/v1/routes/diff?a=1&b=1")).status_code == 401
    for path in ("check", "deploy", "rollback"):
        r = await served.http.post(f"/orca/v1/routes/{path}", json={"text": DENY})
        assert r.status_code == 401, path
        bad = await served.http.post(f"/orca/v1/routes/{path}", json={"text": DENY},
                                     headers={"authorization": "Bearer not-the-token"})
        assert bad.status_code == 401, path
    assert (await _chat(served)).status_code == 200  # nothing was deployed


async def test_an_invalid_file_is_refused_with_every_node_path(served: Sidecar) -> None:
    r = await _deploy(served, CYCLE)
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == "invalid_routes"
    assert error["message"].startswith("1 problem(s) in routes.toml; nothing deployed: ")
    assert [e["message"] for e in error["errors"]] == [
        "routes.toml: routes[0].nodes.stop: cycle: stop -> stop"]
    assert (error["errors"][0]["key"], error["errors"][0]["path"]) == ("routes[0].nodes.stop",
                                                                       "routes.toml")
    two = CYCLE.replace('models = ["big"]', 'models = ["big"]\nkeys = ["ci"]')
    r = await _deploy(served, two)
    assert r.status_code == 400
    assert len(r.json()["error"]["errors"]) == 2  # the unknown key too, each with its path
    assert any("routes[0].keys" in e["message"] for e in r.json()["error"]["errors"])
    r = await _deploy(served, "not = [toml")
    assert r.status_code == 400 and "is not valid TOML" in r.json()["error"]["message"]

    checked = await served.http.post("/orca/v1/routes/check", headers=ADMIN,
                                     json={"text": CYCLE, "source": "routes.toml"})
    assert checked.status_code == 200
    assert checked.json()["ok"] is False and checked.json()["errors"] == error["errors"]
    checked = await served.http.post("/orca/v1/routes/check", headers=ADMIN,
                                     json={"text": DENY, "source": "routes.toml"})
    assert checked.json() == {"ok": True, "file": "routes.toml", "routes": ["big"],
                              "errors": []}

    listed = await served.http.get("/orca/v1/routes", headers=ADMIN)
    assert listed.json() == {"active": None, "versions": []}  # nothing stored
    assert (await _chat(served)).status_code == 200


async def test_deploy_and_rollback_apply_to_the_next_request(served: Sidecar) -> None:
    r = await _deploy(served, LET_THROUGH, note="let big through")
    assert r.status_code == 200, r.text
    assert (r.json()["version"], r.json()["note"]) == (1, "let big through")
    assert (await _chat(served)).status_code == 200

    r = await _deploy(served, DENY)
    assert r.status_code == 200 and r.json()["version"] == 2
    refused = await _chat(served)  # no wait: applied before the deploy answered
    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == PAUSED
    again = await _deploy(served, DENY)
    assert again.json()["version"] == 2  # the same text makes no new version

    listed = (await served.http.get("/orca/v1/routes", headers=ADMIN)).json()
    assert listed["active"] == 2 and [v["version"] for v in listed["versions"]] == [1, 2]
    diff = (await served.http.get("/orca/v1/routes/diff?a=1&b=2", headers=ADMIN)).json()
    assert (diff["a"]["version"], diff["b"]["version"]) == (1, 2)
    assert '+type = "deny"' in diff["diff"] and diff["diff"].startswith("--- version 1")

    r = await served.http.post("/orca/v1/routes/rollback", headers=ADMIN, json={})
    assert r.status_code == 200 and r.json()["version"] == 1
    assert (await _chat(served)).status_code == 200
    r = await served.http.post("/orca/v1/routes/rollback", headers=ADMIN, json={"version": 2})
    assert r.status_code == 200 and r.json()["version"] == 2
    assert (await _chat(served)).status_code == 403


async def test_routes_endpoints_refuse_what_they_cannot_do(served: Sidecar) -> None:
    rollback = "/orca/v1/routes/rollback"
    r = await served.http.post(rollback, headers=ADMIN, json={})
    assert r.status_code == 409 and "no earlier version to roll back to" in r.text
    r = await served.http.post(rollback, headers=ADMIN, json={"version": 9})
    assert r.status_code == 404 and "no route version 9" in r.text
    for body in ({"version": "1"}, {"version": 0}, {"version": True}):
        r = await served.http.post(rollback, headers=ADMIN, json=body)
        assert r.status_code == 400 and "version must be a version number" in r.text, body
    r = await served.http.post("/orca/v1/routes/deploy", headers=ADMIN, json={"source": "x"})
    assert r.status_code == 400 and "body field text must be a string" in r.text
    r = await _deploy(served, DENY, note=7)
    assert r.status_code == 400 and "body field note must be a string" in r.text
    r = await served.http.get("/orca/v1/routes/diff?a=1", headers=ADMIN)
    assert r.status_code == 400 and "query parameter b" in r.text
    r = await served.http.get("/orca/v1/routes/diff?a=1&b=2", headers=ADMIN)
    assert r.status_code == 404 and "no route version 1" in r.text
    assert (await served.http.get("/orca/v1/routes/deploy", headers=ADMIN)).status_code == 405
    assert (await served.http.post("/orca/v1/routes", headers=ADMIN,
                                   json={})).status_code == 405
    assert (await served.http.get("/orca/v1/routes/7", headers=ADMIN)).status_code == 404


# --- the CLI through a sidecar on Redis (sync: the CLI runs its own loop) ---------------------


@pytest.fixture
def redis_config(tmp_path: Path, prefix: str, redis_url: str) -> Iterator[Path]:
    path = tmp_path / "orca.toml"
    path.write_text(_config("redis", redis_url, prefix))
    yield path
    delete_prefix(redis_url, prefix)


def test_the_cli_deploys_through_a_sidecar_on_redis(redis_config: Path, tmp_path: Path) -> None:
    from orca_cli.config.load import load

    deny = tmp_path / "deny.toml"
    deny.write_text(DENY)
    with sidecar_thread(load(str(redis_config)), admin_token=TOKEN) as running:
        via = ("--url", running.url, "--token", TOKEN, "--config", str(redis_config))
        r = CliRunner().invoke(app, ["routes", "deploy", str(deny), "--json", *via])
        assert r.exit_code == 0, r.stderr
        assert json.loads(r.stdout)["version"] == 1
        assert "reading the Redis store directly" not in r.stderr
        chat = httpx.post(running.url + "/v1/chat/completions", timeout=10,
                          json={"model": "big", "messages": [{"role": "user", "content": "x"}]})
        assert chat.status_code == 403 and chat.json()["error"]["message"] == PAUSED
        r = CliRunner().invoke(app, ["routes", "list", "--json", *via])
        assert r.exit_code == 0 and json.loads(r.stdout)["active"] == 1
        r = CliRunner().invoke(app, ["routes", "rollback", *via])
        assert r.exit_code == 1 and "no earlier version to roll back to" in r.stderr
        r = CliRunner().invoke(app, ["routes", "list", "--url", running.url, "--token", "nope"])
        assert r.exit_code == 1 and "refused the admin token" in r.stderr
    # No sidecar now: the same store, directly; the version the sidecar stored is there.
    r = CliRunner().invoke(app, ["routes", "list", "--json", "--config", str(redis_config)])
    assert r.exit_code == 0, r.stderr
    assert "reading the Redis store directly" in r.stderr
    assert json.loads(r.stdout)["active"] == 1
