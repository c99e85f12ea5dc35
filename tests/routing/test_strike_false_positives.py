"""What is not the same failure again (SPEC §6.3, §19): a tool result the agent reports as
succeeded signs nothing, and lines every failure prints alike (a bare exit status 1, a
runner's summary) do not make two different failures one. Found driving the real Claude Code
and Codex: a session re-reading a file that defines `class ConfigError(Exception)` escalated
by strikes with every command succeeding, and three different pytest failures struck on
their shared `1 failed in 0.1s` and `Exit code 1`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orca_cli.routing.features import Scorer
from orca_cli.routing.strikes import error_signatures, request_strike

FIXTURES = Path(__file__).parent / "fixtures" / "strikes"
SOURCE = ('import logging\n\nlog = logging.getLogger(__name__)\n\n\n'
          'class ConfigError(Exception):\n    """Raised when the configuration is invalid."""\n\n\n'
          'def load(path):\n    try:\n        return open(path).read()\n'
          '    except FileNotFoundError as exc:\n        log.error("missing %s", path)\n'
          '        raise ConfigError(str(exc)) from exc\n')
SCORER = Scorer()


def _claude(results: list[tuple[str, bool]]) -> dict[str, Any]:
    """A Claude Code continuation: the assistant's tool calls, then their results, each
    marked `is_error` as Claude Code marks it."""
    calls = [{"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": "x"}}
             for i in range(len(results))]
    blocks = [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "is_error": failed,
               "content": text} for i, (text, failed) in enumerate(results)]
    return {"model": "m", "max_tokens": 100, "messages": [
        {"role": "user", "content": "fix the config loader"},
        {"role": "assistant", "content": calls},
        {"role": "user", "content": blocks}]}


def _signs(body: dict[str, Any]) -> tuple[str, ...]:
    return error_signatures(SCORER.delta(body, "anthropic").strike_texts)


def test_a_result_marked_succeeded_signs_nothing_whatever_it_holds() -> None:
    read = _claude([(SOURCE, False)])
    assert error_signatures([SOURCE])  # unmarked, the source would sign ...
    assert _signs(read) == ()  # ... marked succeeded, it does not
    assert not request_strike(_signs(read), _signs(read))
    # the text still counts for the difficulty score, as every tool result does
    assert SCORER.delta(read, "anthropic").tool_result_texts == (SOURCE,)


def test_beside_a_succeeded_result_a_failed_one_still_signs() -> None:
    failed = (FIXTURES / "claude_code_pytest_keyerror.txt").read_text()
    body = _claude([(SOURCE, False), (failed, True)])
    assert _signs(body) == error_signatures([failed]) != ()


def test_unmarked_results_are_read_as_before() -> None:
    body = _claude([(SOURCE, False)])
    del body["messages"][2]["content"][0]["is_error"]
    assert _signs(body) == error_signatures([SOURCE]) != ()


def test_a_codex_command_that_exited_0_signs_nothing() -> None:
    ok = ("Chunk ID: 4f1a2b\nWall time: 0.0100 seconds\nProcess exited with code 0\n"
          f"Original token count: 80\nOutput:\n{SOURCE}")
    assert error_signatures([ok]) == ()
    as_json = json.dumps({"output": SOURCE, "metadata": {"exit_code": 0}})
    assert error_signatures([as_json]) == ()


@pytest.mark.parametrize(("first", "second"), [
    ("keyerror", "zerodiv"), ("zerodiv", "nameerror"), ("keyerror", "nameerror")])
def test_two_different_failures_do_not_strike(first: str, second: str) -> None:
    a = error_signatures([(FIXTURES / f"claude_code_pytest_{first}.txt").read_text()])
    b = error_signatures([(FIXTURES / f"claude_code_pytest_{second}.txt").read_text()])
    assert a and b and not request_strike(b, a)


@pytest.mark.parametrize("name", ["keyerror", "zerodiv", "nameerror"])
def test_the_same_failure_again_strikes(name: str) -> None:
    text = (FIXTURES / f"claude_code_pytest_{name}.txt").read_text()
    again = text.replace("in 0.", "in 1.")  # another run's timing
    assert request_strike(error_signatures([again]), error_signatures([text]))


@pytest.mark.parametrize("line", [
    "1 failed in 0.12s", "=== 2 failed, 3 passed, 1 skipped in 1.02s ===",
    "Tests:       1 failed, 4 passed, 5 total", "Test Suites: 1 failed, 1 total",
    "test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; "
    "finished in 0.00s", "Found 2 errors in 1 file.",
    'error: could not compile `app` (bin "app") due to 1 previous error',
    "make: *** [Makefile:3: all] Error 2", "FAILED", "Exit code 1"])
def test_a_line_every_failure_prints_alike_signs_nothing(line: str) -> None:
    assert error_signatures([line]) == ()


def test_exit_status_1_alone_signs_by_what_the_command_printed_last() -> None:
    missing = error_signatures(["Exit code 1\n/bin/sh: 1: tsx: not found"])
    other = error_signatures(["Exit code 1\n3 passed, 1 did not pass: test_parse_empty"])
    assert missing and other and missing != other
    assert error_signatures(["Exit code 1\n/bin/sh: 1: tsx: not found\n"]) == missing
