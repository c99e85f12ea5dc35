"""orca_cli.proxy."""
