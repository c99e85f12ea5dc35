"""`orca config show`: an `[[inbound_keys]]` token is shown redacted to its fingerprint like
every other secret (SPEC §11), never as `""` (which reads as "no token")."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import tomli_w

from orca_cli.config import parse, redacted
from tests.cli.test_operator_cli import orca
from tests.config.helpers import minimal_doc

TOKEN = "tok-team-canary-5e4d3c"
FP = hashlib.sha256(TOKEN.encode()).hexdigest()[:8]


def _doc() -> dict[str, object]:
    doc = minimal_doc()
    doc["inbound_keys"] = [{"name": "team-a", "token": TOKEN}]
    return doc


def test_redacted_gives_an_inbound_keys_token_its_fingerprint() -> None:
    out = redacted(parse(_doc(), environ={}))
    assert out["inbound_keys"] == [{"name": "team-a", "token": {"fp": FP, "redacted": True}}]


def test_config_show_prints_the_inbound_token_redacted(tmp_path: Path) -> None:
    path = tmp_path / "orca.toml"
    path.write_text(tomli_w.dumps(_doc()))
    code, out, err = orca("config", "show", "--config", str(path))
    assert code == 0, err
    assert f'token = "<redacted fp={FP}>"' in out and TOKEN not in out
    code, out, err = orca("config", "show", "--json", "--config", str(path))
    assert code == 0, err
    assert json.loads(out)["inbound_keys"][0]["token"] == {"fp": FP, "redacted": True}
