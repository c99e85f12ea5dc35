"""`orca session show`, `escalate`, `reset` and `pins dump --session` take the start of a
session id, as the request log prints it (`559f8439-f2…`), through the real commands against
a real sidecar; a prefix several sessions share is a usage error that lists them."""

from __future__ import annotations

import json

from tests.cli.test_operator_cli import Agent, orca, sidecar  # noqa: F401 - fixture reused

ONE = "559f8439-f2aa-4c1e-9b7d-0a1b2c3d4e5f"
TWO = "559f8439-f2bb-4c1e-9b7d-0a1b2c3d4e5f"


def test_commands_take_a_unique_prefix_of_a_session_id(sidecar: Agent) -> None:  # noqa: F811
    sidecar.turn(ONE)
    sidecar.turn(TWO)
    code, out, err = orca("session", "show", "559f8439-f2a", "--json", "--url", sidecar.base)
    assert code == 0, err
    assert json.loads(out)["session_id"] == ONE and f"session {ONE}" in err
    code, out, err = orca("escalate", "559f8439-f2b", "--once", "--url", sidecar.base)
    assert code == 0 and TWO in out, err
    code, out, err = orca("reset", "559f8439-f2b", "--router", "coding", "--url", sidecar.base)
    assert code == 0 and TWO in out, err
    code, out, err = orca("pins", "dump", "--session", "559f8439-f2a", "--json",
                          "--url", sidecar.base)
    assert code == 0 and {p["session"] for p in json.loads(out)} == {ONE}, err


def test_an_ambiguous_prefix_lists_the_candidates_and_exits_2(sidecar: Agent) -> None:  # noqa: F811
    sidecar.turn(ONE)
    sidecar.turn(TWO)
    for cmd in (["session", "show", "559f8439"], ["escalate", "559f8439", "--once"],
                ["reset", "559f8439", "--router", "coding"],
                ["pins", "dump", "--session", "559f8439"]):
        code, out, err = orca(*cmd, "--url", sidecar.base)
        assert code == 2 and out == "", (cmd, err)
        assert ONE in err and TWO in err and "more of the id" in err, (cmd, err)
    code, _, err = orca("session", "show", "559f843", "--url", sidecar.base)
    assert code == 1 and "no such session" in err  # under 8 characters: an id, not a prefix
