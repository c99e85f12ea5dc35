"""`redacted()`: the effective config without a secret in it (SPEC §11)."""

from __future__ import annotations

import json

from orca_cli.config import parse, redacted
from orca_cli.config.schema import Secret

from .helpers import minimal_doc


def test_keys_token_and_url_passwords_are_redacted() -> None:
    doc = minimal_doc()
    doc["channels"][0]["keys"] = ["${K}", "sk-literal-secret"]
    doc["server"] = {"host": "0.0.0.0", "inbound_token": "tok-secret-value"}
    doc["state"] = {"redis_url": "redis://user:pw-secret@10.0.0.1:6380/2"}
    cfg = parse(doc, environ={"K": "sk-canary-from-env"})
    out = json.dumps(redacted(cfg))
    for secret in ("sk-canary-from-env", "sk-literal-secret", "tok-secret-value", "pw-secret"):
        assert secret not in out
    doc_out = redacted(cfg)
    assert doc_out["channels"][0]["keys"][0] == {"fp": Secret("sk-canary-from-env").fp,
                                                 "redacted": True}
    assert doc_out["server"]["inbound_token"]["redacted"] is True
    assert doc_out["state"]["redis_url"] == "redis://user:***@10.0.0.1:6380/2"


def test_redacted_is_the_whole_config_as_plain_data() -> None:
    cfg = parse(minimal_doc(), source="x.toml", environ={})
    out = redacted(cfg)
    assert json.loads(json.dumps(out)) == out
    assert set(out) == {"server", "state", "channels", "models", "routers", "aliases",
                        "workspace", "difficulty", "routing", "housekeeping", "telemetry",
                        "translation", "auto", "inbound_keys", "routes", "budgets", "source"}
    assert out["source"] == "x.toml"
    assert out["routers"]["coding"]["escalation"]["share_cap"] == 0.2
