"""The local workload classifier of the auto router (SPEC §16). Pure and deterministic.

It reads what routing already computed — the latest turn's `Delta` (SPEC §4 features: code
keyword density, reasoning cues, maths markers, tokens) and the full-transcript score when
there is one — plus the request's hard facts, which it trusts most:

* `tool_use`           — the request defines tools, or the turn carries only tool results;
* `structured_output`  — `response_format` / `text.format` of type `json_schema` or
  `json_object`, an Anthropic `output_format`, or a forced `tool_choice` naming one tool;

and cue words in the head and tail of the latest ask (`CUE_HEAD`, `CUE_TAIL` characters:
instructions sit there; plain substring tests, no regex scan; English plus the common Romance
and German spellings, since the language of the ask is itself a hint for translation):

* `translation` — translate / traduce / traduire / übersetze …, or "into <language>";
* `summary`     — summarize / tl;dr / recap / resume / resumen / zusammenfassen …;
* `structured_output` (weaker) — "as json", "json schema", "valid json", "in yaml";
* `code`        — a code fence, or code-keyword density (§4) ≥ `CODE_DENSITY` per 100 chars;
* `reasoning`   — reasoning cues + maths markers (§4) ≥ 2, or "step by step" / "prove".

Each workload gets a strength; the kept ones (≥ `KEEP`) are ordered strongest first (ties in
`WORKLOADS` order), `general` when none is kept.

    complexity = clamp(difficulty + Σ bump(workload), 0, 1)
    difficulty = the full-transcript score when computed, else the delta's score / 0.9
                 (the delta's reachable maximum with the default weights)
    bump: reasoning +0.15, code +0.05, tool_use +0.05, translation −0.10, summary −0.10

    confidence = 0.9 with a hard fact; else 0.7 for one cued workload, 0.6 for several,
                 0.5 for general; −0.1 when the two strongest are within 0.1 of each other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from orca_cli.config.auto import WORKLOADS
from orca_cli.immutable import immutable
from orca_cli.routing.features import Delta, Difficulty
from orca_cli.wire.transcript import has_tools as declares_tools

__all__ = ["CUE_HEAD", "CUE_TAIL", "Classification", "classify_local", "hard_facts"]

CUE_HEAD, CUE_TAIL = 600, 200  # the part of the latest ask cue words are looked for in
CODE_DENSITY = 1.0  # code keywords per 100 chars (§4 code_keyword_density)
KEEP = 0.4
DELTA_MAX = 0.9
_BUMP = {"reasoning": 0.15, "code": 0.05, "tool_use": 0.05, "translation": -0.10,
         "summary": -0.10}
# Cue substrings of the lowercased ask, per workload: plain `in` tests (memchr speed), no
# regex scan per position. A leading space stands for a word start.
_CUES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("translation", ("translat", "traduc", "tradui", "traduz", "übersetz", "ubersetz")),
    ("summary", ("summar", "tl;dr", "tldr", "recap", "résumé", "resume", "resumen",
                 "zusammenfass", "key points")),
    ("structured", (" as json", "json schema", "valid json", " in json", " in yaml",
                    "json object")),
    ("reasoning", ("step by step", " prove", " derive")),
    ("code", ("```",)),
)
_LANG_WORDS = ("english", "spanish", "french", "german", "italian", "portuguese", "japanese",
               "chinese", "korean", "russian", "dutch", "arabic", "hindi", "inglés", "ingles",
               "español", "espanol", "francés", "frances", "français", "anglais", "alemán",
               "aleman", "deutsch", "englisch")
# "into French", "al inglés", "en anglais", "auf Deutsch", "ins Englische": the language of
# the ask's target, run only when a language name is present.
_INTO_LANG = re.compile(r"\b(?:into|al|en|auf|ins) (?:" + "|".join(_LANG_WORDS) + r")")
_INTO = (" into ", " al ", " en ", " auf ", " ins ")


def _ask(text: str) -> str:
    """The lowercased head and tail of the latest ask (where instructions sit)."""
    if len(text) <= CUE_HEAD + CUE_TAIL:
        return " " + text.lower()
    return " " + text[:CUE_HEAD].lower() + " … " + text[-CUE_TAIL:].lower()


def _cues(ask: str) -> set[str]:
    seen = {kind for kind, words in _CUES if any(w in ask for w in words)}
    if "translation" not in seen and any(w in ask for w in _INTO) and _INTO_LANG.search(ask):
        seen.add("translation")
    return seen


@immutable
class Classification:
    """Workload types (strongest first), complexity in [0, 1], confidence in [0, 1]."""

    workloads: tuple[str, ...]
    complexity: float
    confidence: float
    source: str = "local"  # "local" or "model:<id>"
    fallback_reason: str | None = None  # why the model classifier did not answer
    request_id: str | None = None  # the model classifier's child request, when one was made

    @property
    def workload(self) -> str:
        return self.workloads[0] if self.workloads else "general"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"workloads": list(self.workloads),
                               "complexity": round(self.complexity, 4),
                               "confidence": round(self.confidence, 4),
                               "classifier": self.source}
        if self.fallback_reason is not None:
            out["fallback_reason"] = self.fallback_reason
        if self.request_id is not None:
            out["classifier_request_id"] = self.request_id
        return out


def _format_type(value: Any) -> str:
    return str(value.get("type", "")) if isinstance(value, Mapping) else ""


def hard_facts(body: Mapping[str, Any]) -> tuple[bool, bool]:
    """(defines tools, asks for structured output) read from the request body alone."""
    has_tools = declares_tools(body)
    text = body.get("text")
    kinds = {_format_type(body.get("response_format")),
             _format_type(text.get("format")) if isinstance(text, Mapping) else ""}
    structured = bool(kinds & {"json_schema", "json_object"}) or isinstance(
        body.get("output_format"), Mapping)
    choice = body.get("tool_choice")
    if isinstance(choice, Mapping) and (choice.get("type") == "tool" or "function" in choice):
        structured = True
    return has_tools, structured


def _strengths(body: Mapping[str, Any], delta: Delta) -> tuple[dict[str, float], bool]:
    tools, structured = hard_facts(body)
    s = dict.fromkeys(WORKLOADS, 0.0)
    if structured:
        s["structured_output"] = 1.0
    if tools or delta.is_tool_continuation:
        s["tool_use"] = 0.9
    ask = _ask(delta.user_texts[-1]) if delta.user_texts else ""
    seen = _cues(ask) if ask else set()
    values = delta.difficulty.values  # FEATURES order
    cues, density, maths = values[1], values[3], values[5]
    if "translation" in seen:
        s["translation"] = 0.8
    if "summary" in seen:
        s["summary"] = 0.75
    if "structured" in seen:
        s["structured_output"] = max(s["structured_output"], 0.6)
    if "code" in seen or density >= CODE_DENSITY:
        s["code"] = min(0.9, 0.5 + 0.1 * density + (0.2 if "code" in seen else 0.0))
    if "reasoning" in seen or cues + maths >= 2:
        s["reasoning"] = min(0.9, 0.4 + 0.1 * (cues + maths) + (0.1 if "reasoning" in seen
                                                                 else 0.0))
    return s, tools or structured


def classify_local(body: Mapping[str, Any], delta: Delta,
                   full: Difficulty | None = None) -> Classification:
    """The deterministic classification of one request (see the module docstring)."""
    s, hard = _strengths(body, delta)
    kept = sorted((w for w in WORKLOADS if s[w] >= KEEP), key=lambda w: -s[w])
    workloads = tuple(kept) or ("general",)
    base = full.score if full is not None else min(1.0, delta.score / DELTA_MAX)
    complexity = min(1.0, max(0.0, base + sum(_BUMP.get(w, 0.0) for w in kept)))
    if hard:
        confidence = 0.9
    elif kept:
        confidence = 0.7 if len(kept) == 1 else 0.6
    else:
        confidence = 0.5
    if len(kept) > 1 and s[kept[0]] - s[kept[1]] < 0.1:
        confidence -= 0.1
    return Classification(workloads, complexity, round(confidence, 4))
