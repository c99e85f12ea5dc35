"""Strike producers (SPEC §6.3).

Request side: a normalised error signature taken from the turn's tool results (compiler
errors, failing tests, tracebacks, panics) that was already seen in an earlier evaluated turn
of the session strikes. Normalisation removes what changes between two runs of the same
failure — numbers, line and column positions, hex addresses, goroutine and process ids, paths
and quoted identifiers — and keeps the message template and error code, so an agent looping on
the same compile error strikes even though every run reports new line numbers.

Response side: malformed tool-call JSON, an empty answer, a refusal, truncation on a request
that allowed ≥ 1,024 output tokens. These come from `wire/usage.py`'s tap after the response.

Cost: markers are found with `str.find` on a lowercased, bounded copy; regexes run only on
the few short lines that carry a marker.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

__all__ = [
    "error_signatures",
    "normalise_error_line",
    "request_strike",
    "response_strike_kinds",
    "ERROR_MARKERS",
    "SCAN_LIMIT",
]

SCAN_LIMIT = 32 * 1024  # bytes of each tool result inspected
MAX_LINES = 6  # error lines kept per turn
MAX_LINE_CHARS = 300

# Lower-case markers of an error line, each there for a failure class agents loop on.
ERROR_MARKERS: tuple[str, ...] = (
    "error",  # compilers (gcc/clang/rustc/go/tsc: "error:", "error[E0308]", "TS2345"), linters
    "traceback (most recent call last)",  # Python tracebacks
    "exception",  # Java/.NET/Python exception lines
    "panic:",  # Go panics
    "failed",  # test runners: "FAILED tests/...", "--- FAIL", "1 failed"
    "fail:",  # go test "--- FAIL:"
    "assert",  # assertion failures
    "undefined",  # undefined symbols/references
    "cannot find",  # missing modules/symbols
    "segmentation fault",  # crashes
)

_QUOTED = re.compile(r"'[^'\n]{0,200}'|\"[^\"\n]{0,200}\"|`[^`\n]{0,200}`|‘[^’\n]{0,200}’")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\w.~-]*[/\\])+[\w.-]+")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{8,}\b")
_NUM = re.compile(r"\d+")
_WS = re.compile(r"\s+")


def normalise_error_line(line: str) -> str:
    """The template of one error line: volatile parts replaced by placeholders."""
    s = line.strip()[:MAX_LINE_CHARS]
    s = _QUOTED.sub("<q>", s)
    s = _PATH.sub("<path>", s)
    s = _HEX.sub("<hex>", s)
    s = _NUM.sub("<n>", s)
    return _WS.sub(" ", s)


def error_signatures(tool_results: Iterable[str]) -> tuple[str, ...]:
    """Signatures (short sha256 hex) of the error lines in a turn's tool results, in order,
    without repeats. Empty when the tool results carry no error."""
    out: list[str] = []
    for text in tool_results:
        if not text:
            continue
        chunk = text[:SCAN_LIMIT]
        low = chunk.lower()
        if not any(m in low for m in ERROR_MARKERS):
            continue
        for line, low_line in zip(chunk.splitlines(), low.splitlines()):
            if any(m in low_line for m in ERROR_MARKERS):
                template = normalise_error_line(line)
                if len(template) < 4:
                    continue
                sig = hashlib.sha256(template.encode()).hexdigest()[:16]
                if sig not in out:
                    out.append(sig)
                    if len(out) >= MAX_LINES:
                        return tuple(out)
    return tuple(out)


def request_strike(signatures: Sequence[str], seen: Sequence[str]) -> bool:
    """A repeated error: one of this turn's signatures was seen in an earlier evaluated turn."""
    if not signatures or not seen:
        return False
    seen_set = set(seen)
    return any(s in seen_set for s in signatures)


def response_strike_kinds(*, malformed_tool_json: bool, empty_answer: bool, refusal: bool,
                          truncated: bool) -> tuple[str, ...]:
    kinds = []
    if malformed_tool_json:
        kinds.append("malformed_tool_json")
    if empty_answer:
        kinds.append("empty_answer")
    if refusal:
        kinds.append("refusal")
    if truncated:
        kinds.append("truncated")
    return tuple(kinds)
