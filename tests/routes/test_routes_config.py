"""`[[routes]]`, `[[inbound_keys]]`, `[budgets]` at load: the graph's errors name the node path."""

from __future__ import annotations

from typing import Any

from orca_cli.config.load import parse
from orca_cli.config.routes import hash_token
from tests.config.helpers import errors_of, minimal_doc


def _doc(nodes: dict[str, Any], **route: Any) -> dict[str, Any]:
    doc = minimal_doc()
    doc["routes"] = [{"name": "r", "nodes": nodes, **route}]
    return doc


def _target(t: str = "big", **kw: Any) -> dict[str, Any]:
    return {"type": "target", "target": t, **kw}


def _cond(on_true: str, on_false: str, **kw: Any) -> dict[str, Any]:
    base = {"type": "condition", "field": "header:x-team", "op": "eq", "value": "a"}
    return {**base, "on_true": on_true, "on_false": on_false, **kw}


def test_a_valid_graph_loads_and_start_defaults_to_the_first_node() -> None:
    doc = _doc({"c": _cond("t", "d"), "t": _target(), "d": {"type": "deny", "status": 403}})
    cfg = parse(doc, environ={})
    assert cfg.routes[0].start == "c"
    assert set(cfg.routes[0].nodes) == {"c", "t", "d"}


def test_a_cycle_is_rejected_with_its_node_path() -> None:
    doc = _doc({"a": _cond("b", "t"), "b": _cond("a", "t"), "t": _target()})
    errs = errors_of(doc)
    assert errs == ["routes[0].nodes.b: cycle: a -> b -> a"]


def test_an_unreachable_node_is_named() -> None:
    doc = _doc({"a": _target(), "lost": _target()})
    assert errors_of(doc) == ['routes[0].nodes.lost: is unreachable from start node "a"']


def test_exits_left_open_and_unknown_nodes_are_named() -> None:
    doc = _doc({
        "a": _cond("", "nowhere"),
        "s": {"type": "split", "branches": [{"percent": 60, "next": "a"},
                                            {"percent": 40, "next": ""}]},
    }, start="s")
    errs = errors_of(doc)
    assert 'routes[0].nodes.a.on_true: exit left open: "a" needs a next node' in errs
    assert any(e.startswith('routes[0].nodes.a.on_false: names no node "nowhere"') for e in errs)
    assert 'routes[0].nodes.s.branches[1].next: exit left open: "s" needs a next node' in errs


def test_unknown_targets_fallbacks_and_channels_are_named() -> None:
    doc = _doc({"a": _target("gpt-9", fallbacks=["cheap", "nope"], only=["sim-b"])})
    errs = errors_of(doc)
    assert any(e.startswith("routes[0].nodes.a.target: target \"gpt-9\"") for e in errs)
    assert any(e.startswith('routes[0].nodes.a.fallbacks[1]: target "nope"') for e in errs)
    assert 'routes[0].nodes.a.only[0]: names no channel "sim-b"' in errs


def test_router_channel_model_and_model_targets_are_known() -> None:
    doc = _doc({"s": {"type": "split", "branches": [
        {"percent": 30, "next": "r"}, {"percent": 30, "next": "c"}, {"percent": 40, "next": "m"}]},
        "r": _target("orca/coding"), "c": _target("sim-a:big"), "m": _target("cheap")})
    assert errors_of(doc) == []


def test_node_rules() -> None:
    doc = _doc({
        "a": _cond("b", "t", field="body.x"),
        "b": {"type": "condition", "field": "/n", "op": "gt", "on_true": "c", "on_false": "t"},
        "c": {"type": "condition", "field": "model", "op": "regex", "value": "(",
              "on_true": "s", "on_false": "t"},
        "s": {"type": "split", "branches": [{"percent": 70, "next": "u"}]},
        "u": {"type": "budget", "within": "t", "exceeded": "d"},
        "t": _target(fallbacks=["cheap"] * 9, status=500),
        "d": {"type": "deny", "status": 200},
    })
    errs = errors_of(doc)
    assert any(e.startswith('routes[0].nodes.a.field: must be a JSON pointer') for e in errs)
    assert 'routes[0].nodes.b.number: is required for op = "gt"' in errs
    assert any(e.startswith("routes[0].nodes.c.value: is not a valid regex") for e in errs)
    assert "routes[0].nodes.s.branches: percents must add up to 100, got 70" in errs
    assert "routes[0].nodes.u: a budget node needs `requests` or `usd` (> 0)" in errs
    assert "routes[0].nodes.t.fallbacks: must list at most 8 models, got 9" in errs
    assert any(e.startswith('routes[0].nodes.t.status: is not a key of a "target" node')
               for e in errs)
    assert "routes[0].nodes.d.status: must be an HTTP error status in [400, 599], got 200" in errs


def test_inbound_keys_are_hashed_at_load_and_routes_name_them() -> None:
    doc = _doc({"a": _target()}, keys=["ci", "ops"])
    doc["inbound_keys"] = [{"name": "ci", "token": "${CI_TOKEN}"}]
    errs = errors_of(doc, {"CI_TOKEN": "s3cret-ci"})
    assert errs == ['routes[0].keys[1]: names no [[inbound_keys]] "ops"; keys: ci']
    doc["routes"][0]["keys"] = ["ci"]
    cfg = parse(doc, environ={"CI_TOKEN": "s3cret-ci"})
    key = cfg.inbound_keys[0]
    assert key.token == "" and key.token_sha256 == hash_token("s3cret-ci")
    assert "s3cret-ci" not in repr(cfg)


def test_duplicate_keys_and_tokens_are_rejected() -> None:
    doc = minimal_doc()
    doc["inbound_keys"] = [{"name": "a", "token": "t"}, {"name": "a", "token": "t"},
                           {"name": "c"}]
    errs = errors_of(doc)
    assert 'inbound_keys[1].name: duplicate name "a" (also inbound_keys[0])' in errs
    assert "inbound_keys[1].token: is the same token as inbound_keys[0]" in errs
    assert "inbound_keys[2].token: is required (and must not be empty)" in errs


def test_budgets_table() -> None:
    doc = minimal_doc()
    doc["budgets"] = {"session_usd": 2, "day_usd": -1}
    assert errors_of(doc) == ["budgets.day_usd: must be >= 0, got -1"]
    doc["budgets"]["day_usd"] = 50
    assert parse(doc, environ={}).budgets.session_usd == 2.0


def test_a_target_nodes_mode_overrides_the_routers_balanced_included() -> None:
    """SPEC §17: a target node's `mode` overrides its router's, `balanced` (weighted random
    by channel weight; `weighted` is its older name) as well as the suffix modes; "" keeps
    the router's. A `weighted` target over a price router used to keep price order."""
    from types import SimpleNamespace

    from orca_cli.turn.prepare import routed_target
    from tests.e2e.conftest import example_config

    cfg = example_config()

    def mode(value: str) -> object:
        node = SimpleNamespace(target="orca/background", mode=value)
        routed = SimpleNamespace(decision=SimpleNamespace(target=node))
        t = routed_target(cfg, routed, "claude-haiku-4-5")  # type: ignore[arg-type]
        assert t.router == "background" and t.requested == "claude-haiku-4-5"
        return t.mode_override

    assert [mode(m) for m in ("balanced", "weighted", "price", "latency", "throughput", "")] == [
        "balanced", "balanced", "price", "latency", "throughput", None]



def test_a_router_target_no_enabled_channel_serves_is_warned_of() -> None:
    from orca_cli.config.load import loads
    from orca_cli.config.routes import unserved_targets

    cfg = loads("""
[[channels]]
name = "on"
type = "sim"
models = ["a"]

[[channels]]
name = "off"
type = "sim"
enabled = false
models = ["b"]

[routers.live]
allowed_models = ["a"]

[routers.dark]
allowed_models = ["b"]

[[routes]]
name = "r"
start = "t"

[routes.nodes.t]
type = "target"
target = "orca/dark"
fallbacks = ["orca/live"]
""", source="test", environ={})
    assert unserved_targets(cfg) == [("routes[0].nodes.t.target",
                                      'no enabled channel serves a model of router "dark": it '
                                      "is never served")]
