"""orca_cli.replay."""
