from __future__ import annotations

from orca_cli.cli import main

main()
