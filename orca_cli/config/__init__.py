"""orca_cli.config."""
