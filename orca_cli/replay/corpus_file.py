"""`orca replay --corpus FILE`: sessions from a JSON-lines file instead of the built-in corpus.

One request per line, in order within each session (sessions may interleave):

    {"session": "s1", "body": {...request body...}, "api": "anthropic",
     "needs_strong": false, "archetype": "my-agent"}

`session` and `body` are required; `api` is detected from the body when absent (the same rule
as the sidecar); `needs_strong` (default false) labels a turn that should be served strong, for
the coverage and false-positive figures; `archetype` (default "custom") groups sessions in the
per-archetype table. A turn is a user turn when its latest message carries user text, else a
tool continuation. Bodies may be synthetic or stripped of content (placeholder text of the
real sizes): the replay reads only what the scorer and the strike producers read.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from orca_cli.errors import OrcaError
from orca_cli.replay.corpus import Session, Turn
from orca_cli.routing.features import estimate_tokens
from orca_cli.wire.transcript import detect_api, latest_turn, transcript

__all__ = ["CorpusError", "load_corpus", "parse_corpus"]


class CorpusError(OrcaError):
    """A corpus file that cannot be replayed; the message names the line and the fix."""


def load_corpus(path: str) -> list[Session]:
    try:
        with open(path, "rb") as fh:
            return parse_corpus(fh, where=path)
    except OSError as exc:
        raise CorpusError(f"cannot read corpus file {path}: {exc.strerror or exc}") from exc


def _line(raw: bytes, where: str, n: int) -> dict[str, Any] | None:
    if not raw.strip():
        return None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise CorpusError(f"{where} line {n} is not valid JSON ({exc}); write one JSON "
                          "object per line") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("session"), str) \
            or not doc["session"] or not isinstance(doc.get("body"), dict):
        raise CorpusError(f"{where} line {n} needs a non-empty string \"session\" and an "
                          "object \"body\"")
    api = doc.get("api")
    if api is not None and api not in ("openai", "anthropic"):
        raise CorpusError(f"{where} line {n}: \"api\" must be \"openai\" or \"anthropic\", "
                          f"got {api!r}")
    return doc


def parse_corpus(lines: Iterable[bytes], *, where: str = "corpus") -> list[Session]:
    """Sessions in order of first appearance, each with its turns in file order."""
    grouped: dict[str, list[tuple[dict[str, Any], int]]] = {}
    for n, raw in enumerate(lines, 1):
        doc = _line(raw, where, n)
        if doc is not None:
            grouped.setdefault(doc["session"], []).append((doc, n))
    if not grouped:
        raise CorpusError(f"{where} holds no turns; write one JSON object per line")
    sessions = []
    for sid, rows in grouped.items():
        first = rows[0][0]
        api = first.get("api") or detect_api(first["body"])
        archetype = str(first.get("archetype") or "custom")
        turns: list[Turn] = []
        prev = index = 0
        for doc, n in rows:
            body = doc["body"]
            if (doc.get("api") or detect_api(body)) != api:
                raise CorpusError(f"{where} line {n}: session {sid!r} changes wire format; "
                                  "a session speaks one")
            user = latest_turn(body, api).is_user_turn
            index += 1 if user or index == 0 else 0
            tokens = estimate_tokens(transcript(body, api).chars)
            turns.append(Turn(sid, archetype, index, "user" if user else "tool",  # type: ignore[arg-type]
                              body, bool(doc.get("needs_strong", False)), tokens, prev,
                              tokens - prev))
            prev = tokens
        sessions.append(Session(sid, archetype, api, tuple(turns)))  # type: ignore[arg-type]
    return sessions
