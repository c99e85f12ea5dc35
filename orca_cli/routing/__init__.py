"""orca_cli.routing."""
