"""`apply._record_turn` builds the next state by position: it changes only the turn's fields."""

from __future__ import annotations

import random

from orca_cli.config.schema import EscalationConfig
from orca_cli.routing.intents import RecordTurn
from orca_cli.routing.tiers import Pending, Strike, TierState
from orca_cli.state.apply import _record_turn

ESC = EscalationConfig()


def _state(rnd: random.Random, depth: int = 0) -> TierState:
    turn = rnd.randrange(0, 40)
    return TierState(
        tier=rnd.choice(("base", "strong")),
        escalation_count=rnd.randrange(100, 200),
        trigger=rnd.choice(("", "explicit", "strikes")),
        reason=rnd.choice(("default", "once", "deescalated")),
        escalated_at=rnd.uniform(1e3, 2e3),
        window_s=rnd.uniform(3e3, 4e3),
        last_success=rnd.uniform(5e3, 6e3),
        clean_turns=rnd.randrange(200, 300),
        streak=rnd.randrange(300, 400),
        turn=turn,
        strikes=tuple(Strike(turn - rnd.randrange(0, 9), 1.0, "repeated_error")
                      for _ in range(rnd.randrange(0, 4))),
        signatures=tuple(f"sig{i}" for i in range(rnd.randrange(0, 3))),
        dedupe=tuple(f"c:{i}" for i in range(rnd.randrange(0, 20))),
        pending=rnd.choice((None, Pending("strong", "operator", "why", 7.0, "p1"))),
        conversations=tuple(f"fp{i}" for i in range(rnd.randrange(0, 3))),
        history=rnd.random() < 0.5,
        episode_started=rnd.uniform(7e3, 8e3),
        shadow=_state(rnd, depth + 1) if depth == 0 and rnd.random() < 0.3 else None,
        version=rnd.randrange(400, 500),
        once_open=rnd.random() < 0.5,
    )


def test_record_turn_changes_only_the_turn_fields() -> None:
    """Every field the turn does not record is carried over as it was, the others as stated."""
    rnd = random.Random(7)
    for n in range(500):
        st = _state(rnd)
        rec = RecordTurn(f"k{n}", user_turn=rnd.random() < 0.5, hard=rnd.random() < 0.5,
                         signatures=tuple(rnd.sample(("sig0", "sig7", "sig8"), 2)),
                         request_strike=rnd.random() < 0.2,
                         response_strikes=rnd.choice(((), ("tool_error",))),
                         history=rnd.random() < 0.5)
        now = rnd.uniform(4e3, 7e3)
        out = _record_turn(st, rec, now, ESC)
        assert type(out) is TierState
        assert out == st.with_(turn=out.turn, streak=out.streak, strikes=out.strikes,
                               signatures=out.signatures, dedupe=out.dedupe,
                               clean_turns=out.clean_turns, last_success=out.last_success,
                               history=out.history, once_open=out.once_open)
        assert out.turn == st.turn + 1
        assert out.last_success == max(st.last_success, now)
        assert out.dedupe[-1] == rec.dedupe_key
        assert out.history == (st.history or rec.history)
        assert out.once_open == (st.once_open and not rec.user_turn)
        assert out.streak in (0, st.streak, st.streak + 1)
        assert out.clean_turns in (0, st.clean_turns, st.clean_turns + 1)
        assert type(out.strikes) is tuple
        assert all(s.turn > out.turn - ESC.strike_window_turns for s in out.strikes)
