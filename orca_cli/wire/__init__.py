"""orca_cli.wire."""
