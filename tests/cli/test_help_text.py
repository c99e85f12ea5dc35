"""Every command's help reads as paragraphs at any terminal width: the docstrings' own line
breaks are not kept (they broke lines mid-sentence once the terminal re-wrapped them), while
example blocks (`\\b`) keep theirs."""

from __future__ import annotations

import re
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.cli.usage import reflow


def _paths(cmd: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        out.append((*prefix, name))
        out.extend(_paths(sub, (*prefix, name)))
    return out


PATHS = _paths(get_command(app))


def test_reflow_joins_a_paragraph_and_keeps_an_example_block() -> None:
    text = """First line
        goes on here.

        A second
        paragraph.

        \b
        Example:
            orca serve
            orca serve --port 1
        """
    assert reflow(text) == ("First line goes on here.\n\nA second paragraph.\n\n"
                            "\b\nExample:\n    orca serve\n    orca serve --port 1")


def _prose(help_out: str) -> list[list[str]]:
    """The help's description paragraphs (between the usage line and the first box or
    example block), each as its rendered lines."""
    body = help_out.split("Usage:", 1)[1].split("\n", 1)[1]
    body = re.split(r"\n\s*(?:╭|Example)", body, maxsplit=1)[0]
    paras: list[list[str]] = [[]]
    for line in body.splitlines():
        if line.strip():
            paras[-1].append(line.strip())
        elif paras[-1]:
            paras.append([])
    return [p for p in paras if p]


@pytest.mark.parametrize("path", PATHS, ids=" ".join)
def test_help_paragraphs_wrap_to_the_terminal(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"},
                                terminal_width=80)
    assert result.exit_code == 0, result.output
    for para in _prose(result.stdout):
        # A re-wrapped paragraph fills each line but its last; a docstring's own break
        # left a line of a word or two in the middle of one.
        for line in para[:-1]:
            assert len(line) >= 55, (path, para)
