"""orca_cli.state."""
