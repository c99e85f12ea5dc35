"""Store key names (SPEC §9): hash-tagged slots, suffix builders, and the parser for scans.

Every key lives in one of four hash slots, so each slot's keys land on one Redis Cluster slot
and one Lua script can touch them atomically:

    <prefix>:{r:<router>:s:<session>}:<suffix>  session: tier, pin:<tier>, chan:<tier>
    <prefix>:{r:<router>}:<suffix>              router: share, stats:<hour>, pct,
                                                linucb:<arm>, aff:<hash>, recent, audit
    <prefix>:{w}:<suffix>                       workspace: share, audit
    <prefix>:{t}:<suffix>                       traces: trace:<id>, cid:<client id>, idx
    <prefix>:epoch                              the state-loss epoch (SPEC §9)

A concrete model (SPEC §1.3: served directly, no router) keeps its pins in the session and
router slots of a reserved router name, `direct_router(model)`: a session's channel pin in
`{r:_direct.<model>:s:<session>}:chan:<tier>` (per model and session, so two models of one
session keep apart), a sessionless prefix's affinity in `{r:_direct.<model>}:aff:<hash>`.
Configured router names start with a letter or digit, so `_direct.` never meets one.

Every slot a commit writes also holds that request's marker `commit:<request_id>`.

`share` is the slot's share window, one hash: fields `<hour>:s` (billed successes served
strong) and `<hour>:t` (all billed successes) per hour bucket, and `w`, the widest window its
writers keep (`WindowIncrOp`). Before it, each bucket was a key of its own, `share:<hour>:s|t`
(`share_key`); a Redis store folds those into the hash (`scripts.LEGACY_FOLD`).

Session ids reach this module already sanitised by `wire/session_id.py` (SPEC §1.4: no `{`, `}`
or control characters, at most 128 bytes). Router names and the prefix come from config and must
be "safe names" (`check_name`); a free-form component inside a suffix (a request id, a client
request id, an arm, an affinity hash) goes through `safe_component`, the same rule as §1.4.
"""

from __future__ import annotations

import hashlib
import re

from orca_cli.state.base import SlotRef

__all__ = [
    "AUDIT_KEY",
    "BUDGETS",
    "CLIENT_ID_PREFIX",
    "MARKER_PREFIX",
    "PCT_KEY",
    "RECENT_KEY",
    "SHARE_KEY",
    "SLOT_KINDS",
    "TRACES",
    "TRACE_INDEX_KEY",
    "TRACE_PREFIX",
    "WORKSPACE",
    "affinity_key",
    "budget_counter_key",
    "budget_limit_key",
    "chan_key",
    "check_name",
    "client_id_key",
    "direct_router",
    "epoch_key",
    "full_key",
    "glob_escape",
    "is_direct_router",
    "key_matches",
    "linucb_key",
    "marker_key",
    "parse_key",
    "parse_share_field",
    "parse_share_key",
    "pin_key",
    "router_tag",
    "safe_component",
    "scan_pattern",
    "session_tag",
    "share_field",
    "share_key",
    "slot_tag",
    "stats_key",
    "tier_key",
    "trace_key",
]

SLOT_KINDS = ("session", "router", "workspace", "traces", "budgets")
WORKSPACE = SlotRef("workspace")
TRACES = SlotRef("traces")
BUDGETS = SlotRef("budgets")  # SPEC §17: c:<counter> hashes {requests, usd}, limit:<name>:<key>

_UNSAFE_NAME = re.compile(r"[\x00-\x20\x7f-\x9f{}:*?\[\]\\]")
_UNSAFE_COMPONENT = re.compile(r"[\x00-\x1f\x7f-\x9f{}]")
_MAX_COMPONENT_BYTES = 128

PCT_KEY = "pct"
SHARE_KEY = "share"
RECENT_KEY = "recent"
AUDIT_KEY = "audit"
TRACE_INDEX_KEY = "idx"


def check_name(name: str, what: str = "router name") -> str:
    """Return `name` if it can sit inside a hash tag; raise ValueError otherwise.

    A safe name is non-empty and has no `:`, braces, whitespace, control or glob characters,
    so `parse_key` can split a session tag `{r:<router>:s:<session>}` unambiguously.
    """
    if not name or _UNSAFE_NAME.search(name):
        raise ValueError(
            f"{what} {name!r} cannot be used in a store key; use letters, digits, '-', '_' or '.'"
        )
    return name


def safe_component(raw: str) -> str:
    """The SPEC §1.4 rule for any free-form key part: too long or unsafe -> `h:` + sha256 hex."""
    # Request and session ids are short printable ASCII: for ASCII, a character is a byte and
    # the unsafe ones are exactly the non-printable (\x00-\x1f, \x7f) and the braces, checked
    # here without the encode and the regex.
    if (raw.isascii() and len(raw) <= _MAX_COMPONENT_BYTES and raw.isprintable()
            and "{" not in raw and "}" not in raw):
        return raw
    data = raw.encode("utf-8", "surrogatepass")
    if len(data) > _MAX_COMPONENT_BYTES or _UNSAFE_COMPONENT.search(raw):
        return "h:" + hashlib.sha256(data).hexdigest()
    return raw


_DIRECT = "_direct."
_DIRECT_HASHED = "_direct#"


def direct_router(model: str) -> str:
    """The reserved router name whose slots hold a concrete model's pins: `_direct.<model>`,
    or `_direct#` + a hash of the id when the id cannot sit in a hash tag (`check_name`)."""
    if model and not _UNSAFE_NAME.search(model):
        return _DIRECT + model
    return _DIRECT_HASHED + hashlib.sha256(model.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def is_direct_router(name: str) -> bool:
    """Whether a slot's router is a concrete model's (`direct_router`), not a configured one."""
    return name.startswith((_DIRECT, _DIRECT_HASHED))


def slot_tag(prefix: str, slot: SlotRef) -> str:
    """`<prefix>:{...}:` — everything before the suffix."""
    if slot.kind == "session":
        return session_tag(prefix, slot.router, slot.session)
    if slot.kind == "router":
        return router_tag(prefix, slot.router)
    if slot.kind == "workspace":
        return f"{prefix}:{{w}}:"
    if slot.kind == "traces":
        return f"{prefix}:{{t}}:"
    if slot.kind == "budgets":
        return f"{prefix}:{{budgets}}:"
    raise ValueError(f"unknown slot kind {slot.kind!r}; valid: {', '.join(SLOT_KINDS)}")


def session_tag(prefix: str, router: str, session: str) -> str:
    """`slot_tag` of `SlotRef.of_session(router, session)`, with no SlotRef built."""
    return f"{prefix}:{{r:{router}:s:{safe_component(session)}}}:"


def router_tag(prefix: str, router: str) -> str:
    """`slot_tag` of `SlotRef.of_router(router)`, with no SlotRef built."""
    return f"{prefix}:{{r:{router}}}:"


def full_key(prefix: str, slot: SlotRef, suffix: str) -> str:
    return slot_tag(prefix, slot) + suffix


def epoch_key(prefix: str) -> str:
    return f"{prefix}:epoch"


def parse_key(prefix: str, key: str) -> tuple[SlotRef, str] | None:
    """Split a full key back into its slot and suffix; None for the epoch or foreign keys."""
    head = prefix + ":{"
    if not key.startswith(head):
        return None
    close = key.find("}", len(head))
    if close < 0 or key[close + 1 : close + 2] != ":":
        return None
    tag, suffix = key[len(head) : close], key[close + 2 :]
    if tag == "w":
        return WORKSPACE, suffix
    if tag == "t":
        return TRACES, suffix
    if tag == "budgets":
        return BUDGETS, suffix
    if not tag.startswith("r:"):
        return None
    rest = tag[2:]
    router, sep, session = rest.partition(":")
    if not sep:
        return (SlotRef.of_router(router), suffix) if router else None
    if not router or not session.startswith("s:") or len(session) < 3:
        return None
    return SlotRef.of_session(router, session[2:]), suffix


def glob_escape(text: str) -> str:
    """Escape Redis MATCH glob characters so `text` matches literally."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def scan_pattern(
    prefix: str,
    slot_kind: str,
    *,
    router: str | None = None,
    session: str | None = None,
    key_prefix: str = "",
) -> str:
    """A MATCH pattern covering the requested keys (callers still filter with `parse_key`).

    `slot_kind` is one of SLOT_KINDS or "all". A router pattern with no router also matches
    session keys (`*` spans `:s:<session>`), hence the filtering.
    """
    tail = glob_escape(key_prefix) + "*"
    p = glob_escape(prefix)
    r = glob_escape(router) if router else "*"
    if slot_kind == "session":
        s = glob_escape(safe_component(session)) if session else "*"
        return f"{p}:{{r:{r}:s:{s}}}:{tail}"
    if slot_kind == "router":
        return f"{p}:{{r:{r}}}:{tail}"
    if slot_kind == "workspace":
        return f"{p}:{{w}}:{tail}"
    if slot_kind == "traces":
        return f"{p}:{{t}}:{tail}"
    if slot_kind == "budgets":
        return f"{p}:{{budgets}}:{tail}"
    if slot_kind == "all":
        return f"{p}:{{*"
    raise ValueError(f"unknown slot kind {slot_kind!r}; valid: {', '.join(SLOT_KINDS)}, all")


def key_matches(
    ref: SlotRef,
    suffix: str,
    slot_kind: str,
    *,
    router: str | None = None,
    session: str | None = None,
    key_prefix: str = "",
) -> bool:
    """The exact filter a scan applies to a parsed key (MATCH patterns are only a first cut)."""
    if slot_kind != "all" and ref.kind != slot_kind:
        return False
    if router is not None and ref.kind in ("session", "router") and ref.router != router:
        return False
    if session is not None and ref.kind == "session" and ref.session != safe_component(session):
        return False
    return suffix.startswith(key_prefix)


# --- suffix builders: the only spelling of each key, shared by writers and readers -------------


def tier_key() -> str:
    return "tier"


RESERVATIONS_KEY = "resv"  # a session's tier transitions in flight (`scripts.TRANSITION_RESERVE`)


def pin_key(tier: str) -> str:
    return f"pin:{tier}"


def chan_key(tier: str) -> str:
    return f"chan:{tier}"


# The suffixes named by a request or client id: `<prefix>` + `safe_component(id)`. A store
# that has the safe component already (a commit's marker and trace share the request's)
# puts the prefix before it; `safe_component` gives a safe component back unchanged.
MARKER_PREFIX = "commit:"
TRACE_PREFIX = "trace:"
CLIENT_ID_PREFIX = "cid:"


def marker_key(request_id: str) -> str:
    return MARKER_PREFIX + safe_component(request_id)


def share_field(hour: int, kind: str) -> str:
    """A bucket of the `share` hash: `kind` is "s" (billed successes served strong) or "t"
    (all billed successes)."""
    if kind not in ("s", "t"):
        raise ValueError(f"share bucket kind must be 's' or 't', got {kind!r}")
    return f"{int(hour)}:{kind}"


def parse_share_field(field: str) -> tuple[int, str] | None:
    """`(hour, kind)` of a `share_field`, or None for any other field (`w`)."""
    hour, sep, kind = field.partition(":")
    if not sep or kind not in ("s", "t"):
        return None
    try:
        return int(hour), kind
    except ValueError:
        return None


def share_key(hour: int, kind: str) -> str:
    """The legacy per-hour bucket key `share:<hour>:<kind>` (read only to fold it)."""
    return "share:" + share_field(hour, kind)


def parse_share_key(suffix: str) -> tuple[int, str] | None:
    """`(hour, kind)` of a legacy `share_key` suffix, or None for any other suffix."""
    head, sep, field = suffix.partition(":")
    if head != "share" or not sep or field.count(":") != 1:
        return None
    return parse_share_field(field)


def stats_key(hour: int) -> str:
    return f"stats:{int(hour)}"


def linucb_key(arm: str) -> str:
    return f"linucb:{safe_component(arm)}"


def affinity_key(prefix_hash: str) -> str:
    return f"aff:{safe_component(prefix_hash)}"


def trace_key(request_id: str) -> str:
    return TRACE_PREFIX + safe_component(request_id)


def client_id_key(client_request_id: str) -> str:
    return CLIENT_ID_PREFIX + safe_component(client_request_id)


def budget_counter_key(counter: str) -> str:
    """A budget counter's hash in the `{budgets}` slot (`state/budgets.py` reads the same)."""
    return f"c:{counter}"


def budget_limit_key(name_and_key: str) -> str:
    """An `orca budget raise` limit, `limit:<name>:<key>` in the `{budgets}` slot."""
    return f"limit:{name_and_key}"
