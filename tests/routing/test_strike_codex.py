"""Codex CLI 0.171's shell results (SPEC §6.3, §19): a Responses `function_call_output` whose
output is plain text, a header of volatile fields (`Chunk ID`, `Wall time`, `Original token
count`), `Process exited with code N`, then the command's output. The captured result
(fixtures/strikes/codex_exec_171.txt) is the real client's, byte for byte; the others are
written in its format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orca_cli.routing.strikes import error_signatures, request_strike

FIXTURES = Path(__file__).parent / "fixtures" / "strikes"
NOT_FOUND = "/bin/bash: line 1: sim-8f8556d7: command not found\n"
TESTS_FAIL = "3 passed, 1 did not pass: test_parse_empty\n"
GO_BUILD = ("# example.com/gp\n./main.go:14:7: too many arguments in call to f\n"
            "\thave (number, number)\n\twant (int)\n")


def codex171(output: str, code: int, *, chunk: str = "df215b", wall: str = "0.0000",
             tokens: int = 13, warning: str = "") -> str:
    """A shell result as Codex 0.171 sends it; `warning` is its truncation notice."""
    return (f"Chunk ID: {chunk}\nWall time: {wall} seconds\nProcess exited with code {code}\n"
            f"Original token count: {tokens}\nOutput:\n{warning}{output}")


def test_the_captured_result_signs_by_its_exit_status() -> None:
    captured = (FIXTURES / "codex_exec_171.txt").read_text()
    assert captured == codex171(NOT_FOUND, 127)
    assert error_signatures([captured]) == error_signatures(["Exit code 127"]) != ()


@pytest.mark.parametrize("output", [NOT_FOUND, TESTS_FAIL, GO_BUILD],
                         ids=["not-found", "tests-fail", "go-build"])
def test_a_repeated_failure_strikes(output: str) -> None:
    first = error_signatures([codex171(output, 1, chunk="a2", wall="0.0200")])
    again = error_signatures([codex171(output, 1, chunk="a3", wall="0.0300")])
    assert first and request_strike(again, first)


@pytest.mark.parametrize("output", ["ok\n", "", "3 passed\n", "Exit code 0\n"])
def test_exit_status_0_never_strikes(output: str) -> None:
    first = error_signatures([codex171(output, 0, chunk="b1")])
    again = error_signatures([codex171(output, 0, chunk="b2", wall="1.5000")])
    assert first == again == ()
    assert not request_strike(again, first)


HEADERS = [
    {"chunk": "e0a1f2"},  # a Chunk ID is six hex digits: none spells a marker
    {"chunk": "000000"},
    {"wall": "12.5031"},
    {"tokens": 18454},
    {"tokens": 18454, "warning": ("Warning: truncated output (original token count: 18454)\n"
                                  "Total output lines: 607\n\n")},
    {"chunk": "9c4d1e", "wall": "0.4123", "tokens": 57},
]


@pytest.mark.parametrize("header", HEADERS, ids=[",".join(h) for h in HEADERS])
@pytest.mark.parametrize(("output", "code"), [(NOT_FOUND, 127), (GO_BUILD, 1), ("ok\n", 0)],
                         ids=["not-found-127", "go-build-1", "ok-0"])
def test_the_volatile_header_never_changes_the_signatures(
        header: dict[str, Any], output: str, code: int) -> None:
    base = error_signatures([codex171(output, code)])
    assert bool(base) == (code != 0)
    assert error_signatures([codex171(output, code, **header)]) == base


def test_different_failures_sign_differently() -> None:
    """A command not found and a failing test run are other failures, and so is the same
    output ending in another status. As with `Exit code N`, the status is a code: two commands
    failing with one status and no error line of their own share its signature (0.171's result
    does not name the command)."""
    not_found = error_signatures([codex171(NOT_FOUND, 127)])
    tests_fail = error_signatures([codex171(TESTS_FAIL, 1, chunk="c7", wall="0.8000")])
    assert not_found and tests_fail
    assert not request_strike(tests_fail, not_found)
    assert not request_strike(error_signatures([codex171(TESTS_FAIL, 2)]), tests_fail)
    other = error_signatures([codex171("/bin/bash: line 1: mkae: command not found\n", 127)])
    assert other == not_found


def test_a_result_signs_as_the_same_failure_in_the_older_formats() -> None:
    """The exec JSON of older Codex releases and a shell's `Exit code N` (Claude Code) give
    the same signatures for the same output and status: the status as `tool:exit:N`, the
    command's own error lines as they sign there."""
    old = (FIXTURES / "codex_exec_json.txt").read_text()
    doc = json.loads(old)
    new = codex171(doc["output"], doc["metadata"]["exit_code"], wall="0.4000")
    assert len(error_signatures([new])) == 2
    assert set(error_signatures([new])) == set(error_signatures([old]))
    assert set(error_signatures([codex171(NOT_FOUND, 127)])) == set(
        error_signatures([f"Exit code 127\n{NOT_FOUND}"]))
