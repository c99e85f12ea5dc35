"""Request bodies for the scoring benchmark, built on `tests.routing.bodies`.

The calibration bodies of the test suite cover the opener, the hard turn and the tool
continuation; this module adds what only a benchmark needs: tool results of a chosen size
(a `go test -v` log and a numbered `read_file` dump) and a seeded corpus shaped like the
replay's default (SPEC §10: 400 sessions in five archetypes, about 3,968 turns).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from orca_cli.wire.transcript import Api
from tests.routing import bodies as B

__all__ = [
    "CORPUS_SEED",
    "Case",
    "Turn",
    "corpus",
    "file_dump",
    "go_test_log",
    "per_call_cases",
]

CORPUS_SEED = 20260814  # the replay's default seed (SPEC §10)
Body = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Case:
    """One request body to time, with its wire format."""

    name: str
    api: Api
    body: Body


@dataclass(frozen=True, slots=True)
class Turn:
    """One request of the corpus."""

    session: int
    archetype: str
    api: Api
    body: Body


def go_test_log(target_bytes: int) -> str:
    """A `go test -v ./...` log of about `target_bytes` characters."""
    lines: list[str] = []
    size = 0
    i = 0
    while size < target_bytes:
        pkg = ("cache", "api", "store", "metrics")[i % 4]
        block = (
            f"=== RUN   Test{pkg.title()}Get/case_{i:04d}\n"
            f"    {pkg}_test.go:{40 + i % 90}: loaded {i % 17} orders, ttl=30s, shards=16\n"
            f"--- PASS: Test{pkg.title()}Get/case_{i:04d} (0.{i % 10:02d}s)\n"
        )
        lines.append(block)
        size += len(block)
        i += 1
    lines.append("PASS\nok  \tgithub.com/acme/orders/internal/cache\t0.412s\n")
    return "".join(lines)


def file_dump(target_bytes: int) -> str:
    """A numbered `read_file` result of about `target_bytes` characters of Go source."""
    source = B.source_excerpt(8).splitlines()
    out: list[str] = []
    size = 0
    n = 1
    while size < target_bytes:
        line = f"{n:6d}\t{source[(n - 1) % len(source)]}\n"
        out.append(line)
        size += len(line)
        n += 1
    return "".join(out)


def per_call_cases() -> list[Case]:
    """The four per-call shapes of SPEC §12, in both wire formats."""
    cases: list[Case] = []
    apis: tuple[Api, ...] = ("openai", "anthropic")
    for api in apis:
        cases += [
            Case("opener", api, B.opener(api)),
            Case("hard turn + 5 KB trace", api, B.hard_turn(api, "goroutine")),
            Case(
                "tool result 10 KB (test log)", api, B.tool_continuation(api, go_test_log(10_000))
            ),
            Case("tool result 200 KB (file)", api, B.tool_continuation(api, file_dump(200_000))),
        ]
    return cases


# --- the corpus -------------------------------------------------------------------------------

_PASTES: tuple[Callable[[], str], ...] = (B.goroutine_dump, B.python_traceback, B.source_excerpt)


def _session(session: int, api: Api, asks: list[str], archetype: str) -> list[Turn]:
    """One cumulative session: turn k's body holds turns 1..k-1 with their answers."""
    out: list[Turn] = []
    history: list[dict[str, Any]] = []
    for t, ask in enumerate(asks):
        out.append(Turn(session, archetype, api, B.body(api, [*history, B.user(api, ask)])))
        reply = B.TRIVIAL_EDITS[t % len(B.TRIVIAL_EDITS)][1]
        history += [B.user(api, ask), B.assistant(api, reply)]
    return out


def _trivial(t: int) -> str:
    return B.TRIVIAL_EDITS[t % len(B.TRIVIAL_EDITS)][0]


def _hard(rng: random.Random) -> str:
    return f"{B.HARD_PROSE}\n\n{rng.choice(_PASTES)()}"


def _short_trivial(rng: random.Random) -> list[str]:
    return [_trivial(t) for t in range(rng.randint(3, 7))]


def _long_trivial(rng: random.Random) -> list[str]:
    return [_trivial(t) for t in range(25)]


def _latent_hard(rng: random.Random) -> list[str]:
    n = rng.randint(8, 12)
    hard_at = rng.randint(2, n - 1)  # a trivial opener; hard asks from here, every other turn
    return [
        _hard(rng) if t >= hard_at and (t - hard_at) % 2 == 0 else _trivial(t) for t in range(n)
    ]


def _hard_start(rng: random.Random) -> list[str]:
    return [_hard(rng) if t % 3 == 0 else _trivial(t) for t in range(rng.randint(8, 12))]


_ARCHETYPES: tuple[tuple[str, int, Callable[[random.Random], list[str]] | None], ...] = (
    ("short trivial", 140, _short_trivial),
    ("long trivial", 60, _long_trivial),
    ("latent-hard", 100, _latent_hard),
    ("failure loop", 60, None),  # built by `bodies.failure_loop_turn`, 4-8 turns
    ("hard from the start", 40, _hard_start),
)


def corpus(seed: int = CORPUS_SEED) -> list[Turn]:
    """About 3,960 turns over 400 sessions: 140 short trivial (3-7 turns), 60 long trivial
    edits (25), 100 latent-hard (trivial opener, a hard turn later; 8-12), 60 failure loops
    (4-8), 40 hard from the start (8-12). Formats alternate by session."""
    rng = random.Random(seed)
    turns: list[Turn] = []
    session = 0
    for archetype, sessions, asks in _ARCHETYPES:
        for _ in range(sessions):
            api: Api = "openai" if session % 2 == 0 else "anthropic"
            if asks is None:
                n = rng.randint(4, 8)
                turns += [
                    Turn(session, archetype, api, B.failure_loop_turn(api, t))
                    for t in range(1, n + 1)
                ]
            else:
                turns += _session(session, api, asks(rng), archetype)
            session += 1
    return turns
