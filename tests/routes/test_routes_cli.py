"""`orca routes check|test` and `orca serve --state/--redis-url`, through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orca_cli.cli import app

CONFIG = """
[[channels]]
name = "sim"
type = "sim"
models = ["small", "big"]

[routers.default]
weak_pool = ["small"]
strong_pool = ["big"]

[[inbound_keys]]
name = "ci"
token = "tok-ci"
"""

ROUTES = """
[[routes]]
name = "team"
keys = ["ci"]

[routes.nodes.c]
type = "condition"
field = "header:x-team"
op = "eq"
value = "infra"
on_true = "big"
on_false = "ab"

[routes.nodes.ab]
type = "split"
branches = [{percent = 50, next = "big"}, {percent = 50, next = "small"}]

[routes.nodes.big]
type = "target"
target = "sim:big"
fallbacks = ["small"]

[routes.nodes.small]
type = "deny"
status = 429
message = "try later"
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    cfg, routes, body = tmp_path / "orca.toml", tmp_path / "routes.toml", tmp_path / "b.json"
    cfg.write_text(CONFIG)
    routes.write_text(ROUTES)
    body.write_text(json.dumps({"model": "small", "messages": []}))
    return {"config": str(cfg), "routes": str(routes), "body": str(body)}


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def test_check_accepts_a_valid_routes_file(files: dict[str, str]) -> None:
    r = _run("routes", "check", files["routes"], "--config", files["config"])
    assert r.exit_code == 0, r.output
    assert "ok:" in r.output and "team" in r.output


def test_check_names_the_node_path_of_every_problem(files: dict[str, str]) -> None:
    bad = ROUTES.replace('next = "small"}]', 'next = "c"}]').replace('target = "sim:big"',
                                                                      'target = "sim:huge"')
    Path(files["routes"]).write_text(bad)
    r = _run("routes", "check", files["routes"], "--config", files["config"], "--json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    keys = {e["key"]: e["why"] for e in doc["errors"]}
    assert keys["routes[0].nodes.ab"] == "cycle: c -> ab -> c"
    assert keys["routes[0].nodes.small"] == 'is unreachable from start node "c"'
    assert 'target "sim:huge"' in keys["routes[0].nodes.big.target"]
    assert all(e["path"] == files["routes"] for e in doc["errors"])


def test_check_warns_of_a_target_no_enabled_channel_serves(files: dict[str, str]) -> None:
    """A target on a disabled channel is valid config, but the branch is never served as
    written (its request falls to the fallbacks): `routes check` says so, and stays ok."""
    Path(files["config"]).write_text(CONFIG.replace('type = "sim"\n',
                                                    'type = "sim"\nenabled = false\n', 1)
                                     + '\n[[channels]]\nname = "sim2"\ntype = "sim"\n'
                                       'models = ["small"]\n')
    r = _run("routes", "check", files["routes"], "--config", files["config"])
    assert r.exit_code == 0, r.output
    assert ('warning: routes[0].nodes.big.target: channel "sim" is disabled: "sim:big" is '
            "never served") in r.stderr
    r = _run("routes", "check", files["routes"], "--config", files["config"], "--json")
    doc = json.loads(r.stdout)
    assert doc["ok"] and [w["key"] for w in doc["warnings"]] == ["routes[0].nodes.big.target"]
    Path(files["config"]).write_text(CONFIG)
    r = _run("routes", "check", files["routes"], "--config", files["config"], "--json")
    assert json.loads(r.stdout)["warnings"] == []


def test_check_rejects_other_tables_in_a_routes_file(files: dict[str, str]) -> None:
    Path(files["routes"]).write_text(ROUTES + '\n[server]\nport = 1\n')
    r = _run("routes", "check", files["routes"], "--config", files["config"])
    assert r.exit_code == 1
    assert "server: a routes file holds only [[routes]] tables" in r.output


def _test(files: dict[str, str], *extra: str) -> dict[str, Any]:
    r = _run("routes", "test", "--routes", files["routes"], "--config", files["config"],
             "--body", files["body"], "--json", *extra)
    assert r.exit_code == 0, r.output
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


def test_dry_run_follows_the_condition_and_the_key_from_the_token(files: dict[str, str]) -> None:
    doc = _test(files, "-H", "x-team: infra", "-H", "Authorization: Bearer tok-ci")
    assert (doc["decision"], doc["route"], doc["path"], doc["key"]) == (
        "target", "team", ["c", "big"], "ci")
    assert doc["target"]["target"] == "sim:big" and doc["target"]["fallbacks"] == ["small"]
    assert _test(files, "-H", "x-team: infra")["decision"] == "none"  # no key: no route


def test_dry_run_split_is_sticky_per_session(files: dict[str, str]) -> None:
    seen: dict[str, set[str]] = {}
    for s in ("s1", "s2", "s3", "s4", "s5", "s6"):
        for _ in range(2):
            doc = _test(files, "--key", "ci", "--session", s)
            assert doc["path"][:2] == ["c", "ab"]
            seen.setdefault(s, set()).add(doc["bucket"])
    assert all(len(b) == 1 for b in seen.values())
    buckets = {next(iter(b)) for b in seen.values()}
    assert buckets == {"ab=0", "ab=1"}  # six sessions land on both sides
    denied = [s for s, b in seen.items() if b == {"ab=1"}]
    for s in denied:
        doc = _test(files, "--key", "ci", "--session", s)
        assert doc["deny"] == {"status": 429, "message": "try later"}


def test_dry_run_text_output(files: dict[str, str]) -> None:
    r = _run("routes", "test", "--routes", files["routes"], "--config", files["config"],
             "--body", files["body"], "--key", "ci", "-H", "x-team:infra")
    assert r.exit_code == 0
    assert "route team: c -> big" in r.output and "target sim:big" in r.output


def test_dry_run_usage_errors(files: dict[str, str]) -> None:
    r = _run("routes", "test", "--config", files["config"], "--body", files["body"],
             "-H", "novalue")
    assert r.exit_code == 2 and "--header must be NAME:VALUE" in r.output


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    from orca_cli.cli import serve

    got: list[Any] = []
    monkeypatch.setattr(serve, "_run", lambda cfg, *a, **k: got.append(cfg))
    return got


def test_serve_state_options_reach_the_state_table(files: dict[str, str],
                                                    served: list[Any]) -> None:
    r = _run("serve", "--config", files["config"], "--redis-url", "redis://127.0.0.1:6399/3")
    assert r.exit_code == 0, r.output
    assert (served[0].state.backend, served[0].state.redis_url) == (
        "redis", "redis://127.0.0.1:6399/3")
    r = _run("serve", "--config", files["config"], "--state", "memory")
    assert r.exit_code == 0 and served[1].state.backend == "memory"
    r = _run("serve", "--config", files["config"])
    assert served[2].state.backend == "memory"


def test_serve_state_option_errors(files: dict[str, str], served: list[Any]) -> None:
    r = _run("serve", "--config", files["config"], "--state", "disk")
    assert r.exit_code == 2 and "--state must be memory or redis" in r.output
    r = _run("serve", "--config", files["config"], "--state", "memory", "--redis-url",
             "redis://h:1/0")
    assert r.exit_code == 2 and "--redis-url needs --state redis" in r.output
    r = _run("serve", "--config", files["config"], "--redis-url", "http://h:1/0")
    assert r.exit_code == 2
    assert served == []


BUDGET_ROUTES = """
[[routes]]
name = "capped"
keys = ["ci"]
start = "spend"

[routes.nodes.spend]
type = "budget"
scope = "key"
window = "day"
usd = 10
within = "big"
exceeded = "no"

[routes.nodes.big]
type = "target"
target = "sim:big"

[routes.nodes.no]
type = "deny"
status = 429
message = "spent"
"""


def test_dry_run_spent_names_a_counter_with_or_without_its_period(
        files: dict[str, str], tmp_path: Path) -> None:
    routes = tmp_path / "budget.toml"
    routes.write_text(BUDGET_ROUTES)
    files = {**files, "routes": str(routes)}
    assert _test(files, "--key", "ci")["path"] == ["spend", "big"]
    assert _test(files, "--key", "ci", "--spent", "key:ci:day=12")["path"] == ["spend", "no"]
    r = _run("routes", "test", "--routes", files["routes"], "--config", files["config"],
             "--body", files["body"], "--key", "ci", "--spent", "key:ci:day=5", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["path"] == ["spend", "big"]


@pytest.mark.parametrize("counter", ["spend", "session=1", "key:other:day", "key:ci:year"])
def test_dry_run_spent_on_a_counter_the_request_does_not_read_is_a_usage_error(
        files: dict[str, str], counter: str) -> None:
    pair = counter if "=" in counter else f"{counter}=1"
    r = _run("routes", "test", "--routes", files["routes"], "--config", files["config"],
             "--body", files["body"], "--key", "ci", "--spent", pair)
    assert r.exit_code == 2, r.output
    assert "is no counter this request reads; it reads" in r.output and "key:ci:day:" in r.output
