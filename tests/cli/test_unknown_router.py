"""`--router NAME` naming no configured router is one error, the same for every command that
takes it (`session`, `requests`, `audit`, `pins`): exit 1 with the configured routers listed,
never an empty result that reads as "nothing happened"."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_operator_cli import Agent, orca, sidecar
from tests.cli.test_requests_cli import wait_for

__all__ = ["sidecar"]


@pytest.mark.parametrize("args", [
    ("session", "list"),
    ("requests",),
    ("requests", "--json"),
    ("audit",),
    ("audit", "--json"),
    ("pins", "dump"),
])
def test_an_unknown_router_is_the_same_error_everywhere(sidecar: Agent,
                                                        args: tuple[str, ...]) -> None:
    sidecar.turn("agent-r")
    code, out, err = orca(*args, "--router", "nope", "--url", sidecar.base)
    assert code == 1 and out == ""
    assert err.startswith("orca: unknown router 'nope'; routers: ") and "coding" in err, err
    assert err.count("\n") == 1


def test_a_configured_router_still_filters(sidecar: Agent) -> None:
    rid = sidecar.turn("agent-r").headers["x-orca-request-id"]
    wait_for(lambda: json.loads(orca("requests", "--json", "--url", sidecar.base)[1]))
    code, out, err = orca("requests", "--router", "coding", "--json", "--url", sidecar.base)
    assert code == 0, err
    assert [r["request_id"] for r in json.loads(out)] == [rid]
    code, out, err = orca("audit", "--router", "coding", "--json", "--url", sidecar.base)
    assert code == 0 and isinstance(json.loads(out), list), err
