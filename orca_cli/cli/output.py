"""Output conventions shared by every command (SPEC §1.1).

`--json` means one JSON document on stdout and nothing else; diagnostics go to stderr; errors
are one sentence with the fix; exit codes are 0 ok, 1 failure, 2 usage. `NO_COLOR` is honoured
(rich reads it itself).
"""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

__all__ = ["EXIT_FAIL", "EXIT_OK", "EXIT_USAGE", "err_console", "fail", "out_console", "print_json"]

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2


def print_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()


def fail(message: str, code: int = EXIT_FAIL) -> NoReturn:
    """Print one clear sentence to stderr and exit."""
    import typer

    sys.stderr.write(f"orca: {message}\n")
    raise typer.Exit(code)


def err_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def out_console() -> Any:
    """stdout; piped or captured output gets at least 140 columns so tables keep one row per
    item instead of folding every cell (a terminal keeps its own width)."""
    from rich.console import Console

    console = Console()
    if not console.is_terminal and console.width < 140:
        console.width = 140
    return console
