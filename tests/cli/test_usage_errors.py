"""Usage errors are one sentence on stderr and exit 2 (SPEC §1.1), for every command: the
framework's boxed multi-line report never shows, and nothing goes to stdout."""

from __future__ import annotations

import pytest

from tests.cli.test_operator_cli import orca


@pytest.mark.parametrize("args", [
    ("requests", "--limit", "0"),
    ("requests", "--limit", "abc"),
    ("replay", "--seed", "abc"),
    ("stats", "--router", "x"),
    ("session", "--bogus"),
    ("session", "list", "--bogus"),
    ("score", "--api", "gemini"),
    ("no-such-command",),
    ("explain", ""),
    ("requests", "--url", "notaurl"),
    ("audit", "--url", "http://127.0.0.1:notaport"),
])
def test_a_usage_error_is_one_line_and_exit_2(args: tuple[str, ...]) -> None:
    code, out, err = orca(*args)
    assert code == 2, err
    assert out == ""
    assert err.startswith("orca: ") and err.count("\n") == 1, err
    assert "╭" not in err and "Usage:" not in err


def test_the_line_names_the_bad_value_and_where_help_is() -> None:
    _, _, err = orca("requests", "--limit", "0")
    assert "--limit" in err and "orca requests -h" in err
    _, _, err = orca("requests", "--url", "notaurl")
    assert "'notaurl'" in err and "http://127.0.0.1:8787" in err


def test_help_version_and_success_are_unchanged() -> None:
    code, out, _ = orca("--version")
    assert code == 0 and out.startswith("orca ")
    code, out, _ = orca("requests", "-h")
    assert code == 0 and "--limit" in out
