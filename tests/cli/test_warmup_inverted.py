"""After a state loss the share warm-up is inverted (SPEC §6.4, §9): strong is denied until
the router has counted `warmup_requests` requests. `orca stats` (text and `--json`) and
`orca statusline` say so instead of describing the normal warm-up."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
import redis

from orca_cli.config.schema import StateConfig
from tests.cli.test_operator_cli import Agent, _cfg, orca, serving
from tests.cli.test_statusline_cli import run_orca
from tests.state.conftest import REDIS_URL, delete_prefix, require_redis


@pytest.fixture
def redis_sidecar() -> Iterator[tuple[Agent, str]]:
    prefix = f"orcatest-{uuid.uuid4().hex[:12]}"
    require_redis()
    try:
        with serving(_cfg(), StateConfig(backend="redis", redis_url=REDIS_URL,
                                         key_prefix=prefix)) as sc:
            yield sc, prefix
    finally:
        delete_prefix(REDIS_URL, prefix)


def _stats(sc: Agent) -> dict[str, object]:
    code, out, err = orca("stats", "--json", "--url", sc.base)
    assert code == 0, err
    share = json.loads(out)["routers"]["coding"]["share"]
    assert isinstance(share, dict)
    return share


def _text(sc: Agent) -> str:
    code, out, err = orca("stats", "--url", sc.base)
    assert code == 0, err
    return " ".join(out.split())  # the table's caption wraps


def test_stats_and_statusline_say_the_warm_up_is_inverted_after_a_state_loss(
        redis_sidecar: tuple[Agent, str]) -> None:
    sc, prefix = redis_sidecar
    sc.turn("agent-w")
    share = _stats(sc)
    assert share["warmup"] is True and share["warmup_inverted"] is False
    out = _text(sc)
    assert "may exceed it" in out and "inverted" not in out

    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.delete(f"{prefix}:epoch")  # the store lost its state
    finally:
        client.close()
    assert sc.turn("agent-w", 2).status_code == 200  # the loss is detected here
    share = _stats(sc)
    assert share["warmup"] is True and share["warmup_inverted"] is True
    assert isinstance(share["state_lost_at"], float)
    out = _text(sc)
    assert "inverted warm-up" in out and "strong is denied until" in out
    assert "may exceed it" not in out
    code, line = run_orca("statusline", "--session", "agent-w", "--url", sc.base)
    assert code == 0 and "strong denied: inverted warm-up" in line, line
