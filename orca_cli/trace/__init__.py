"""orca_cli.trace."""
