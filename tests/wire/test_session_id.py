"""The session id chain (SPEC §1.4): order, sanitising, derived ids, junk bodies."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from orca_cli.wire.session_id import SessionId, resolve_session_id, sanitize_session_id

ALL_HEADERS = {
    "x-orca-session": "orca",
    "x-claude-code-session-id": "claude",
    "session_id": "codex",
    "x-opencode-session": "opencode",
    "x-amp-thread-id": "amp",
    "x-session-id": "generic",
}
BODY = {
    "metadata": {"session_id": "meta", "user_id": "user_ab_account_cd_session_ud"},
    "prompt_cache_key": "pck",
    "user": "alice",
}


def resolve(headers: dict[str, str], body: Any, api: str = "openai") -> SessionId:
    return resolve_session_id(headers, body, router="coding", api=api)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "drop, expected",
    [
        ((), "orca"),
        (("x-orca-session",), "claude"),
        (("x-orca-session", "x-claude-code-session-id"), "codex"),
        (("x-orca-session", "x-claude-code-session-id", "session_id"), "opencode"),
        (("x-orca-session", "x-claude-code-session-id", "session_id", "x-opencode-session"), "amp"),
        (
            (
                "x-orca-session",
                "x-claude-code-session-id",
                "session_id",
                "x-opencode-session",
                "x-amp-thread-id",
            ),
            "generic",
        ),
    ],
)
def test_headers_win_in_the_spec_order(drop: tuple[str, ...], expected: str) -> None:
    headers = {k: v for k, v in ALL_HEADERS.items() if k not in drop}
    name = next(k for k, v in ALL_HEADERS.items() if v == expected)
    assert resolve(headers, BODY) == SessionId(expected, expected, f"header:{name}", True)


def test_body_metadata_session_id_comes_before_the_cache_key() -> None:
    assert resolve({}, BODY).id == "meta"
    assert resolve({}, BODY, "anthropic").source == "body:metadata.session_id"


def test_openai_prompt_cache_key_is_used_for_openai_only() -> None:
    body = {"prompt_cache_key": "pck", "metadata": {"user_id": "x_session_abc"}}
    assert resolve({}, body).id == "pck"
    assert resolve({}, body, "anthropic").id == "abc"


def test_anthropic_user_id_yields_the_part_after_session() -> None:
    body = {"metadata": {"user_id": "user_0f3a_account_9b1c_session_5e2d-77"}}
    sid = resolve({}, body, "anthropic")
    assert (sid.id, sid.source, sid.explicit) == ("5e2d-77", "body:metadata.user_id", True)
    assert (
        resolve({}, {"metadata": {"user_id": '{"session_id": "js-1"}'}}, "anthropic").id == "js-1"
    )
    assert not resolve({}, {"metadata": {"user_id": "user_without_marker"}}, "anthropic").explicit


def test_the_openai_user_field_is_never_a_session_id() -> None:
    sid = resolve({}, {"user": "alice", "messages": [{"role": "user", "content": "hi"}]})
    assert sid.source == "derived" and "alice" not in sid.id


def test_blank_values_fall_through() -> None:
    assert resolve({"x-orca-session": "  ", "x-session-id": "real"}, {}).id == "real"


def test_unsafe_or_long_ids_are_hashed_and_the_original_kept_raw() -> None:
    for raw in ("a{b}", "tab\there", "x" * 129, "é" * 65):
        expected = "h:" + hashlib.sha256(raw.encode()).hexdigest()
        assert sanitize_session_id(raw) == expected
        sid = resolve({"x-orca-session": raw}, {})
        assert (sid.id, sid.raw, sid.explicit) == (expected, raw, True)
    assert sanitize_session_id("x" * 128) == "x" * 128
    assert sanitize_session_id("é" * 64) == "é" * 64  # 128 bytes


def test_a_derived_id_is_stable_across_turns_and_not_long_pin_eligible() -> None:
    first = [
        {"role": "system", "content": "You are a coder."},
        {"role": "user", "content": "fix the bug"},
    ]
    tools = [{"type": "function", "function": {"name": "bash"}}]
    turn1 = {"messages": first, "tools": tools}
    later = [{"role": "assistant", "content": "done"}, {"role": "user", "content": "thanks"}]
    turn2 = {"messages": first + later, "tools": tools}
    a, b = resolve({}, turn1), resolve({}, turn2)
    assert a == b and a.source == "derived" and not a.explicit and a.raw is None
    assert a.id.startswith("d:") and len(a.id) == 34
    other_router = resolve_session_id({}, turn1, router="review", api="openai")
    assert other_router.id != a.id
    other_tools = resolve(
        {}, {**turn1, "tools": [{"type": "function", "function": {"name": "edit"}}]}
    )
    assert other_tools.id != a.id


def test_anthropic_derived_ids_read_system_blocks_and_content_blocks() -> None:
    body = {
        "system": [{"type": "text", "text": "sys"}],
        "tools": [{"name": "Read"}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
    }
    same = {
        "system": "sys",
        "tools": [{"name": "Read"}],
        "messages": [{"role": "user", "content": "hello"}],
    }
    assert resolve({}, body, "anthropic").id == resolve({}, same, "anthropic").id


@pytest.mark.parametrize(
    "junk",
    [
        None,
        [],
        "text",
        {"metadata": "x"},
        {"metadata": {"session_id": 5}},
        {"prompt_cache_key": {}},
        {"messages": "nope"},
        {"messages": [1, None, {"role": "user", "content": 7}]},
        {"tools": [None, {"function": "x"}, {"name": 3}]},
        {"system": {"a": 1}},
    ],
)
def test_junk_bodies_never_raise_and_fall_through_to_a_derived_id(junk: Any) -> None:
    for api in ("openai", "anthropic"):
        sid = resolve({}, junk, api)
        assert sid.source == "derived" and sid.id.startswith("d:")
