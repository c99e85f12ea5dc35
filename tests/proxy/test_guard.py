"""The request guard (SPEC §11): each refusal, its status and inbound-shaped body, body limits."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson
import pytest

from orca_cli.config.schema import ServerConfig
from orca_cli.proxy.guard import (
    BodyTimeout,
    BodyTooLarge,
    ClientGone,
    GuardPolicy,
    api_for_scope,
    check,
    read_body,
    send_error,
)

PORT = 8787
TOKEN = "in-tok-3f9a"
ADMIN = "adm-tok-77c1"
Message = MutableMapping[str, Any]


def policy(**server: Any) -> GuardPolicy:
    return GuardPolicy.from_config(ServerConfig(**server), port=PORT, admin_token=ADMIN)


def scope(
    path: str = "/v1/chat/completions",
    method: str = "POST",
    headers: dict[str, str] | list[tuple[str, str]] | None = None,
    *,
    host: str | None = f"127.0.0.1:{PORT}",
    json: bool = True,
    server_port: int = PORT,
) -> dict[str, Any]:
    pairs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    if host is not None:
        pairs.insert(0, ("host", host))
    if json and method == "POST":
        pairs.append(("content-type", "application/json"))
    return {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [(k.lower().encode(), v.encode()) for k, v in pairs],
        "server": ("127.0.0.1", server_port),
    }


# --- Host (DNS rebinding) ---------------------------------------------------------------


@pytest.mark.parametrize("host", [f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"LOCALHOST:{PORT}",
                                  f"[::1]:{PORT}", f"::1:{PORT}"])
def test_loopback_names_with_the_bound_port_pass(host: str) -> None:
    assert check(policy(), scope(host=host)) is None


@pytest.mark.parametrize("host", ["evil.example:8787", "127.0.0.1:9999", "127.0.0.1", "localhost",
                                  "127.0.0.1:8787.evil.example", ""])
def test_other_hosts_are_refused_naming_the_config_key(host: str) -> None:
    r = check(policy(), scope(host=host))
    assert r is not None and r.status == 403 and r.code == "host_not_allowed"
    assert "server.allowed_hosts" in r.message and "DNS rebinding" in r.message
    assert "evil" not in r.message and ":9999" not in r.message


def test_missing_or_repeated_host_is_refused() -> None:
    assert check(policy(), scope(host=None)) is not None
    two = scope(headers=[("host", "evil.example")])
    r = check(policy(), two)
    assert r is not None and r.status == 403


def test_configured_hosts_with_and_without_port() -> None:
    p = policy(allowed_hosts=("orca.internal", "box.lan:9000", "fe80::1"))
    assert check(p, scope(host=f"orca.internal:{PORT}")) is None
    assert check(p, scope(host="box.lan:9000")) is None
    assert check(p, scope(host=f"[fe80::1]:{PORT}")) is None
    assert check(p, scope(host="box.lan:8787")) is not None
    assert check(p, scope(host="orca.internal:1234")) is not None


def test_port_80_accepts_a_host_without_port() -> None:
    p = GuardPolicy.from_config(ServerConfig(), port=80, admin_token=ADMIN)
    assert check(p, scope(host="localhost")) is None
    assert check(p, scope(host="localhost:80")) is None


def test_port_zero_policy_takes_the_port_from_the_socket() -> None:
    p = GuardPolicy.from_config(ServerConfig(), port=0, admin_token=ADMIN)
    assert check(p, scope(host="127.0.0.1:40123", server_port=40123)) is None
    assert check(p, scope(host="127.0.0.1:40124", server_port=40123)) is not None
    assert check(p, scope(host="evil.example:40123", server_port=40123)) is not None


def test_a_specific_bind_address_is_an_allowed_host() -> None:
    p = policy(host="192.168.7.5", inbound_token=TOKEN)
    hdr = {"authorization": f"Bearer {TOKEN}"}
    assert check(p, scope(host=f"192.168.7.5:{PORT}", headers=hdr)) is None
    wildcard = policy(host="0.0.0.0", inbound_token=TOKEN)
    assert check(wildcard, scope(host=f"0.0.0.0:{PORT}", headers=hdr)) is not None


def test_forwarded_headers_do_not_bypass_the_host_check() -> None:
    s = scope(host="evil.example:8787",
              headers={"x-forwarded-host": f"127.0.0.1:{PORT}", "x-forwarded-for": "127.0.0.1"})
    r = check(policy(), s)
    assert r is not None and r.status == 403


# --- Origin (CSRF) ----------------------------------------------------------------------


def test_a_browser_origin_not_listed_is_refused() -> None:
    r = check(policy(), scope(headers={"origin": "https://evil.example"}))
    assert r is not None and r.status == 403 and r.code == "origin_not_allowed"
    assert "server.allowed_origins" in r.message and "evil" not in r.message
    assert check(policy(), scope(headers={"origin": "null"})) is not None


def test_a_listed_origin_passes_case_and_trailing_slash_aside() -> None:
    p = policy(allowed_origins=("https://My.Tool",))
    assert check(p, scope(headers={"origin": "https://my.tool"})) is None
    assert check(p, scope(headers={"origin": "https://my.tool/"})) is None
    assert check(p, scope(headers={"origin": "https://my.tool.evil"})) is not None


# --- Tokens -----------------------------------------------------------------------------


@pytest.mark.parametrize("headers", [
    {"authorization": f"Bearer {TOKEN}"},
    {"authorization": f"bearer {TOKEN}"},
    {"x-api-key": TOKEN},
    {"x-orca-token": TOKEN},
    # pass-through channels: Authorization carries an upstream key, the token rides beside it
    {"authorization": "Bearer sk-upstream-key", "x-orca-token": TOKEN},
])
def test_each_inbound_token_form_is_accepted(headers: dict[str, str]) -> None:
    assert check(policy(inbound_token=TOKEN), scope(headers=headers)) is None


@pytest.mark.parametrize("headers", [
    {}, {"authorization": "Bearer sk-elsewhere"}, {"x-api-key": TOKEN + "x"}, {"authorization": TOKEN},
    {"x-api-key": ""}, {"authorization": f"Basic {TOKEN}"},
])
def test_a_missing_or_wrong_inbound_token_is_401_and_never_echoed(headers: dict[str, str]) -> None:
    r = check(policy(inbound_token=TOKEN), scope(headers=headers))
    assert r is not None and r.status == 401 and r.code == "invalid_api_key"
    assert TOKEN not in r.message
    assert not any(v and v in r.message for v in headers.values())
    assert "server.inbound_token" in r.message


def test_without_an_inbound_token_v1_is_open() -> None:
    assert check(policy(), scope()) is None


def test_unlisted_paths_need_the_inbound_token_too() -> None:
    r = check(policy(inbound_token=TOKEN), scope("/v2/anything", "GET"))
    assert r is not None and r.status == 401


@pytest.mark.parametrize("path", ["/healthz", "/metrics"])
def test_health_and_metrics_need_no_token_but_pass_host_and_origin(path: str) -> None:
    p = policy(inbound_token=TOKEN)
    assert check(p, scope(path, "GET")) is None
    assert check(p, scope(path, "GET", host="evil.example:8787")) is not None
    assert check(p, scope(path, "GET", {"origin": "https://evil.example"})) is not None


def test_admin_api_requires_the_admin_bearer() -> None:
    p = policy(inbound_token=TOKEN)
    ok = scope("/orca/v1/sessions", "GET", {"authorization": f"Bearer {ADMIN}"})
    assert check(p, ok) is None
    for hdr in ({}, {"authorization": f"Bearer {TOKEN}"}, {"x-api-key": ADMIN},
                {"x-orca-token": ADMIN}):
        r = check(p, scope("/orca/v1/sessions", "GET", hdr))
        assert r is not None and r.status == 401 and r.code == "invalid_admin_token"
        assert ADMIN not in r.message


def test_an_empty_admin_token_refuses_every_admin_request() -> None:
    p = GuardPolicy.from_config(ServerConfig(), port=PORT, admin_token="")
    r = check(p, scope("/orca/v1/stats", "GET", {"authorization": "Bearer "}))
    assert r is not None and r.status == 401


# --- Content-Type and Content-Length ----------------------------------------------------


def test_post_without_json_content_type_is_415() -> None:
    for ct in (None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
               "application/jsonx"):
        hdr = {"content-type": ct} if ct else {}
        r = check(policy(), scope(headers=hdr, json=False))
        assert r is not None and r.status == 415 and r.code == "unsupported_media_type"


def test_json_content_type_parameters_are_allowed() -> None:
    s = scope(headers={"content-type": "Application/JSON; charset=utf-8"}, json=False)
    assert check(policy(), s) is None
    assert check(policy(), scope("/v1/models", "GET", json=False)) is None


def test_content_length_over_the_limit_is_413_before_reading() -> None:
    p = policy(max_body_mb=1)
    assert check(p, scope(headers={"content-length": str(1024 * 1024)})) is None
    r = check(p, scope(headers={"content-length": str(1024 * 1024 + 1)}))
    assert r is not None and r.status == 413 and r.code == "request_too_large"
    bad = check(p, scope(headers={"content-length": "-1"}))
    assert bad is not None and bad.status == 400


def test_checks_run_host_origin_token_type_size_in_that_order() -> None:
    p = policy(inbound_token=TOKEN, max_body_mb=1)
    everything_wrong = scope(host="evil.example", headers={"origin": "https://x.example",
                             "content-length": "99999999"}, json=False)
    assert check(p, everything_wrong).status == 403  # type: ignore[union-attr]


# --- the inbound error shape ------------------------------------------------------------


class Sent:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def __call__(self, message: Message) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int:
        return int(self.messages[0]["status"])

    @property
    def headers(self) -> dict[bytes, bytes]:
        return dict(self.messages[0]["headers"])

    @property
    def json(self) -> Any:
        return orjson.loads(self.messages[1]["body"])


def test_api_follows_the_path_and_the_models_client() -> None:
    assert api_for_scope(scope("/v1/messages")) == "anthropic"
    assert api_for_scope(scope("/v1/messages/count_tokens")) == "anthropic"
    assert api_for_scope(scope("/v1/chat/completions")) == "openai"
    assert api_for_scope(scope("/v1/models", "GET")) == "openai"
    assert api_for_scope(scope("/v1/models", "GET", {"anthropic-version": "2023-06-01"})) == "anthropic"


async def test_a_refusal_on_messages_is_anthropic_shaped() -> None:
    s = scope("/v1/messages", headers={"x-api-key": "nope"})
    r = check(policy(inbound_token=TOKEN), s)
    assert r is not None
    sent = Sent()
    await send_error(sent, api_for_scope(s), r, close=True)
    assert sent.status == 401
    assert sent.json == {"type": "error", "error": {"type": "authentication_error",
                                                    "message": r.message}}
    assert sent.headers[b"content-type"] == b"application/json"
    assert sent.headers[b"connection"] == b"close"
    assert int(sent.headers[b"content-length"]) == len(sent.messages[1]["body"])
    assert not any(k.startswith(b"access-control-") for k in sent.headers)


async def test_a_refusal_on_chat_completions_is_openai_shaped() -> None:
    s = scope(headers={"content-length": str(64 * 1024 * 1024)})
    r = check(policy(), s)
    assert r is not None
    sent = Sent()
    await send_error(sent, api_for_scope(s), r)
    assert sent.status == 413
    err = sent.json["error"]
    assert err["code"] == "request_too_large" and err["type"] == "invalid_request_error"
    assert "server.max_body_mb" in err["message"] and err["param"] is None
    assert b"connection" not in sent.headers


async def test_send_error_with_a_status_and_extra_headers() -> None:
    sent = Sent()
    await send_error(sent, "anthropic", 503, "nothing could be attempted",
                     extra_headers=[(b"x-should-retry", b"false")])
    assert sent.status == 503
    assert sent.json["error"]["type"] == "overloaded_error"
    assert sent.headers[b"x-should-retry"] == b"false"


# --- read_body --------------------------------------------------------------------------


def feed(*messages: Message) -> Callable[[], Awaitable[Message]]:
    queue = list(messages)

    async def receive() -> Message:
        return queue.pop(0)

    return receive


def chunk(body: bytes, more: bool = True) -> Message:
    return {"type": "http.request", "body": body, "more_body": more}


async def test_read_body_joins_chunks() -> None:
    got = await read_body(feed(chunk(b"ab"), chunk(b""), chunk(b"cd", False)),
                          limit=10, deadline_s=1)
    assert got == b"abcd"
    assert await read_body(feed(chunk(b"x", False)), limit=1, deadline_s=1) == b"x"
    assert await read_body(feed({"type": "http.request"}), limit=1, deadline_s=1) == b""


async def test_chunked_body_past_the_limit_is_refused_at_the_chunk_that_crosses() -> None:
    pulled = 0

    async def endless() -> Message:
        nonlocal pulled
        pulled += 1
        return chunk(b"x" * 400)

    with pytest.raises(BodyTooLarge) as info:
        await read_body(endless, limit=1000, deadline_s=5)
    assert pulled == 3
    assert info.value.status == 413


async def test_a_stalled_body_times_out() -> None:
    stall = asyncio.Event()
    calls = 0

    async def receive() -> Message:
        nonlocal calls
        calls += 1
        if calls == 1:
            return chunk(b"{")
        await stall.wait()  # never set: the client stopped sending
        raise AssertionError("unreachable")

    with pytest.raises(BodyTimeout) as info:
        await read_body(receive, limit=100, deadline_s=0.05)
    assert info.value.status == 408 and "server.header_timeout_s" in str(info.value)


async def test_a_disconnect_mid_body_is_client_gone() -> None:
    with pytest.raises(ClientGone):
        await read_body(feed(chunk(b"ab"), {"type": "http.disconnect"}), limit=10, deadline_s=1)


def test_the_as_sent_host_and_content_type_agree_with_the_normalised_checks() -> None:
    """A Host in the policy's set as sent, and a content type that is `application/json` as
    sent, pass without being normalised: the verdicts match normalising every value."""
    from orca_cli.proxy.guard import _host_allowed

    pol = policy(allowed_hosts=["Example.test", "api.local:9000"])
    for host in (f"127.0.0.1:{PORT}", f"LOCALHOST:{PORT}", f"localhost:{PORT}", "example.test",
                 "EXAMPLE.test", "api.local:9000", "API.LOCAL:9000", "api.local", "evil.test",
                 f"[::1]:{PORT}", "127.0.0.1"):
        s = scope(host=host)
        assert (check(pol, s) is None) == _host_allowed(pol, host.encode().lower(), s), host
    for ctype in ("application/json", "Application/JSON", "application/json; charset=utf-8",
                  " application/json ", "text/plain", "application/jsonx", ""):
        s = scope(headers={"content-type": ctype}, json=False)
        normal = ctype.encode().partition(b";")[0].strip().lower() == b"application/json"
        assert (check(pol, s) is None) == normal, ctype
