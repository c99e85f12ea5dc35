"""The pure walk of a route graph: conditions, sticky splits, budgets, targets, denies."""

from __future__ import annotations

from typing import Any

from orca_cli.config.load import parse
from orca_cli.routing.routes import (
    RequestFacts,
    Spend,
    budget_refusal,
    budget_verdict,
    compile_routes,
    counter_key,
    inbound_key_name,
    spend_keys,
)
from orca_cli.routing.routes.graph import RouteTable
from tests.config.helpers import minimal_doc

NOW = 1_796_371_200.0  # 2026-12-04 00:00 UTC (a Friday)


def _table(nodes: dict[str, Any], **route: Any) -> RouteTable:
    doc = minimal_doc()
    doc["inbound_keys"] = [{"name": "ci", "token": "tok-ci"}, {"name": "ops", "token": "tok-ops"}]
    doc["routes"] = [{"name": "r", "nodes": nodes, **route}]
    return compile_routes(parse(doc, environ={}).routes)


def _facts(**kw: Any) -> RequestFacts:
    base: dict[str, Any] = {"endpoint": "openai", "model": "gpt-5", "now": NOW,
                            "request_id": "req-1"}
    return RequestFacts(**{**base, **kw})


def _cond(field: str, op: str, **kw: Any) -> dict[str, Any]:
    return {"type": "condition", "field": field, "op": op, "on_true": "yes", "on_false": "no",
            **kw}


ENDS = {"yes": {"type": "target", "target": "big"}, "no": {"type": "deny", "status": 403,
                                                          "message": "nope"}}


def _which(node: dict[str, Any], facts: RequestFacts) -> str:
    d = _table({"c": node, **ENDS}).evaluate(facts, {})
    assert d.path[0] == "c"
    return d.path[-1]


def test_condition_on_header_and_metadata() -> None:
    by_header = _cond("header:X-Team", "eq", value="infra")
    assert _which(by_header, _facts(headers={"x-team": "infra"})) == "yes"
    assert _which(by_header, _facts(headers={"x-team": "web"})) == "no"
    assert _which(by_header, _facts()) == "no"
    plan = _cond("metadata.plan", "in", value=["pro", "team"])
    assert _which(plan, _facts(body={"metadata": {"plan": "pro"}})) == "yes"
    assert _which(plan, _facts(body={"metadata": {"plan": "free"}})) == "no"


def test_condition_ops_on_pointers_session_model_endpoint() -> None:
    body = {"messages": [{"role": "system"}, {"role": "user"}], "max_tokens": 4000,
            "stream": True, "a/b": {"~x": 1}}
    f = _facts(body=body, session_id="s-1")
    assert _which(_cond("/messages/1/role", "eq", value="user"), f) == "yes"
    assert _which(_cond("/messages/5/role", "exists"), f) == "no"
    assert _which(_cond("/a~1b/~0x", "eq", value="1"), f) == "yes"
    assert _which(_cond("/stream", "eq", value="true"), f) == "yes"
    assert _which(_cond("/max_tokens", "gt", number=1000), f) == "yes"
    assert _which(_cond("/max_tokens", "lt", number=1000), f) == "no"
    assert _which(_cond("/stream", "lt", number=1000), f) == "no"  # not a number
    assert _which(_cond("model", "glob", value="gpt-*"), f) == "yes"
    assert _which(_cond("model", "regex", value="^claude"), f) == "no"
    assert _which(_cond("session", "exists"), f) == "yes"
    assert _which(_cond("session", "exists"), _facts()) == "no"
    assert _which(_cond("endpoint", "in", value=["anthropic", "responses"]), f) == "no"
    assert _which(_cond("header:x-n", "gt", number=2), _facts(headers={"x-n": "3"})) == "yes"


def test_route_matching_by_key_endpoint_and_model() -> None:
    t = _table({"t": {"type": "target", "target": "cheap"}}, keys=["ci"],
               endpoints=["anthropic"], models=["claude-*", "big"])
    hit = _facts(endpoint="anthropic", model="claude-x", key_name="ci")
    assert t.evaluate(hit, {}).kind == "target"
    assert t.evaluate(_facts(endpoint="anthropic", model="big", key_name="ci"), {}).kind == "target"
    for miss in (_facts(endpoint="anthropic", model="claude-x", key_name="ops"),
                 _facts(endpoint="openai", model="claude-x", key_name="ci"),
                 _facts(endpoint="anthropic", model="gpt-5", key_name="ci"),
                 _facts(endpoint="anthropic", model="claude-x")):
        assert t.evaluate(miss, {}).kind == "none"


def _split_table() -> RouteTable:
    return _table({"ab": {"type": "split", "branches": [{"percent": 50, "next": "a"},
                                                        {"percent": 50, "next": "b"}]},
                   "a": {"type": "target", "target": "cheap"},
                   "b": {"type": "target", "target": "big"}})


def test_split_is_sticky_per_session_and_about_even_over_sessions() -> None:
    t = _split_table()
    firsts: dict[str, str] = {}
    for s in range(400):
        for r in range(5):
            d = t.evaluate(_facts(session_id=f"s{s}", request_id=f"q{s}-{r}"), {})
            assert d.target is not None
            firsts.setdefault(f"s{s}", d.target.target)
            assert d.target.target == firsts[f"s{s}"]
            assert d.bucket in ("ab=0", "ab=1")
    share = sum(v == "cheap" for v in firsts.values()) / len(firsts)
    assert 0.42 < share < 0.58


def test_split_uses_prompt_cache_key_then_request_id() -> None:
    t = _split_table()
    picks = {t.evaluate(_facts(body={"prompt_cache_key": "conv-7"}, request_id=f"q{i}"), {}).bucket
             for i in range(30)}
    assert len(picks) == 1
    per_request = {t.evaluate(_facts(request_id=f"q{i}"), {}).bucket for i in range(30)}
    assert per_request == {"ab=0", "ab=1"}


def test_budget_node_switches_branch_on_requests_or_usd() -> None:
    t = _table({"b": {"type": "budget", "scope": "key", "window": "day", "requests": 100,
                      "usd": 5.0, "within": "yes", "exceeded": "no"}, **ENDS})
    f = _facts(key_name="ci")
    key = counter_key("key", "ci", "day", NOW)
    assert key == "key:ci:day:2026-12-04"
    assert t.counters_needed(f) == (key,)
    assert t.evaluate(f, {}).path == ("b", "yes")
    assert t.evaluate(f, {key: Spend(99, 4.99)}).path == ("b", "yes")
    assert t.evaluate(f, {key: Spend(100, 0.0)}).path == ("b", "no")
    assert t.evaluate(f, {key: Spend(1, 5.0)}).path == ("b", "no")
    other = counter_key("key", "ops", "day", NOW)
    assert t.evaluate(f, {other: Spend(1000, 99.0)}).path == ("b", "yes")


def test_budget_windows_and_spend_keys() -> None:
    assert counter_key("route", "r", "week", NOW) == "route:r:week:2026-W49"
    assert counter_key("session", "s", "month", NOW) == "session:s:month:2026-12"
    keys = spend_keys(_facts(key_name="ci", session_id="s"), "r")
    assert "key:ci:day:2026-12-04" in keys and "route:r:month:2026-12" in keys
    assert "session:s:all:-" in keys and "sessionkey:s:all:ci" in keys  # the key's part
    assert len(keys) == 11


def test_target_and_deny_carry_their_settings() -> None:
    t = _table({"c": _cond("header:x", "exists"),
                "yes": {"type": "target", "target": "orca/coding", "mode": "price",
                        "only": ["sim-a"], "fallbacks": ["cheap"], "affinity": False},
                "no": {"type": "deny", "status": 429, "message": "go away"}})
    d = t.evaluate(_facts(headers={"x": "1"}), {})
    assert d.kind == "target" and d.route == "r" and d.target is not None
    assert (d.target.target, d.target.mode, d.target.only, d.target.fallbacks,
            d.target.affinity) == ("orca/coding", "price", ("sim-a",), ("cheap",), False)
    d = t.evaluate(_facts(), {})
    assert d.kind == "deny" and d.deny is not None and (d.deny.status, d.deny.message) == (
        429, "go away")


def test_inbound_key_name() -> None:
    doc = minimal_doc()
    doc["inbound_keys"] = [{"name": "ci", "token": "tok-ci"}, {"name": "ops", "token": "tok-ops"}]
    cfg = parse(doc, environ={})
    assert inbound_key_name(cfg, ["", "tok-ops"]) == "ops"
    assert inbound_key_name(cfg, ["tok-ci", "tok-ops"]) == "ci"
    assert inbound_key_name(cfg, ["tok-x"]) is None
    assert inbound_key_name(parse(minimal_doc(), environ={}), ["tok-ci"]) is None


def test_budget_verdict_and_message() -> None:
    assert budget_verdict(0.0, 0.0) == "ok"
    assert budget_verdict(7.99, 10.0) == "ok"
    assert budget_verdict(8.0, 10.0) == "deny_strong"
    assert budget_verdict(10.0, 10.0) == "refuse"
    msg = budget_refusal("day_usd", 50.123, 50.0, 'inbound key "ci"', "2026-12-04 (UTC)")
    assert "budget day_usd" in msg and "$50.12 of $50.00" in msg
    assert "`orca budget raise day_usd <usd> --key ci`" in msg


def test_check_budgets_takes_the_worst_and_names_it() -> None:
    from orca_cli.routing.routes import check_budgets, config_budget_counters

    f = _facts(key_name="ci", session_id="s9")
    c = config_budget_counters(f)
    assert c == {"day_usd": "key:ci:day:2026-12-04", "month_usd": "key:ci:month:2026-12",
                 "session_usd": "session:s9:all:-"}
    limits = {"session_usd": 2.0, "day_usd": 50.0, "month_usd": 0.0}
    assert check_budgets(limits, f, {}).verdict == "ok"
    near = check_budgets(limits, f, {c["session_usd"]: Spend(3, 1.7)})
    assert (near.verdict, near.name, near.message) == ("deny_strong", "session_usd", "")
    over = check_budgets(limits, f, {c["session_usd"]: Spend(3, 1.7),
                                     c["day_usd"]: Spend(400, 51.0),
                                     c["month_usd"]: Spend(999, 9999.0)})  # month: no budget
    assert (over.verdict, over.name, over.spent, over.limit) == ("refuse", "day_usd", 51.0, 50.0)
    assert over.message.startswith('budget day_usd for inbound key "ci" is spent: $51.00 of '
                                   "$50.00 in 2026-12-04 (UTC)")
    assert "orca budget raise day_usd <usd> --key ci" in over.message
    alone = check_budgets(limits, _facts(session_id="s9"), {"session:s9:all:-": Spend(9, 2.5)})
    assert alone.verdict == "refuse" and 'session "s9"' in alone.message
    assert "--key" not in alone.message


def test_facts_of_a_request_head() -> None:
    f = RequestFacts.of("anthropic", [("X-Team", "a"), ("x-team", "b"), ("accept", "*/*")],
                        {"model": "claude-x", "metadata": {"plan": "pro"}}, session_id="s",
                        key_name="ci", request_id="r", now=NOW)
    assert (f.endpoint, f.model, f.headers["x-team"], f.session_id) == (
        "anthropic", "claude-x", "a", "s")
    assert RequestFacts.of("openai", [], {"model": 3}).model == ""
