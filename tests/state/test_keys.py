"""Store key names (SPEC §9): builders and the parser scans rely on."""

from __future__ import annotations

import pytest

from orca_cli.state import keys as K
from orca_cli.state.base import SlotRef


@pytest.mark.parametrize(
    "slot, suffix, full",
    [
        (SlotRef.of_session("coding", "s1"), "tier", "orca:{r:coding:s:s1}:tier"),
        (
            SlotRef.of_session("coding", "h:ab:cd"),
            "pin:strong",
            "orca:{r:coding:s:h:ab:cd}:pin:strong",
        ),
        (SlotRef.of_router("coding"), "share:12:s", "orca:{r:coding}:share:12:s"),
        (SlotRef("workspace"), "share:12:t", "orca:{w}:share:12:t"),
        (SlotRef("traces"), "cid:x", "orca:{t}:cid:x"),
    ],
)
def test_keys_round_trip_through_the_parser(slot: SlotRef, suffix: str, full: str) -> None:
    assert K.full_key("orca", slot, suffix) == full
    assert K.parse_key("orca", full) == (slot, suffix)


@pytest.mark.parametrize(
    "key",
    [
        "orca:epoch",
        "other:{w}:x",
        "orca:{x}:y",
        "orca:{r:}:y",
        "orca:{r:a:x:b}:y",
        "orca:{w}",
        "orca:{r:a:s:}:y",
    ],
)
def test_foreign_or_malformed_keys_do_not_parse(key: str) -> None:
    assert K.parse_key("orca", key) is None


@pytest.mark.parametrize(
    "name", ["", "a:b", "a{b", "a}b", "a b", "a*", "a?", "a[1]", "a\\b", "\x01"]
)
def test_unsafe_router_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="cannot be used in a store key"):
        K.check_name(name)


def test_free_form_components_are_hashed_like_session_ids() -> None:
    assert K.safe_component("req-123") == "req-123"
    assert K.safe_component("a}b").startswith("h:") and len(K.safe_component("x" * 200)) == 66
    assert K.slot_tag("orca", SlotRef.of_session("r", "{evil}")).count("{") == 1


@pytest.mark.parametrize("raw", ["req_0123abcd", "bench-7", "a}b", "x" * 200, "é-ü", "a\x01b",
                                 "\ud800", "h:" + "0" * 64, ""])
def test_an_id_made_safe_once_names_the_same_keys(raw: str) -> None:
    """A store that made the request id safe already puts the prefix before it: the marker,
    trace and client-id keys are those of the raw id (a safe component stays as it is)."""
    tid = K.safe_component(raw)
    assert K.safe_component(tid) == tid
    assert K.MARKER_PREFIX + tid == K.marker_key(raw) == K.marker_key(tid)
    assert K.TRACE_PREFIX + tid == K.trace_key(raw) == K.trace_key(tid)
    assert K.CLIENT_ID_PREFIX + tid == K.client_id_key(raw) == K.client_id_key(tid)


def test_scan_patterns_escape_glob_characters() -> None:
    assert (
        K.scan_pattern("orca", "session", router="coding", session="s*1")
        == "orca:{r:coding:s:s\\*1}:*"
    )
    assert K.scan_pattern("orca", "router", key_prefix="share:") == "orca:{r:*}:share:*"
    with pytest.raises(ValueError, match="unknown slot kind"):
        K.scan_pattern("orca", "nope")


def test_share_bucket_names_are_per_hour_and_kind() -> None:
    assert K.share_field(493000, "s") == "493000:s"
    assert K.share_key(493000, "s") == "share:493000:s"  # the per-hour key before the hash
    with pytest.raises(ValueError):
        K.share_field(1, "x")
    with pytest.raises(ValueError):
        K.share_key(1, "x")


def test_a_share_bucket_name_parses_back_to_its_hour_and_kind() -> None:
    assert K.parse_share_key(K.share_key(493000, "s")) == (493000, "s")
    assert K.parse_share_key(K.share_key(-3, "t")) == (-3, "t")
    for other in ("stats:493000", "share:x:s", "share:1:q", "share:1", "share:1:s:x", "pin:base",
                  "share"):
        assert K.parse_share_key(other) is None
    assert K.parse_share_field(K.share_field(-3, "t")) == (-3, "t")
    for other in ("w", "1", "x:s", "1:q", "1:s:x", ""):
        assert K.parse_share_field(other) is None


@pytest.mark.parametrize("model", ["claude-haiku-4-5", "openai/gpt-4o", "llama3:8b",
                                   "vendor/{odd} model", "m" * 300])
def test_a_concrete_models_pin_slots_are_a_reserved_safe_router_name(model: str) -> None:
    """SPEC §1.3: a concrete model's pins live under `direct_router(model)`: a name no
    configured router can take (those start with a letter or digit), that sits in a hash tag
    and parses back, one per model."""
    name = K.direct_router(model)
    assert K.check_name(name) == name and K.is_direct_router(name)
    assert not name[0].isalnum()
    slot = SlotRef.of_session(name, "s1")
    assert K.parse_key("orca", K.full_key("orca", slot, "chan:base")) == (slot, "chan:base")
    assert K.direct_router(model + "x") != name
    assert not K.is_direct_router("coding")


def test_a_readable_model_id_names_its_pin_slots_as_is() -> None:
    assert K.direct_router("claude-haiku-4-5") == "_direct.claude-haiku-4-5"
    assert K.direct_router("llama3:8b").startswith("_direct#")
