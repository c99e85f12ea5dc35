"""Regenerate `completions/` from the CLI: `python scripts/gen_completions.py`.

Each script asks the installed `orca` for its completions at run time (typer's protocol via
`_ORCA_COMPLETE`), so new commands and options complete without regenerating; the files
change only when typer's script format does. `tests/test_completions.py` fails when they
are stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

from typer._completion_shared import get_completion_script

SHELLS = {"bash": "orca.bash", "zsh": "_orca", "fish": "orca.fish"}
ROOT = Path(__file__).resolve().parent.parent / "completions"


def scripts() -> dict[str, str]:
    return {name: get_completion_script(prog_name="orca", complete_var="_ORCA_COMPLETE",
                                        shell=shell) + "\n"
            for shell, name in SHELLS.items()}


def main() -> int:
    ROOT.mkdir(exist_ok=True)
    for name, text in scripts().items():
        (ROOT / name).write_text(text)
    print(f"wrote {', '.join(SHELLS.values())} in {ROOT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
