"""Difficulty scoring: the full-transcript scorer and the delta extractor (SPEC §4).

    score = Σ weightᵢ · min(featureᵢ, capᵢ) / capᵢ        (clamped to [0, 1])

The six features, in the SPEC §4 table order (`FEATURES`):

* log_prompt_tokens = ln(1 + tokens), tokens estimated as ceil(chars / 4)
  (`tokens_estimated` is always true). Full: system prompt + tool definitions (their JSON
  size) + every message (text, tool results, tool-call arguments). Delta: the turn's text.
* reasoning_cue_count, code_keyword_density (matches per 100 chars), math_marker_count:
  over the messages' text and tool results only — never the system prompt or tool schemas.
* system_prompt_log_len = ln(1 + system prompt chars) on the full score; fixed 0 on the
  delta (which therefore tops out at 0.90 with the default weights).
* has_tools = 1 when the request defines tools (a non-empty `tools`).

The delta reads only what follows the last assistant message (`wire.transcript.latest_turn`),
so its cost grows with the turn, not the transcript. Text work is bounded (SPEC §12): the
text features read a head-and-tail sample of at most `SAMPLE_CHARS` characters, in one pass
(one translate-and-split into tokens, one dict lookup per token; phrases and patterns run only
when their trigger token is present). Nothing here mutates the body.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from orca_cli.config.schema import DifficultyConfig, FeatureConfig
from orca_cli.errors import ConfigError
from orca_cli.immutable import immutable
from orca_cli.routing.decimals import fixed_round
from orca_cli.routing.vocab import CODE_KEYWORDS, MATH_MARKERS, REASONING_CUES, Term
from orca_cli.wire.transcript import Api, has_tools, latest_turn, transcript

__all__ = [
    "DENSITY_MIN_CHARS",
    "FEATURES",
    "SAMPLE_CHARS",
    "Delta",
    "Difficulty",
    "FeatureValue",
    "Scorer",
    "estimate_tokens",
    "round6",
]

FEATURES: tuple[str, ...] = (
    "log_prompt_tokens",
    "reasoning_cue_count",
    "system_prompt_log_len",
    "code_keyword_density",
    "has_tools",
    "math_marker_count",
)
# The text features read at most this many characters (SPEC §12 allows ≤ 32 KB).
SAMPLE_CHARS = 16_384
# Density is a property of a body of text: below this many characters one keyword in a
# one-line ask ("add a nil check") would read as a saturated density, so shorter texts are
# measured against this floor instead of their own length.
DENSITY_MIN_CHARS = 200

_CUE, _CODE, _MATH = 1, 2, 3
_CARET = ord("^")  # an int: `in` finds one byte value without trying a bytes needle as an int
# Lowercase ASCII letters; keep letters, digits and `_`; every other byte splits tokens.
_TOKEN_TABLE = bytes(
    c + 32 if 65 <= c <= 90 else c if (97 <= c <= 122 or 48 <= c <= 57 or c == 95) else 32
    for c in range(256)
)


@immutable
class FeatureValue:
    """A feature's raw value and its contribution weight · min(value, cap) / cap."""

    value: float
    contribution: float


# `round(x, 6)`, the precision of scores, contributions and ratios in JSON output: a zero
# (most features of most turns, most share ratios) as it is, most other figures in a few float
# operations (`decimals.fixed_round`), not by `round`, which formats the float in decimal.
round6 = fixed_round(6)


@immutable
class Difficulty:
    """One scorer's result. The hot path keeps two tuples in `FEATURES` order; `features`
    builds the per-feature view on demand (traces, `orca score`, tests)."""

    score: float
    values: tuple[float, ...]  # raw feature values, `FEATURES` order (the linucb context)
    contributions: tuple[float, ...]  # weight · min(value, cap) / cap, same order
    tokens: int
    tokens_estimated: bool = True

    @property
    def features(self) -> dict[str, FeatureValue]:
        return {
            name: FeatureValue(value, contribution)
            for name, value, contribution in zip(FEATURES, self.values, self.contributions)
        }

    def to_json(self) -> dict[str, Any]:
        """`{score, features: {<name>: {value, contribution}}}` (SPEC §1.1a), each `round6`."""
        # A zero figure, and one of 1.0 (`has_tools` of an agent's every turn), kept as its own
        # rounding without a call (most of the thirteen): the figures are floats.
        return {
            "score": round6(self.score),
            "features": {
                name: {"value": value if value == 0 or value == 1.0 else round6(value),
                       "contribution": share if share == 0 else round6(share)}
                for name, value, share in zip(FEATURES, self.values, self.contributions)
            },
        }


@immutable
class Delta:
    """The latest turn's difficulty plus the turn facts escalation needs (SPEC §6.2, §6.3)."""

    difficulty: Difficulty
    is_user_turn: bool  # the delta holds user-authored text
    is_tool_continuation: bool  # only tool results after the last assistant message
    user_texts: tuple[str, ...]
    tool_result_texts: tuple[str, ...]  # cleaned of injected blocks
    message_count: int
    has_tools: bool
    # What the strike producers read: the tool results the agent did not mark as succeeded
    # (`wire.transcript.Turn.strike_texts`); None: every tool result.
    strike_results: tuple[str, ...] | None = None
    # The turn follows an agent's compaction summary (`wire.transcript.Turn.compacted`).
    compacted: bool = False

    @property
    def strike_texts(self) -> tuple[str, ...]:
        return self.tool_result_texts if self.strike_results is None else self.strike_results

    @property
    def score(self) -> float:
        return self.difficulty.score

    @property
    def delta_digest(self) -> str:
        """sha256 hex of the delta's cleaned text. Computed when asked: a request that names
        itself (a client request id) never needs it."""
        digest = hashlib.sha256()  # fed piece by piece: no copy of a large tool result
        for tag, texts in ((b"u:", self.user_texts), (b"t:", self.tool_result_texts)):
            for text in texts:
                digest.update(tag)
                digest.update(text.encode("utf-8", "surrogatepass"))
                digest.update(b"\x1e")
        return digest.hexdigest()

    def dedupe_key(self, router: str, session: str, *, client_request_id: str | None = None,
                   continues: str = "") -> str:
        """SPEC §6.3: sha256(router, session, message count, delta bytes) — the delta bytes
        enter through their digest. With the client's `X-Request-Id` the key is `c:` and a
        hash of that id with the turn's place (router, session, message count and, for a
        Responses request, the `previous_response_id` it `continues`), not the delta's bytes:
        an SDK retry of the turn (same id, same place) repeats, while a client that sends one
        id on every request (an agent's fixed custom header) still has each new turn counted,
        its transcript being longer or continuing a newer response."""
        if client_request_id:
            material = (f"{client_request_id[:128]}\x1e{router}\x1f{session}\x1f"
                        f"{self.message_count}\x1f{continues}")
            return "c:" + hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()
        material = f"{router}\x1f{session}\x1f{self.message_count}\x1f{self.delta_digest}"
        return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()

def estimate_tokens(chars: int) -> int:
    """ceil(chars / 4): the estimate `orca score` reports as `tokens_estimated`."""
    return (chars + 3) // 4


class _Lexicon:
    """The three vocabularies compiled into one token table plus gated probes.

    Every vocabulary word maps to its feature in `_kinds`; every word of a phrase (and the
    trigger token of a pattern) maps to a trigger code >= 10. One translate-and-split pass
    yields the tokens, one dict lookup per token classifies them, and a phrase or pattern
    probe runs only when all its trigger codes were seen.
    """

    __slots__ = ("_caret", "_kinds", "_probes", "_symbols", "_words")

    def __init__(self) -> None:
        self._kinds: dict[bytes, int] = {}
        self._probes: list[tuple[frozenset[int], int, bytes | re.Pattern[bytes]]] = []
        self._caret: list[re.Pattern[bytes]] = []
        self._symbols: list[re.Pattern[bytes]] = []
        triggers: dict[bytes, int] = {}
        for feature, terms in ((_CUE, REASONING_CUES), (_CODE, CODE_KEYWORDS), (_MATH, MATH_MARKERS)):
            for term in terms:
                self._add(feature, term, triggers)
        clash = set(triggers) & set(self._kinds)
        if clash:
            raise ValueError(f"vocabulary tokens used both as terms and triggers: {sorted(clash)}")
        self._kinds.update(triggers)
        self._words = frozenset(self._kinds)

    def _add(self, feature: int, term: Term, triggers: dict[bytes, int]) -> None:
        if term.kind == "word":
            for form in (term.text, *term.forms):
                key = form.encode()
                if key in self._kinds:
                    raise ValueError(f"vocabulary token {form!r} is listed twice")
                self._kinds[key] = feature
            return
        probe: bytes | re.Pattern[bytes]
        if term.kind == "phrase":
            words = [w.encode() for w in term.text.split()]
            probe = b" " + b" ".join(words)
        else:
            probe = re.compile(term.regex)
            if term.trigger == "^":
                self._caret.append(probe)
                return
            if term.trigger == "non-ascii":
                self._symbols.append(probe)
                return
            words = [term.trigger.encode()]
        codes = frozenset(triggers.setdefault(w, 10 + len(triggers)) for w in words)
        self._probes.append((codes, feature, probe))

    def count(self, text: str) -> tuple[int, int, int]:
        """(cues, code keywords, math markers) in `text`, in one tokenising pass."""
        raw = text.encode("utf-8", "surrogatepass")
        tokens = raw.translate(_TOKEN_TABLE)
        words = tokens.split()
        # Most tool output (test logs, listings) holds no vocabulary token at all: one C-level
        # membership pass proves it and skips the per-token lookups; it stops at the first
        # vocabulary token, whose hash the lookups below then reuse.
        if self._words.isdisjoint(words):
            hits: list[int] = []
        else:
            hits = list(filter(None, map(self._kinds.get, words)))
        counts = [0, hits.count(_CUE), hits.count(_CODE), hits.count(_MATH)]
        if len(hits) > counts[1] + counts[2] + counts[3]:
            seen = set(hits)
            padded = b" " + tokens
            for codes, feature, probe in self._probes:
                if codes <= seen:
                    if isinstance(probe, bytes):
                        counts[feature] += padded.count(probe)
                    else:
                        counts[feature] += len(probe.findall(raw))
        if _CARET in raw:
            for rx in self._caret:
                counts[_MATH] += len(rx.findall(raw))
        if len(raw) != len(text):  # non-ASCII present: operator symbols are possible
            for rx in self._symbols:
                counts[_MATH] += len(rx.findall(raw))
        return counts[1], counts[2], counts[3]


def _sample(pieces: Sequence[str], budget: int = SAMPLE_CHARS) -> str:
    """The pieces joined by newlines; past `budget` characters, the first and the last
    `budget / 2` of them (the opening ask and the latest output both stay in view)."""
    n = len(pieces)
    if sum(map(len, pieces)) + n <= budget:
        return "\n".join(pieces)
    half = budget // 2
    parts: list[str] = []
    used = 0
    i = 0
    cut = 0  # how much of pieces[i] the head already took
    while i < n and used < half:
        piece = pieces[i]
        take = min(len(piece), half - used)
        parts.append(piece[:take])
        used += take + 1
        if take < len(piece):
            cut = take
            break
        i += 1
    tail: list[str] = []
    used = 0
    j = n - 1
    while j >= i and used < half:
        piece = pieces[j]
        take = min(len(piece) - (cut if j == i else 0), half - used)
        if take > 0:
            tail.append(piece[len(piece) - take :])
        used += take + 1
        j -= 1
    tail.reverse()
    return "\n".join(parts + tail)


class Scorer:
    """Built once from `DifficultyConfig`; `full()` and `delta()` are pure and cheap."""

    __slots__ = ("_lexicon", "_specs")

    def __init__(self, cfg: DifficultyConfig | None = None) -> None:
        cfg = cfg or DifficultyConfig()
        specs: list[tuple[str, float, float]] = []
        for name in FEATURES:
            spec: FeatureConfig = getattr(cfg, name)
            if not (math.isfinite(spec.cap) and spec.cap > 0):
                raise ConfigError(None, f"difficulty.{name}.cap", f"must be > 0, got {spec.cap}")
            if not (math.isfinite(spec.weight) and spec.weight >= 0):
                raise ConfigError(
                    None, f"difficulty.{name}.weight", f"must be >= 0, got {spec.weight}"
                )
            specs.append((name, float(spec.weight), float(spec.cap)))
        self._specs: tuple[tuple[str, float, float], ...] = tuple(specs)
        self._lexicon = _Lexicon()

    def spec(self, name: str) -> FeatureConfig:
        """The weight and cap in force for feature `name`."""
        for n, weight, cap in self._specs:
            if n == name:
                return FeatureConfig(weight, cap)
        raise KeyError(name)

    @property
    def max_delta(self) -> float:
        """The delta's reachable maximum: every weight but system_prompt_log_len's."""
        return min(1.0, sum(w for n, w, _ in self._specs if n != "system_prompt_log_len"))

    def full(self, body: Mapping[str, Any] | Any, api: Api) -> Difficulty:
        """The full-transcript difficulty (SPEC §4): linear in the transcript."""
        t = transcript(body, api)
        tokens = estimate_tokens(t.chars)
        sample = _sample(t.texts)
        return self._difficulty(tokens, sample, len(t.system), t.has_tools)

    def banding(self, body: Mapping[str, Any] | Any, api: Api) -> Difficulty:
        """The banding score: the full score's formula on what varies between sessions —
        the conversation (messages, tool results, tool-call arguments) — and not on the
        agent's constant prefix: the system prompt and tool schemas are left out of the
        length term, and the system-prompt and tools terms contribute 0.

        Why: a coding agent sends the same prefix on every request — Claude Code 15–25 KB
        of system prompt and 15+ tool schemas (≈ 60 KB), Codex ≈ 10 KB of instructions and
        its tools. On the full score that prefix alone saturates log_prompt_tokens (0.20),
        system_prompt_log_len (0.10) and has_tools (0.15): 0.45 before the first word of
        the conversation, above the default t1 = 0.35, so every agent session banded mid.
        Measured on agent-sized bodies (tests/routing/test_banding.py: a 20 KB system prompt
        with 17 tools, 25 KB with 20, and a Codex-sized 10 KB with 8): the turns of an easy
        session (one-line edits) score 0.44–0.49 full but 0.06–0.16 banding (weak); a hard
        first ask (paragraphs of reasoning, with or without a pasted trace) 0.81–0.85 full
        and 0.50–0.56 banding (mid; strong only when reasoning, code and maths all
        saturate). A request without system prompt or tools scores the same on both."""
        t = transcript(body, api)
        chars = t.call_chars + sum(map(len, t.texts))
        return self._difficulty(estimate_tokens(chars), _sample(t.texts), 0, False)

    def delta(self, body: Mapping[str, Any] | Any, api: Api) -> Delta:
        """The latest turn's difficulty (SPEC §4): reads nothing before the last assistant."""
        turn = latest_turn(body, api)
        tools = has_tools(body)
        pieces = turn.user_texts + turn.tool_results
        diff = self._difficulty(estimate_tokens(turn.chars), _sample(pieces), 0, tools)
        # By position, in field order: a class called with keywords builds a dict of them
        # first (about twice the construction), on every request.
        return Delta(
            diff,  # difficulty
            turn.is_user_turn,  # is_user_turn
            turn.is_tool_continuation,  # is_tool_continuation
            turn.user_texts,  # user_texts
            turn.tool_results,  # tool_result_texts
            turn.message_count,  # message_count
            tools,  # has_tools
            turn.failed_or_unmarked,  # strike_results
            turn.compacted,  # compacted
        )

    def _difficulty(self, tokens: int, sample: str, system_chars: int, tools: bool) -> Difficulty:
        cues, code, maths = self._lexicon.count(sample) if sample else (0, 0, 0)
        raw = (
            math.log1p(tokens),
            float(cues),
            math.log1p(system_chars),
            100.0 * code / max(len(sample), DENSITY_MIN_CHARS),
            1.0 if tools else 0.0,
            float(maths),
        )
        # weight · min(value, cap) / cap, in a list display: `tuple()` over a generator costs
        # more on CPython 3.11 (a generator frame resumed per feature)
        contributions = tuple([
            weight * (value if value < cap else cap) / cap  # noqa: FURB136 - min() is a call
            for (_, weight, cap), value in zip(self._specs, raw)
        ])
        score = sum(contributions)
        return Difficulty(min(max(score, 0.0), 1.0), raw, contributions, tokens)
