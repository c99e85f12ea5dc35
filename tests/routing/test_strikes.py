"""Error signatures (SPEC §6.3): which lines of a tool result count as error lines, in which
order, how many, and how far into the result orca looks."""

from __future__ import annotations

import hashlib

from orca_cli.routing.strikes import MAX_LINES, SCAN_LIMIT, error_signatures


def sig(template: str) -> str:
    """The signature of one normalised error line."""
    return hashlib.sha256(template.encode()).hexdigest()[:16]


def test_every_line_break_str_splitlines_knows_ends_an_error_line() -> None:
    text = "error: a\r\nerror: b 7\rpanic: boom\u2028ok\x0bassert x\nall good"
    assert error_signatures([text]) == (
        sig("error: a"), sig("error: b <n>"), sig("panic: boom"), sig("assert x"))


def test_markers_match_in_any_case_and_the_line_keeps_its_own() -> None:
    assert error_signatures(["ERROR: Disk Full", "ok"]) == (sig("ERROR: Disk Full"),)
    assert error_signatures(["all tests passed", ""]) == ()
    # lowercasing that changes a line's length does not shift the lines
    assert error_signatures(["İİ fine\nerror: x"]) == (sig("error: x"),)


def test_a_line_counts_once_in_the_order_first_seen() -> None:
    text = "error: b\nerror: a (fatal error)\nerror: b\n"
    assert error_signatures([text, "error: a (fatal error)"]) == (
        sig("error: b"), sig("error: a (fatal error)"))


def test_at_most_max_lines_signatures_and_only_the_scanned_prefix() -> None:
    many = "\n".join(f"error: case {chr(97 + i)}" for i in range(MAX_LINES + 4))
    assert error_signatures([many]) == tuple(
        sig(f"error: case {chr(97 + i)}") for i in range(MAX_LINES))
    late = "x" * SCAN_LIMIT + "\nerror: too late"
    assert error_signatures([late]) == ()


def test_a_go_test_failure_gives_one_signature_per_distinct_error_line() -> None:
    log = ("=== RUN   TestGet\n--- FAIL: TestGet (0.00s)\n"
           "    cache_test.go:41: assertion failed: got 1 want 2\nok  \tgithub.com/acme/db\n"
           "--- FAIL: TestPut (0.02s)\nFAIL\tgithub.com/acme/cache\t0.012s\n")
    sigs = error_signatures([log])
    assert sigs == (sig("--- FAIL: TestGet (<n>.<n>s)"),
                    sig("cache_test.go:<n>: assertion failed: got <n> want <n>"),
                    sig("--- FAIL: TestPut (<n>.<n>s)"))
    again = error_signatures([log.replace("0.02s", "0.31s").replace(":41:", ":57:")])
    assert again == sigs  # a rerun with other timings and line numbers is the same failure
