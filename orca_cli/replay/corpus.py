"""The seeded synthetic corpus `orca replay` runs through the real decision code (SPEC §10).

Five archetypes, each user turn labelled with the ground truth "needs strong":

| archetype       | sessions | user turns per session                      | needs strong |
| --------------- | -------- | ------------------------------------------- | ------------ |
| `short_trivial` | 140      | 3–8 trivial edits                           | never        |
| `long_trivial`  | 60       | 25 trivial edits                            | never        |
| `latent_hard`   | 100      | 1–8 trivial, 3–6 hard, 0–2 trivial wrap-ups | hard turns   |
| `failure_loop`  | 60       | 5–9 turns of one short prompt               | from turn 3  |
| `hard_start`    | 40       | 5–9 hard turns                              | every turn   |

Each range is stratified (every value equally often, ±1, then shuffled), so the totals do not
depend on the seed: the default corpus has 770 + 1,500 + 1,002 + 420 + 280 = 3,972 user turns
(the seed's 3,968 within 0.1 %), of which 0 + 0 + 450 + 300 + 280 = 1,030 (26 %) need strong.
`sessions` scales the mix (largest remainder); `hard_share` re-mixes it (`mix`).

* A hard turn is a reasoning-heavy ask (`texts.hard_ask`) with a pasted 3–8 KB stack trace
  or source excerpt of the scenario (`pastes`): the seed's hard debugging turn, ≈ 0.72 on the
  delta. Trivial turns are one-line edits, ≈ 0.20–0.25; failure-loop turns ≈ 0.19–0.30.
* A failure loop repeats one short prompt. From turn 2 each user turn carries the result of
  the build the agent ran: the same compile error (same message, same file) with new line
  numbers, columns, addresses and ids — one `routing.strikes.error_signatures` signature every
  turn. The loop counts as stuck, and needs strong, from turn 3: the first turn whose error
  is one the agent has already seen and failed to fix (turn 2 is its first sight).
* `agent_loop=True` follows each user turn with 1–3 tool-result continuation requests (the
  agent's `tool_calls` / `tool_use` plus the tool's output). A continuation carries its user
  turn's index and label: it is more work on the same ask.

Wire formats alternate within each archetype (half OpenAI chat with `tool` messages, half
Anthropic messages with `tool_use` / `tool_result` blocks; with `agent_shaped` the OpenAI half
is Codex's Responses API, `replay.agents`); every body has a coding-agent
system prompt, the two tools `read_file` and `run_command`, `stream: true` and the session id
in `metadata.session_id`. Histories are cumulative: request k's messages start with request
k−1's, so `prefix_tokens` (what the previous request already sent) is the previous request's
`tokens_in` and `delta_tokens` the rest. Tokens are ceil(chars / 4) over what the
full-transcript scorer reads (`routing.features.Scorer.full`).

Speed over copies: a session's bodies share their message dicts, system blocks, tool lists
and metadata (each body has only its own top-level dict and messages list), so the default
corpus builds in a fraction of a second. **Bodies are read-only**: copy before changing one.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any, Literal

from orca_cli.immutable import immutable
from orca_cli.replay import agents, pastes, texts
from orca_cli.replay.scenarios import REPOS, SCENARIOS, Repo, Scenario
from orca_cli.replay.wire import Conversation
from orca_cli.wire.transcript import Api

__all__ = [
    "ARCHETYPES",
    "DEFAULT_MIX",
    "DEFAULT_SEED",
    "DEFAULT_SESSIONS",
    "HARD_ARCHETYPES",
    "Archetype",
    "Session",
    "Turn",
    "generate",
    "mix",
]

Archetype = Literal["short_trivial", "long_trivial", "latent_hard", "failure_loop", "hard_start"]
ARCHETYPES: tuple[Archetype, ...] = (
    "short_trivial", "long_trivial", "latent_hard", "failure_loop", "hard_start",
)
HARD_ARCHETYPES: tuple[Archetype, ...] = ("latent_hard", "failure_loop", "hard_start")
DEFAULT_MIX: dict[Archetype, int] = {
    "short_trivial": 140, "long_trivial": 60, "latent_hard": 100, "failure_loop": 60,
    "hard_start": 40,
}
DEFAULT_SESSIONS = 400
DEFAULT_SEED = 20260814
LOOP_STUCK_FROM = 3  # the first failure-loop turn that needs strong
# Expected (user turns, needs-strong turns) per session: the stratified ranges' means.
_EXPECTED: dict[Archetype, tuple[float, float]] = {
    "short_trivial": (5.5, 0.0), "long_trivial": (25.0, 0.0), "latent_hard": (10.0, 4.5),
    "failure_loop": (7.0, 7.0 - (LOOP_STUCK_FROM - 1)), "hard_start": (7.0, 7.0),
}

Step = Literal["trivial", "hard", "loop"]
_TRIVIAL: tuple[Step] = ("trivial",)
_HARD: tuple[Step] = ("hard",)
_LOOP: tuple[Step] = ("loop",)


@immutable
class Turn:
    """One request of a session. `body` is read-only (it shares dicts with its neighbours)."""

    session_id: str
    archetype: Archetype
    index: int  # the 1-based user turn; a continuation carries its user turn's index
    kind: Literal["user", "tool"]
    body: dict[str, Any]
    needs_strong: bool
    tokens_in: int  # estimated prompt tokens of the whole body
    prefix_tokens: int  # tokens the previous request of the session already sent (cacheable)
    delta_tokens: int  # tokens_in - prefix_tokens
    # Which conversation of the session sent it: "main", or a side conversation under the same
    # session id ("title", "sub-agent"); each has its own prompt-cache lineage.
    conversation: str = "main"


@immutable
class Session:
    """One conversation: its requests in order, all in one wire format."""

    id: str
    archetype: Archetype
    api: Api
    turns: tuple[Turn, ...]


def _apportion(weights: Sequence[float], total: int) -> list[int]:
    """Largest-remainder split of `total` in proportion to `weights` (ties: first wins)."""
    wsum = sum(weights)
    if total <= 0 or wsum <= 0:
        return [0] * len(weights)
    quotas = [w * total / wsum for w in weights]
    counts = [math.floor(q) for q in quotas]
    order = sorted(range(len(weights)), key=lambda i: (-(quotas[i] - counts[i]), i))
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts


def mix(sessions: int = DEFAULT_SESSIONS, hard_share: float | None = None) -> dict[Archetype, int]:
    """Sessions per archetype: the default mix scaled to `sessions`, or — with `hard_share`
    (0.01–0.5) — the number of hard-archetype sessions whose expected share of needs-strong
    user turns is closest to it, split like the default mix within the hard and the easy
    archetypes. The share counts user turns (continuations follow their turn's label); it
    tops out near 0.6, where every session is hard, since hard sessions have easy turns too."""
    if sessions < 0:
        raise ValueError(f"sessions: must be >= 0, got {sessions}")
    if hard_share is None:
        return dict(zip(ARCHETYPES, _apportion([DEFAULT_MIX[a] for a in ARCHETYPES], sessions),
                        strict=True))
    if not 0.01 <= hard_share <= 0.5:
        raise ValueError(f"hard_share: must be in [0.01, 0.5], got {hard_share}")
    easy = [a for a in ARCHETYPES if a not in HARD_ARCHETYPES]
    best: dict[Archetype, int] = {}
    best_gap = math.inf
    for n_hard in range(sessions + 1):
        counts = dict(zip(HARD_ARCHETYPES,
                          _apportion([DEFAULT_MIX[a] for a in HARD_ARCHETYPES], n_hard),
                          strict=True))
        counts.update(zip(easy, _apportion([DEFAULT_MIX[a] for a in easy], sessions - n_hard),
                          strict=True))
        turns = sum(counts[a] * _EXPECTED[a][0] for a in ARCHETYPES)
        strong = sum(counts[a] * _EXPECTED[a][1] for a in ARCHETYPES)
        gap = abs(strong / turns - hard_share) if turns else math.inf
        if gap < best_gap:
            best, best_gap = counts, gap
    return {a: best.get(a, 0) for a in ARCHETYPES}


def _strata(rng: random.Random, lo: int, hi: int, count: int) -> list[int]:
    """`count` draws from lo..hi with every value equally often (±1), in random order."""
    span = hi - lo + 1
    values = [lo + (2 * i + 1) * span // (2 * count) for i in range(count)]
    rng.shuffle(values)
    return values


def _scripts(rng: random.Random, archetype: Archetype, count: int) -> list[tuple[Step, ...]]:
    """The step of every user turn of `count` sessions of `archetype`."""
    if archetype == "short_trivial":
        return [_TRIVIAL * n for n in _strata(rng, 3, 8, count)]
    if archetype == "long_trivial":
        return [_TRIVIAL * 25 for _ in range(count)]
    if archetype == "latent_hard":
        leads, hards, tails = (_strata(rng, 1, 8, count), _strata(rng, 3, 6, count),
                               _strata(rng, 0, 2, count))
        return [_TRIVIAL * a + _HARD * b + _TRIVIAL * c
                for a, b, c in zip(leads, hards, tails, strict=True)]
    if archetype == "failure_loop":
        return [_LOOP * n for n in _strata(rng, 5, 9, count)]
    return [_HARD * n for n in _strata(rng, 5, 9, count)]


_TRACE_NAMES = {"go": "goroutine dump", "python": "traceback", "rust": "panic backtrace",
                "ts": "stack trace"}


class _Writer:
    """Writes one session's requests: the user turns of its script, their continuations."""

    def __init__(self, rng: random.Random, conv: Conversation, archetype: Archetype,
                 sc: Scenario, agent_loop: bool) -> None:
        self.rng, self.conv, self.archetype, self.sc = rng, conv, archetype, sc
        self.repo: Repo = REPOS[sc.lang]
        self.agent_loop = agent_loop
        self.turns: list[Turn] = []
        self._prev_tokens = 0
        self._pending_call: str | None = None  # a build the next user turn reports on
        self._hard_seen = False
        self.first_ask = ""  # the session's first user text (what a title request names)
        command, template = pastes.COMPILE_ERRORS[sc.lang][
            rng.randrange(len(pastes.COMPILE_ERRORS[sc.lang]))]
        self._build, self._error = command, template
        self._prompt = texts.FAILURE_PROMPTS[rng.randrange(len(texts.FAILURE_PROMPTS))]

    def _emit(self, index: int, kind: Literal["user", "tool"], label: bool) -> None:
        tokens = (self.conv.chars + 3) // 4
        self.turns.append(Turn(self.conv.session_id, self.archetype, index, kind,
                               self.conv.body(), label, tokens, self._prev_tokens,
                               tokens - self._prev_tokens))
        self._prev_tokens = tokens

    def _hard_text(self) -> str:
        rng, sc = self.rng, self.sc
        size = rng.randrange(pastes.PASTE_MIN, pastes.PASTE_MAX + 1)
        if rng.random() < 0.6:
            name, paste = _TRACE_NAMES[sc.lang], pastes.trace(rng, sc, size)
        else:
            name, paste = "source excerpt", pastes.source(rng, sc, size)
        prose = texts.hard_ask(rng, sc, name, follow_up=self._hard_seen)
        self._hard_seen = True
        return f"{prose}\n\n{paste}"

    def user_turn(self, index: int, step: Step, label: bool) -> None:
        rng, conv = self.rng, self.conv
        result = None
        if self._pending_call is not None:
            result = (self._pending_call, pastes.compile_error(rng, self._build, self._error))
            self._pending_call = None
        if step == "trivial":
            text, reply = texts.trivial_ask(rng, self.repo)
        elif step == "hard":
            text, reply = self._hard_text(), texts.hard_reply(rng, self.sc)
        else:
            text, reply = self._prompt, ""
        conv.user(text, result)
        if index == 1:
            self.first_ask = text
        self._emit(index, "user", label)
        if self.agent_loop:
            for c in range(rng.randrange(1, 4)):
                self._continuation(index, step, c, label)
        if step == "loop":  # the agent's answer is another build, reported next turn
            note = texts.fix_note(rng, self.repo) if index > 1 else "Running the build first."
            self._pending_call = conv.tool_call(note, "run_command", {"command": self._build})
        else:
            conv.assistant(reply)

    def side_request(self, index: int, conv: Conversation, text: str, conversation: str
                     ) -> None:
        """A request under the same session id that is not the main conversation (a title
        request, a sub-agent): never labelled as needing strong."""
        conv.user(text)
        tokens = (conv.chars + 3) // 4
        self.turns.append(Turn(conv.session_id, self.archetype, index, "user",
                               conv.body(), False, tokens, 0, tokens, conversation))

    def title_request(self, agent: agents.Agent) -> None:
        """The agent names the session from its first ask with a small side request: Claude
        Code under the session's id, the Codex TUI under a session id of its own."""
        sid, system = self.conv.session_id, agents.TITLE_SYSTEM
        if agent == "codex":
            sid, system = f"{sid}-title", agents.CODEX_TITLE_SYSTEM
        conv = Conversation(self.rng, self.conv.api, sid, system, ())
        self.side_request(0, conv, self.first_ask[:2000], "title")

    def sub_agent(self, index: int) -> None:
        """A search sub-agent (its own prompt and conversation, the same session id): its
        ask, then one file read it continues with. It names the model its agent gives it
        (`agents.sub_agent_model`)."""
        rng, repo = self.rng, self.repo
        api = self.conv.api
        conv = Conversation(rng, api, self.conv.session_id, agents.SUB_AGENT_SYSTEM,
                            model=agents.sub_agent_model(api))
        func = repo.funcs[rng.randrange(len(repo.funcs))]
        self.side_request(index, conv, f"Find every caller of {func} in the repository and "
                                       "report each file and line. Do not change anything.",
                          "sub-agent")
        first = self.turns[-1].tokens_in
        call = conv.tool_call("", "read_file", {"path": repo.files[0], "limit": 40})
        conv.tool_result(call, pastes.file_read(rng, self.sc, 40))
        tokens = (conv.chars + 3) // 4
        self.turns.append(Turn(self.conv.session_id, self.archetype, index, "tool",
                               conv.body(), False, tokens, first, tokens - first,
                               "sub-agent"))

    def _continuation(self, index: int, step: Step, c: int, label: bool) -> None:
        rng, conv, repo = self.rng, self.conv, self.repo
        if step == "loop" and c == 1 and index > 1:
            call = conv.tool_call("Rebuilding.", "run_command", {"command": self._build})
            output = pastes.compile_error(rng, self._build, self._error)
        elif c == 1 and step != "loop":
            call = conv.tool_call("Running the tests.", "run_command", {"command": repo.test})
            output = pastes.test_run(rng, repo)
        else:
            path = self.sc.file if step == "hard" else repo.files[rng.randrange(len(repo.files))]
            lines = rng.randrange(40, 90) if step == "hard" else rng.randrange(8, 20)
            call = conv.tool_call("", "read_file", {"path": path, "limit": lines})
            output = pastes.file_read(rng, self.sc, lines)
        conv.tool_result(call, output)
        self._emit(index, "tool", label)


def _session(rng: random.Random, sid: str, archetype: Archetype, api: Api,
             script: tuple[Step, ...], agent_loop: bool, agent_shaped: bool = False) -> Session:
    sc = SCENARIOS[rng.randrange(len(SCENARIOS))]
    system = texts.SYSTEM_PROMPTS[rng.randrange(len(texts.SYSTEM_PROMPTS))]
    agent: agents.Agent | None = None
    if agent_shaped:
        agent = "claude-code" if api == "anthropic" else "codex"
        api = agents.agent_api(agent)
        conv = Conversation(rng, api, sid, agents.agent_system(agent, system),
                            agents.agent_tools(agent))
    else:
        conv = Conversation(rng, api, sid, system)
    writer = _Writer(rng, conv, archetype, sc, agent_loop or agent_shaped)
    for index, step in enumerate(script, 1):
        stuck = step == "loop" and index >= LOOP_STUCK_FROM
        writer.user_turn(index, step, step == "hard" or stuck)
        if agent is not None and index == 1:
            writer.title_request(agent)
        if agent_shaped and step == "hard" and rng.random() < 0.5:
            writer.sub_agent(index)
    return Session(sid, archetype, api, tuple(writer.turns))


def generate(*, sessions: int = DEFAULT_SESSIONS, seed: int = DEFAULT_SEED,
             agent_loop: bool = False, hard_share: float | None = None,
             agent_shaped: bool = False) -> list[Session]:
    """The corpus: `sessions` sessions in a seeded random order (archetypes interleaved, as
    traffic is). The same arguments give byte-identical bodies."""
    rng = random.Random(seed)
    counts = mix(sessions, hard_share)
    plan: list[tuple[Archetype, tuple[Step, ...], Api]] = []
    for archetype in ARCHETYPES:
        for j, script in enumerate(_scripts(rng, archetype, counts[archetype])):
            plan.append((archetype, script, "openai" if j % 2 == 0 else "anthropic"))
    rng.shuffle(plan)
    out: list[Session] = []
    for i, (archetype, script, api) in enumerate(plan):
        child = random.Random(rng.getrandbits(64))
        out.append(_session(child, f"replay-{seed}-{i:04d}", archetype, api, script, agent_loop,
                            agent_shaped))
    return out
