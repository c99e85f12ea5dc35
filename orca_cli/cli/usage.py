"""Usage errors as one sentence (SPEC §1.1): `orca: <what is wrong> (see `orca CMD -h`)` on
stderr and exit 2, for every command, in place of the CLI framework's boxed, multi-line
report. `OrcaGroup` is the root command's class, so `orca` and the test runner both get it.

Only the root command's `main` runs (it dispatches to the sub-commands), so catching here
covers every command and sub-app: the framework runs in non-standalone mode, which hands the
error back instead of printing it, and this module does what standalone mode would otherwise
do (exit codes, Abort, the value an `Exit` carries).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

try:  # typer vendors click from 0.2x on; before, it used click itself
    from typer._click.exceptions import ClickException, UsageError
except ImportError:  # pragma: no cover - older typer
    from click.exceptions import ClickException, UsageError  # type: ignore[assignment]

__all__ = ["OrcaGroup", "reflow", "usage_line"]

EXIT_ABORT = 1


def usage_line(exc: ClickException) -> str:
    """The error as one line: its message, whitespace folded, and where the help is."""
    message = " ".join(exc.format_message().split()).rstrip(".")
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, UsageError) and ctx is not None:
        return f"orca: {message} (see `{ctx.command_path} -h`)"
    return f"orca: {message}"


def reflow(text: str) -> str:
    """A docstring's paragraphs each on one line, so the help wraps them to the terminal
    (the framework keeps a docstring's own line breaks, which a narrower or wider terminal
    then breaks again mid-line). A paragraph marked `\\b` (an example block) is kept as
    written."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split())
                         for p in paragraphs)


def _reflow_help(group: Any) -> None:
    for cmd in getattr(group, "commands", {}).values():
        if cmd.help:
            cmd.help = reflow(cmd.help)
        _reflow_help(cmd)


class OrcaGroup(TyperGroup):
    """The root `orca` group: usage errors (bad values, unknown options or commands) are one
    line on stderr with exit 2; everything else behaves as the framework's standalone mode."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        _reflow_help(self)

        def run() -> Any:
            return super(OrcaGroup, self).main(args, prog_name, complete_var,
                                               standalone_mode=False,
                                               windows_expand_args=windows_expand_args, **extra)

        if not standalone_mode:
            return run()
        try:
            rv = run()
        except ClickException as exc:
            if type(exc).__name__ != "NoArgsIsHelpError":  # the help was printed already
                sys.stderr.write(usage_line(exc) + "\n")
            sys.exit(exc.exit_code)
        except typer.Abort:
            sys.stderr.write("orca: aborted\n")
            sys.exit(EXIT_ABORT)
        # Non-standalone mode returns an `Exit`'s code, or the command's own return value
        # (orca's commands return None): standalone mode would exit with either.
        sys.exit(rv if isinstance(rv, int) else 0)
