"""`orca budget` and `orca budget raise` against a live `orca serve` on the memory store
(SPEC §1.1: inspect/steer commands work through the running sidecar's admin API on any
backend; SPEC §17: the 429 names the budget, what was spent and the command that raises it).

A real `orca serve` process (sim channel, memory store, a $0.004 session budget) is driven
until its budget answers 429; the CLI then finds that sidecar through the record it wrote
under the test's `$XDG_STATE_HOME`, shows the spend and raises the limit, and the session's
next request is served.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.routing.routes.budget import format_usd
from tests.agents.kit import serving

SESSION = "agent-on-a-budget"
CONFIG = """
[[channels]]
name = "sim-cheap"
type = "sim"
api = ["openai", "anthropic"]
keys = ["sim-key-1"]
models = ["small"]

[models.small]   # dear, so that one request spends more than the whole budget
input = 100.0
output = 100.0

[routers.coding]
strategy = "cheapest"
allowed_models = ["small"]
[routers.coding.escalation]
mode = "off"

[budgets]
session_usd = 0.004
"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """`orca serve` on a free port with CONFIG (memory store); its base URL."""
    with serving(tmp_path, CONFIG) as orca:
        yield orca.base

def _chat(base: str) -> httpx.Response:
    return httpx.post(base + "/v1/chat/completions", timeout=10,
                      headers={"x-orca-session": SESSION},
                      json={"model": "orca/coding",
                            "messages": [{"role": "user", "content": "rename x to count"}]})


def _orca(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def _session_row(doc: dict[str, object]) -> dict[str, object]:
    rows = doc["budgets"]
    assert isinstance(rows, list)
    found = [r for r in rows if r["budget"] == "session_usd"]
    assert [r["holder"] for r in found] == [f"session {SESSION}"]
    return dict(found[0])


def _until_refused(base: str) -> httpx.Response:
    for _ in range(20):
        r = _chat(base)
        if r.status_code != 200:
            return r
    raise AssertionError("the $0.004 session budget never refused a request")


def test_budget_and_raise_reach_a_memory_sidecar_through_its_admin_api(served: str) -> None:
    refused = _until_refused(served)
    assert refused.status_code == 429 and refused.headers["x-should-retry"] == "false"
    error = refused.json()["error"]
    assert error["code"] == "budget_exceeded"
    message = error["message"]
    assert "`orca budget raise session_usd <usd>`" in message
    assert "$0.00 of $0.00" not in message  # amounts below a cent keep their digits
    assert "of $0.004 over the session's whole life" in message  # no window to end
    assert "until the window ends" not in message

    code, out, err = _orca("budget", "--json")
    assert code == 0, err
    row = _session_row(json.loads(out))
    spent = row["spent_usd"]
    assert isinstance(spent, float) and spent > 0.004
    assert f"is spent: {format_usd(spent)} of $0.004" in message  # the 429 and the CLI agree
    assert (row["limit_usd"], row["configured_usd"], row["raised"]) == (0.004, 0.004, False)
    assert row["share"] == round(spent / 0.004, 4) and row["requests"] >= 1

    code, out, err = _orca("budget")
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if ln.startswith("session_usd"))
    assert f"{format_usd(spent)} of $0.004 (" in line and "$0.00 of $0.00" not in line

    code, out, err = _orca("budget", "raise", "session_usd", "1", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["budget"], doc["key"], doc["limit_usd"], doc["previous_limit_usd"]) == (
        "session_usd", None, 1.0, 0.004)

    assert _chat(served).status_code == 200  # the raise applies from the next request

    code, out, err = _orca("budget", "--json")
    assert code == 0, err
    row = _session_row(json.loads(out))
    spent = row["spent_usd"]
    assert isinstance(spent, float)
    assert (row["limit_usd"], row["configured_usd"], row["raised"]) == (1.0, 0.004, True)
    assert row["share"] == round(spent / 1.0, 4)

    code, out, err = _orca("audit", "--json")
    assert code == 0, err
    raised = [e for e in json.loads(out) if e["event"] == "budget_raised"]
    assert [(e["actor"], e["reason"]) for e in raised] == [
        ("cli", "session_usd for every request: $0.004 -> $1.00")]


def test_raise_json_with_no_sidecar_on_the_memory_store_says_how_to_reach_it(
        tmp_path: Path) -> None:
    config = tmp_path / "orca.toml"
    config.write_text(CONFIG)  # no token file under this test's $XDG_STATE_HOME: no sidecar
    code, out, err = _orca("budget", "raise", "session_usd", "1", "--json",
                           "--config", str(config))
    assert code == 1 and out == ""
    assert "memory store lives inside the `orca serve` process" in err
