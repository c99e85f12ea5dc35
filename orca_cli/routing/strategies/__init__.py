"""orca_cli.routing.strategies."""
