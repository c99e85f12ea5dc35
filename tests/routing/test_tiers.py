"""The tier state's document (SPEC §6.1): `to_doc` / `from_doc`."""

from __future__ import annotations

import dataclasses
from typing import Any

from orca_cli.routing.tiers import Pending, Strike, TierState


def _every_field_set() -> TierState:
    shadow = TierState(tier="strong", turn=4, dedupe=("s1",), escalation_count=1)
    return TierState(tier="strong", escalation_count=2, trigger="difficulty", reason="why",
                     escalated_at=10.5, window_s=300.0, last_success=12.25, clean_turns=3,
                     streak=1, turn=9, strikes=(Strike(8, 11.0, "refusal"),),
                     signatures=("sig-a", "sig-b"), dedupe=("k1", "k2", "k3"),
                     pending=Pending("once", "ops", "because", 9.0, "p1"),
                     conversations=("c1",), history=True, episode_started=1.5, shadow=shadow,
                     version=7, once_open=True)


def test_every_field_survives_the_document() -> None:
    """A state with no field at its default decodes back to itself, field by field."""
    state = _every_field_set()
    defaults = TierState()
    for f in dataclasses.fields(TierState):
        assert getattr(state, f.name) != getattr(defaults, f.name), f.name
    assert TierState.from_doc(state.to_doc()) == state


def test_text_lists_take_str_of_what_is_not_text() -> None:
    doc: dict[str, Any] = {"sigs": ["a", 1, None], "dedupe": ["x", 2.5], "convs": [True]}
    state = TierState.from_doc(doc)
    assert state is not None
    assert state.signatures == ("a", "1", "None")
    assert state.dedupe == ("x", "2.5")
    assert state.conversations == ("True",)
    assert all(type(s) is str for s in (*state.signatures, *state.dedupe))


def test_a_malformed_list_is_an_absent_state() -> None:
    assert TierState.from_doc({"dedupe": 5}) is None
    assert TierState.from_doc({"strikes": [[1]]}) is None
