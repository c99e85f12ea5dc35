"""Security of the localhost sidecar (SPEC §11; RELIABILITY.md threat model T1-T4, T8, T10;
scenarios S25-S28), over a real server.

Nothing a web page can make a browser send gets through: a foreign Host (DNS rebinding, port
included) or a browser Origin is refused, and a cross-site "simple" POST spends nothing (no
upstream call). Slow-header and trickle connections are closed at the receipt deadline. The
admin API needs its own token; a non-loopback bind without `inbound_token` does not start.
After a run through every failure path, no upstream key value appears anywhere orca writes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from typer.testing import CliRunner

from orca_cli.admin.service import pins_dump
from orca_cli.cli import app as cli_app
from orca_cli.config.load import loads
from orca_cli.proxy.sim import SimTransport
from orca_cli.testing import (
    ADMIN_TOKEN,
    Act,
    FakeUpstream,
    Sidecar,
    closed_port,
    fake_upstream,
    sidecar,
)
from tests.reliability.configs import sim_channels
from tests.reliability.probes import state_keys

SIM_CONFIG = """
[server]
header_timeout_s = 0.5
{extra}

""" + sim_channels().replace("{", "{{").replace("}", "}}") + """
[routers.coding]
strategy = "cheapest"
allowed_models = ["small-o", "small-a"]
"""
OPENAI = ("/v1/chat/completions", {"model": "orca/coding", "messages": [
    {"role": "user", "content": "rename x to count"}]})
ANTHROPIC = ("/v1/messages", {"model": "orca/coding", "max_tokens": 32, "messages": [
    {"role": "user", "content": "rename x to count"}]})
JSON = {"content-type": "application/json"}


@pytest.fixture
async def sc() -> AsyncIterator[Sidecar]:
    async with sidecar(loads(SIM_CONFIG.format(extra=""), source="sec")) as s:
        yield s


def sim_calls(sc: Sidecar) -> int:
    return sum(len(t.calls) for t in sc.rt.transports.values() if isinstance(t, SimTransport))


def assert_no_cors(resp: httpx.Response) -> None:
    assert not [k for k in resp.headers if k.lower().startswith("access-control-")]


def assert_refused(resp: httpx.Response, path: str, status: int, code: str) -> None:
    assert resp.status_code == status, (resp.status_code, resp.content[:300])
    doc = resp.json()
    if path.startswith("/v1/messages"):
        assert doc["type"] == "error" and doc["error"]["type"]
    else:
        assert doc["error"]["code"] == code
    assert_no_cors(resp)


# --- DNS rebinding: Host, port included -------------------------------------------------------


@pytest.mark.parametrize("path,body", [OPENAI, ANTHROPIC])
async def test_a_foreign_host_is_refused_and_spends_nothing(
        sc: Sidecar, path: str, body: dict[str, Any]) -> None:
    p = sc.port
    foreign = [f"evil.example:{p}", "evil.example", f"127.0.0.1:{p + 1}", f"localhost:{p - 1}",
               f"127.0.0.1.evil.example:{p}", f"[::1]:{p + 1}", "127.0.0.1", f"localhost.:{p}",
               f"0.0.0.0:{p}", f"127.0.0.2:{p}"]
    for host in foreign:
        r = await sc.http.post(path, content=orjson.dumps(body), headers={**JSON, "host": host})
        assert_refused(r, path, 403, "host_not_allowed")
        assert b"evil" not in r.content and b"%d" % (p + 1) not in r.content, \
            "a refusal must not echo the header"
    assert sim_calls(sc) == 0 and await state_keys(sc.store) == {}
    for host in (f"127.0.0.1:{p}", f"localhost:{p}", f"[::1]:{p}", f"LocalHost:{p}"):
        r = await sc.http.post(path, content=orjson.dumps(body), headers={**JSON, "host": host})
        assert r.status_code == 200, (host, r.content[:200])
        assert_no_cors(r)
    assert sim_calls(sc) == 4


async def test_two_host_headers_are_refused(sc: Sidecar) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", sc.port)
    body = orjson.dumps(OPENAI[1])
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                 b"Host: evil.example\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (sc.port, len(body), body))
    await writer.drain()
    head = await asyncio.wait_for(reader.read(4096), 3)
    writer.close()
    assert head.startswith((b"HTTP/1.1 403 ", b"HTTP/1.1 400 ")), head[:100]
    assert sim_calls(sc) == 0


# --- CSRF: browser Origin and "simple" requests -----------------------------------------------


@pytest.mark.parametrize("path,body", [OPENAI, ANTHROPIC])
async def test_a_browser_origin_is_refused_and_spends_nothing(
        sc: Sidecar, path: str, body: dict[str, Any]) -> None:
    for origin in ("https://evil.example", f"http://127.0.0.1:{sc.port}", "null",
                   f"http://localhost:{sc.port + 1}"):
        r = await sc.http.post(path, content=orjson.dumps(body),
                               headers={**JSON, "origin": origin})
        assert_refused(r, path, 403, "origin_not_allowed")
    r = await sc.http.get("/v1/models", headers={"origin": "https://evil.example"})
    assert_refused(r, "/v1/models", 403, "origin_not_allowed")
    assert sim_calls(sc) == 0 and await state_keys(sc.store) == {}


async def test_an_allowed_origin_passes_and_others_still_do_not() -> None:
    cfg = loads(SIM_CONFIG.format(extra='allowed_origins = ["https://my.tool"]'), source="sec")
    async with sidecar(cfg) as sc:
        path, body = OPENAI
        ok = await sc.http.post(path, content=orjson.dumps(body),
                                headers={**JSON, "origin": "https://my.tool"})
        assert ok.status_code == 200
        assert_no_cors(ok)  # allowed to call, still never told it may read cross-origin
        bad = await sc.http.post(path, content=orjson.dumps(body),
                                 headers={**JSON, "origin": "https://my.tool.evil.example"})
        assert_refused(bad, path, 403, "origin_not_allowed")
        assert sim_calls(sc) == 1


@pytest.mark.parametrize("ctype", ["text/plain", "text/plain;charset=UTF-8",
                                   "application/x-www-form-urlencoded", "multipart/form-data",
                                   None])
@pytest.mark.parametrize("path,body", [OPENAI, ANTHROPIC])
async def test_a_cross_site_simple_post_spends_nothing(
        sc: Sidecar, path: str, body: dict[str, Any], ctype: str | None) -> None:
    """`fetch(url, {method: "POST", mode: "no-cors", body})` needs no preflight: its response
    is unreadable to the page, but without this check the spend would still happen."""
    headers = {"content-type": ctype} if ctype else {}
    r = await sc.http.post(path, content=orjson.dumps(body), headers=headers)
    assert_refused(r, path, 415, "unsupported_media_type")
    assert sim_calls(sc) == 0 and await state_keys(sc.store) == {}


async def test_a_preflight_gets_no_cors_grant(sc: Sidecar) -> None:
    r = await sc.http.request("OPTIONS", "/v1/chat/completions", headers={
        "origin": "https://evil.example", "access-control-request-method": "POST",
        "access-control-request-headers": "content-type"})
    assert r.status_code >= 400
    assert_no_cors(r)


# --- receipt deadlines (header_timeout_s = 0.5) -----------------------------------------------


async def _closed_after(port: int, parts: list[bytes], gap_s: float,
                        bound_s: float = 3.0) -> tuple[float, bytes]:
    """Open a connection, send `parts` `gap_s` apart (stopping if the server hangs up), and
    return when the server closed it, and what it said."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    t0 = time.monotonic()

    async def trickle() -> None:
        for part in parts:
            try:
                writer.write(part)
                await writer.drain()
            except (ConnectionError, RuntimeError):
                return
            await asyncio.sleep(gap_s)

    sender = asyncio.ensure_future(trickle())
    got = b""
    try:
        async with asyncio.timeout(bound_s):
            while True:
                try:
                    data = await reader.read(4096)
                except ConnectionResetError:
                    break
                if not data:
                    break
                got += data
    except TimeoutError:
        raise AssertionError(f"still open after {bound_s} s; got {got[:100]!r}") from None
    finally:
        sender.cancel()
        writer.close()
    return time.monotonic() - t0, got


async def test_a_half_sent_header_block_is_closed_at_the_deadline(sc: Sidecar) -> None:
    took, got = await _closed_after(sc.port, [b"POST /v1/chat/completions HTTP/1.1\r\n"
                                              b"Host: 127.0.0.1:%d\r\n" % sc.port], 10)
    assert 0.4 <= took < 1.5 and got.startswith(b"HTTP/1.1 408 "), (took, got[:80])


async def test_trickled_headers_do_not_extend_the_deadline(sc: Sidecar) -> None:
    header = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Pad: " % sc.port
    parts = [header] + [b"a"] * 100  # one byte every 50 ms, never finishing the headers
    took, got = await _closed_after(sc.port, parts, 0.05)
    assert 0.4 <= took < 1.5 and got.startswith(b"HTTP/1.1 408 "), (took, got[:80])


async def test_an_idle_connection_is_closed_at_the_deadline(sc: Sidecar) -> None:
    took, _ = await _closed_after(sc.port, [], 0)
    assert 0.4 <= took < 1.5, took


async def test_a_trickled_body_is_closed_at_the_deadline_and_spends_nothing(
        sc: Sidecar) -> None:
    head = (b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
            b"Content-Type: application/json\r\nContent-Length: 400\r\n\r\n" % sc.port)
    took, got = await _closed_after(sc.port, [head] + [b" "] * 100, 0.05)
    assert 0.4 <= took < 1.5 and got.startswith(b"HTTP/1.1 408 "), (took, got[:80])
    assert b'"type":"error"' in got  # the Anthropic error shape of its path
    assert sim_calls(sc) == 0 and await state_keys(sc.store) == {}


async def test_a_trickled_body_after_a_whole_request_on_the_same_connection_still_times_out(
        sc: Sidecar) -> None:
    """The server tells the app that a body arrived whole (no deadline timer then); that word
    must not carry over to the next request on a kept-alive connection."""
    path, body = OPENAI
    raw = orjson.dumps(body)
    whole = (b"POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
             b"Content-Length: %d\r\n\r\n" % (path.encode(), sc.port, len(raw))) + raw
    reader, writer = await asyncio.open_connection("127.0.0.1", sc.port)
    try:
        writer.write(whole)
        await writer.drain()
        first = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        assert first.startswith(b"HTTP/1.1 200 "), first[:80]
        length = int(next(line.split(b":", 1)[1] for line in first.split(b"\r\n")
                          if line.lower().startswith(b"content-length:")))
        await asyncio.wait_for(reader.readexactly(length), 5)
        writer.write(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 400\r\n\r\n "
                     % sc.port)
        await writer.drain()
        t0 = time.monotonic()
        got = await asyncio.wait_for(reader.read(4096), 3)
        took = time.monotonic() - t0
    finally:
        writer.close()
    assert 0.4 <= took < 1.5 and got.startswith(b"HTTP/1.1 408 "), (took, got[:80])
    assert b'"type":"error"' in got


# --- tokens -----------------------------------------------------------------------------------


async def test_the_admin_api_refuses_a_missing_or_wrong_token(sc: Sidecar) -> None:
    wrong = "admin-guess-0000"
    for headers in ({}, {"authorization": f"Bearer {wrong}"}, {"authorization": ADMIN_TOKEN},
                    {"authorization": f"Basic {ADMIN_TOKEN}"}, {"x-api-key": ADMIN_TOKEN},
                    {"x-orca-token": ADMIN_TOKEN}, {"authorization": f"Bearer {ADMIN_TOKEN}x"},
                    {"authorization": "Bearer"}):
        for method, path in (("GET", "/orca/v1/sessions"), ("POST", "/orca/v1/escalate"),
                             ("GET", "/orca/v1")):
            r = await sc.http.request(method, path, headers={**JSON, **headers}, content=b"{}")
            assert r.status_code == 401, (headers, path, r.status_code)
            assert r.json()["error"]["code"] == "invalid_admin_token"
            assert wrong.encode() not in r.content and ADMIN_TOKEN.encode() not in r.content
    r = await sc.http.get("/orca/v1/sessions", headers={"authorization": f"Bearer {ADMIN_TOKEN}"})
    assert r.status_code != 401


async def test_an_inbound_token_guards_every_route_but_health() -> None:
    token = "in-tok-" + uuid.uuid4().hex
    cfg = loads(SIM_CONFIG.format(extra=f'inbound_token = "{token}"'), source="sec")
    async with sidecar(cfg) as sc:
        path, body = OPENAI
        for headers in ({}, {"authorization": "Bearer nope"}, {"x-api-key": "nope"},
                        {"authorization": f"Bearer {ADMIN_TOKEN}"}):
            r = await sc.http.post(path, content=orjson.dumps(body), headers={**JSON, **headers})
            assert_refused(r, path, 401, "invalid_api_key")
        assert sim_calls(sc) == 0
        for headers in ({"authorization": f"Bearer {token}"}, {"x-api-key": token},
                        {"x-orca-token": token}):
            r = await sc.http.post(path, content=orjson.dumps(body), headers={**JSON, **headers})
            assert r.status_code == 200
        assert (await sc.http.get("/healthz")).status_code == 200
        r = await sc.http.get("/orca/v1/sessions", headers={"authorization": f"Bearer {token}"})
        assert r.status_code == 401, "the inbound token is not the admin token"


# --- bind address -----------------------------------------------------------------------------


@pytest.mark.parametrize("flags", [["--host", "0.0.0.0"], ["--host", "0.0.0.0", "--allow-remote"],
                                   ["--host", "::", "--allow-remote"]])
def test_a_non_loopback_bind_without_an_inbound_token_refuses_to_start(
        tmp_path: Path, flags: list[str]) -> None:
    cfg = tmp_path / "orca.toml"
    cfg.write_text(SIM_CONFIG.format(extra=""))
    env = {k: v for k, v in os.environ.items() if k != "ORCA_INBOUND_TOKEN"}
    proc = subprocess.run([sys.executable, "-m", "orca_cli", "serve", *flags, "--port", "0",
                           "--config", str(cfg)], capture_output=True, text=True, timeout=60, check=False,
                          env=env, cwd=str(Path(__file__).resolve().parents[2]))
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    expected = "inbound_token" if "--allow-remote" in flags else "--allow-remote"
    assert expected in proc.stderr and "listening" not in proc.stderr, proc.stderr


# --- secrets never leave ----------------------------------------------------------------------


def leak_config(up: FakeUpstream, keys: dict[str, str], dead_port: int, token: str) -> str:
    return f"""
[server]
first_byte_timeout_s = 0.3
idle_timeout_s = 0.3
total_timeout_s = 5
inbound_token = "{token}"

[[channels]]
name = "dead"
type = "openai-compatible"
base_url = "http://127.0.0.1:{dead_port}/v1"
keys = ["{keys['dead']}"]
models = ["m1"]

[[channels]]
name = "live"
type = "openai-compatible"
base_url = "{up.url('live')}"
keys = ["{keys['live0']}", "{keys['live1']}"]
models = ["m1"]

[[channels]]
name = "anth"
type = "anthropic"
base_url = "{up.url('anth', versioned=False)}"
keys = ["{keys['anth']}"]
models = ["am1"]

[routers.r]
strategy = "cheapest"
mode = "price"
allowed_models = ["m1", "am1"]
[routers.r.escalation]
mode = "off"

[translation]
enabled = false  # each format reaches its own channel's failure paths
"""


async def test_no_key_value_appears_in_logs_traces_errors_store_or_cli_output(
        caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    caplog.set_level(logging.DEBUG)
    keys = {name: f"sk-test-{name}-{uuid.uuid4().hex}" for name in ("dead", "live0", "live1")}
    keys["anth"] = f"sk-ant-api03-{uuid.uuid4().hex}"
    token = f"orca-in-{uuid.uuid4().hex}"
    canaries = [*keys.values(), token]
    seen: list[bytes] = []
    async with fake_upstream() as up:
        text = leak_config(up, keys, closed_port(), token)
        cfg = loads(text, source="leak")
        async with sidecar(cfg) as sc:
            up.on("live", Act(401, body=b'{"error":{"message":"invalid key"}}'),
                  Act(500, body=b'{"error":{"message":"boom"}}'), Act(drop_after=2),
                  Act(stall_before_s=2.0), Act(stall_after=1, stall_s=2.0))
            up.on("anth", Act(529, body=b'{"type":"error","error":{"type":"overloaded_error",'
                                        b'"message":"Overloaded"}}'), Act(drop_after=1))
            auth = {**JSON, "authorization": f"Bearer {token}"}
            for stream in (False, True, True, False, True, False, True):
                for path, body in (OPENAI, ANTHROPIC):
                    doc = {**body, "model": "orca/r", "stream": stream}
                    r = await sc.http.post(path, content=orjson.dumps(doc), headers={
                        **auth, "x-orca-session": "leak-1", "x-request-id": uuid.uuid4().hex})
                    seen += [r.content, orjson.dumps(dict(r.headers))]
            for extra in ({"authorization": "Bearer " + keys["live0"]},  # a key sent to orca
                          {"x-api-key": keys["anth"]}):
                r = await sc.http.post("/v1/messages", content=orjson.dumps(ANTHROPIC[1]),
                                       headers={**JSON, **extra})
                assert r.status_code == 401
                seen += [r.content, orjson.dumps(dict(r.headers))]
            for path in ("/metrics", "/healthz", "/v1/models"):
                r = await sc.http.get(path, headers=auth)
                seen.append(r.content)
            assert sc.rt.health is not None
            seen.append(orjson.dumps(sc.rt.health.snapshot()))
            entries = await sc.store.scan("all")
            assert any(e.slot.kind == "traces" for e in entries)
            seen += [orjson.dumps([[e.key, e.value] for e in entries], default=str)]
            seen.append(orjson.dumps(await pins_dump(sc.store, cfg), default=str))
        assert len(up.calls("live")) >= 5, "the run did not reach the upstream failure paths"
        assert {s.key for s in up.seen} <= set(keys.values())  # the keys did reach upstream
    cfg_file = tmp_path / "orca.toml"
    cfg_file.write_text(text)
    runner = CliRunner()
    for args in (["config", "show", "--config", str(cfg_file)],
                 ["config", "show", "--json", "--config", str(cfg_file)],
                 ["config", "check", str(cfg_file)]):
        res = runner.invoke(cli_app, args)
        assert res.exit_code == 0, res.output
        seen.append(res.output.encode())
    logged = "\n".join([caplog.text] + [r.getMessage() + str(r.exc_text or "")
                                        for r in caplog.records])
    seen.append(logged.encode())
    everything = b"\n".join(seen)
    assert b"fp" in everything  # keys are referenced by fingerprint
    for canary in canaries:
        assert canary.encode() not in everything, f"a secret leaked: {canary[:12]}…"
        assert canary[-16:].encode() not in everything, f"a secret's tail leaked: {canary[:12]}…"


# --- an upstream error that echoes the key it was sent ----------------------------------------

_ECHOED = {"a": "sk-test-echo-a0-4c1d9e77", "x": "sk-ant-test-echo-x0-19ce55"}


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_an_upstream_error_echoing_its_key_reaches_the_client_with_the_fingerprint(
        api: str) -> None:
    """SPEC §11: no key value in an error. Providers answer a bad key with `Incorrect API key
    provided: sk-…`; orca relays upstream errors as they are, except for the channel's own
    key values, which become their fingerprints."""
    from orca_cli.config.schema import Secret
    from tests.reliability.configs import fault_config
    from tests.reliability.test_upstream_faults import SERVER

    async with fake_upstream() as up:
        channels = (("a", "openai", _ECHOED["a"], "m1"), ("c", "openai", "sk-test-c0-0b2f11", "m2"),
                    ("x", "anthropic", _ECHOED["x"], "am1"),
                    ("z", "anthropic", "sk-ant-test-z0-d00d", "am2"))
        cfg = loads(fault_config(up, channels, server=SERVER, strikes=2), source="echo")
        key = _ECHOED["a" if api == "openai" else "x"]
        message = f"Incorrect API key provided: {key}"
        if api == "openai":
            up.on("a", Act(status=401, body=orjson.dumps({"error": {
                "message": message, "type": "invalid_request_error", "code": "invalid_api_key"}})))
            path, req = "/v1/chat/completions", {"model": "orca/r", "messages": [
                {"role": "user", "content": "hi"}]}
        else:
            up.on("x", Act(status=401, body=orjson.dumps({"type": "error", "error": {
                "type": "authentication_error", "message": message}})))
            path, req = "/v1/messages", {"model": "orca/ra", "max_tokens": 8, "messages": [
                {"role": "user", "content": "hi"}]}
        async with sidecar(cfg) as sc:
            r = await sc.http.post(path, content=orjson.dumps(req),
                                   headers={**JSON, "x-orca-session": "echo"})
    assert r.status_code == 401
    assert key.encode() not in r.content, r.content[:300]
    assert f"Incorrect API key provided: [key fp {Secret(key).fp}]" in r.text, r.text


# --- refusals below the app, in the inbound shape (SPEC §1.2, §18) -----------------------------

async def test_over_max_concurrency_is_a_503_in_the_inbound_shape_with_retry_after() -> None:
    cfg = loads(SIM_CONFIG.replace("header_timeout_s = 0.5", "header_timeout_s = 5")
                .format(extra="max_concurrency = 2"), source="sec")
    async with sidecar(cfg) as sc:
        idle = [await asyncio.open_connection("127.0.0.1", sc.port) for _ in range(3)]
        try:
            body = orjson.dumps({"model": "orca/coding", "max_tokens": 8,
                                 "messages": [{"role": "user", "content": "hi"}]})
            reader, writer = await asyncio.open_connection("127.0.0.1", sc.port)
            writer.write(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                         b"Content-Type: application/json\r\nanthropic-version: 2023-06-01\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (sc.port, len(body), body))
            await writer.drain()
            async with asyncio.timeout(5):
                got = await reader.read(65536)
            writer.close()
        finally:
            for _, w in idle:
                w.close()
    head, _, payload = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503"), head[:60]
    assert b"content-type: application/json" in head.lower() and b"retry-after: 1" in head.lower()
    doc = orjson.loads(payload)
    assert doc["type"] == "error" and doc["error"]["type"] == "overloaded_error"
    assert "max_concurrency" in doc["error"]["message"]


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/chat/completions"])
async def test_a_header_timeout_after_the_request_line_answers_in_the_inbound_shape(
        path: str) -> None:
    async with sidecar(loads(SIM_CONFIG.format(extra=""), source="sec")) as sc:
        _, got = await _closed_after(sc.port, [b"POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                                               % (path.encode(), sc.port)], 10)
    assert got.startswith(b"HTTP/1.1 408 "), got[:80]
    head, _, body = got.partition(b"\r\n\r\n")
    assert b"application/json" in head.lower(), head
    doc = orjson.loads(body)
    if path == "/v1/messages":
        assert doc["type"] == "error" and doc["error"]["type"]
    else:
        assert "header_timeout_s" in doc["error"]["message"]
