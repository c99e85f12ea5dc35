"""`orca routes deploy|list|diff|rollback` against a live `orca serve` on the memory store
(SPEC §1.1: inspect/steer commands work through the running sidecar's admin API on any
backend; SPEC §17: a deployed version applies without a restart).

A real `orca serve` process (sim channel, memory store) serves model `big`; the CLI finds it
through the record it wrote under the test's `$XDG_STATE_HOME`, deploys a version that lets
`big` through and one that denies it with a message, and the sidecar's very next request
walks the new routes; `routes list --json` shows both versions, and after `routes rollback`
the next request is served again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from orca_cli.cli import app
from tests.agents.kit import serving

CONFIG = """
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
LET_THROUGH = """
[[routes]]
name = "big"
models = ["big"]
[routes.nodes.serve]
type = "target"
target = "sim:big"
"""
PAUSED = "the big model is paused for the migration"
DENY = f"""
[[routes]]
name = "big"
models = ["big"]
[routes.nodes.stop]
type = "deny"
status = 403
message = "{PAUSED}"
"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """`orca serve` on a free port with CONFIG (memory store); its base URL."""
    with serving(tmp_path, CONFIG) as orca:
        yield orca.base

def _chat(base: str) -> httpx.Response:
    return httpx.post(base + "/v1/chat/completions", timeout=10,
                      json={"model": "big",
                            "messages": [{"role": "user", "content": "rename x to count"}]})


def _orca(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_deploy_and_rollback_reach_a_memory_sidecar_and_apply_to_its_next_request(
        served: str, tmp_path: Path) -> None:
    config = ("--config", str(tmp_path / "orca.toml"))
    through, deny = tmp_path / "through.toml", tmp_path / "deny.toml"
    through.write_text(LET_THROUGH)
    deny.write_text(DENY)
    assert _chat(served).status_code == 200

    code, out, err = _orca("routes", "deploy", str(through), "--note", "let big through",
                           *config)
    assert code == 0, err
    assert out.startswith("active: version 1 (sha256 ")
    assert f"sidecar {served}" in err  # found through the record `orca serve` wrote
    assert _chat(served).status_code == 200

    code, out, err = _orca("routes", "deploy", str(deny), "--json", *config)
    assert code == 0, err
    assert json.loads(out)["version"] == 2
    refused = _chat(served)  # no wait: the sidecar applied it before answering the deploy
    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == PAUSED
    assert refused.json()["error"]["code"] == "route_denied"

    code, out, err = _orca("routes", "list", "--json", *config)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["active"] == 2
    assert [(v["version"], v["note"]) for v in doc["versions"]] == [(1, "let big through"),
                                                                  (2, "")]
    code, out, err = _orca("routes", "diff", "1", "2", *config)
    assert code == 0, err
    assert "+type = \"deny\"" in out and "-type = \"target\"" in out

    code, out, err = _orca("routes", "rollback", *config)
    assert code == 0, err
    assert out.startswith("active: version 1 ")
    assert _chat(served).status_code == 200
    code, out, _ = _orca("routes", "list", *config)
    assert out.splitlines()[0].startswith("*    1 ")


def test_deploy_refuses_an_invalid_file_with_its_node_paths(served: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(DENY.replace('type = "deny"', 'type = "split"\nbranches = '
                                '[{percent = 100, next = "stop"}]', 1))
    code, out, err = _orca("routes", "deploy", str(bad), "--config", str(tmp_path / "orca.toml"))
    assert code == 1 and out == ""
    assert f"error: {bad}: routes[0].nodes.stop" in err
    assert f"problem(s) in {bad}; nothing deployed" in err
    code, out, _ = _orca("routes", "list", "--json")
    assert json.loads(out) == {"active": None, "versions": []}
    assert _chat(served).status_code == 200
