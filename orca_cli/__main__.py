"""`python -m orca_cli` and the `orca` command. `orca statusline` runs on every status-bar
update, so it is dispatched here before the CLI framework is imported."""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "statusline":
        from orca_cli.statusline import main as statusline

        raise SystemExit(statusline(sys.argv[2:]))
    from orca_cli.cli import main as cli

    cli()


if __name__ == "__main__":
    main()
