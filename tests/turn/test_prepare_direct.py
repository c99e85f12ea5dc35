"""`prepare` for a concrete model (SPEC §1.3, §1.4, §5): the session chain a router uses,
under the model's own pin slots; the prefix's affinity when the body opts out of a session."""

from __future__ import annotations

from typing import Any

import orjson

from orca_cli.errors import Refusal
from orca_cli.routing.features import Scorer
from orca_cli.state import keys as K
from orca_cli.turn.model import Arrival, RequestHead, Turn
from orca_cli.turn.prepare import prepare
from tests.routing.cfg import channel, config, price

CFG = config([channel("c1", ["m1", "m2"], keys=("k-1", "k-2", "k-3"))],
             models={"m1": price(1, 5), "m2": price(2, 8)})
MSGS = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "rename x"}]


def _prepare(body: dict[str, Any], **headers: str) -> Turn:
    head = RequestHead("POST", "/v1/chat/completions", "openai", tuple(headers.items()), None)
    turn = prepare(CFG, Scorer(), head, Arrival("req_1", orjson.dumps(body), body, 1e9, 0.0))
    assert not isinstance(turn, Refusal), turn
    return turn


def test_a_concrete_models_session_is_resolved_and_read_from_its_pin_slots() -> None:
    turn = _prepare({"model": "m1", "messages": MSGS}, **{"x-session-id": "conv-1"})
    assert turn.router is None and turn.direct == K.direct_router("m1")
    assert turn.sid is not None and (turn.sid.id, turn.sid.explicit) == ("conv-1", True)
    assert turn.read is not None
    assert (turn.read.router, turn.read.session) == (K.direct_router("m1"), "conv-1")
    assert turn.read.affinity_key is None and turn.dedupe_key == ""  # no tier, no turns


def test_without_a_header_the_session_is_derived_per_model() -> None:
    one = _prepare({"model": "m1", "messages": MSGS})
    assert one.sid is not None and one.sid.source == "derived" and not one.sid.explicit
    again = _prepare({"model": "c1:m1", "messages": [*MSGS, {"role": "assistant", "content": "ok"},
                                                     {"role": "user", "content": "more"}]})
    assert again.session == one.session  # a later turn, on the qualified id of the model
    other = _prepare({"model": "m2", "messages": MSGS})
    assert other.session != one.session


def test_a_body_that_opts_out_is_sessionless_and_reads_its_prefix_affinity() -> None:
    body = {"model": "m1", "messages": MSGS, "routing": {"session_affinity": False}}
    turn = _prepare(body, **{"x-session-id": "conv-1"})
    assert turn.sid is None and turn.read is not None and turn.read.session is None
    assert turn.affinity_key is not None and turn.read.affinity_key == turn.affinity_key
    off = _prepare({**body, "provider": {"cache_aware_routing": False}})
    assert off.affinity_key is None
