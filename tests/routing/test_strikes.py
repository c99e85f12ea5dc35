"""Error signatures (SPEC §6.3): the marker scan finds exactly the lines a plain line-by-line
reading finds, whatever the line breaks and characters."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from orca_cli.routing.strikes import (
    ERROR_MARKERS,
    MAX_LINES,
    SCAN_LIMIT,
    error_signatures,
    normalise_error_line,
)


def _by_lines(tool_results: list[str]) -> tuple[str, ...]:
    """The definition: every line (str.splitlines) whose lowercase holds a marker."""
    out: list[str] = []
    for text in tool_results:
        chunk = text[:SCAN_LIMIT]
        for line, low in zip(chunk.splitlines(), chunk.lower().splitlines()):
            if any(m in low for m in ERROR_MARKERS):
                template = normalise_error_line(line)
                if len(template) < 4:
                    continue
                sig = hashlib.sha256(template.encode()).hexdigest()[:16]
                if sig not in out:
                    out.append(sig)
                    if len(out) >= MAX_LINES:
                        return tuple(out)
    return tuple(out)


_pieces = st.sampled_from([
    "error: mismatched types at src/main.rs:12:5", "--- FAIL: TestCache (0.01s)", "ok  \tpkg",
    "Traceback (most recent call last):", "panic: runtime error", "ERROR", "Fail: x", "\n",
    "\r\n", "\r", "\x0b", "\x85", "\u2028", "İstanbul error", "ẞ assert x == 1", "undefined: foo",
    "segmentation fault (core dumped)", "  ", "plain text", "cannot find module 'x'", "é"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_pieces, max_size=25).map("".join), max_size=3))
def test_the_marker_scan_equals_a_line_by_line_reading(results: list[str]) -> None:
    assert error_signatures(results) == _by_lines(results)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=200), max_size=3))
def test_the_marker_scan_equals_a_line_by_line_reading_on_any_text(results: list[str]) -> None:
    assert error_signatures(results) == _by_lines(results)


def test_a_go_test_failure_gives_one_signature_per_distinct_error_line() -> None:
    log = ("=== RUN   TestGet\n--- FAIL: TestGet (0.00s)\n"
           "    cache_test.go:41: assertion failed: got 1 want 2\nok  \tgithub.com/acme/db\n"
           "--- FAIL: TestPut (0.02s)\nFAIL\tgithub.com/acme/cache\t0.012s\n")
    sigs = error_signatures([log])
    assert len(sigs) == 3  # the two failing tests' lines and the assertion
    again = error_signatures([log.replace("0.02s", "0.31s").replace(":41:", ":57:")])
    assert again == sigs  # a rerun with other timings and line numbers is the same failure
