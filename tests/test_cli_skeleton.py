from __future__ import annotations

from typer.testing import CliRunner

from orca_cli.cli import app

SPEC_COMMANDS = ["serve", "demo", "init", "config", "score", "explain", "session", "escalate",
                 "reset", "pins", "audit", "stats", "replay", "doctor"]


def test_every_spec_command_is_registered() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in SPEC_COMMANDS:
        assert f" {name} " in result.output, name


def test_version_prints_the_package_version() -> None:
    from orca_cli import __version__

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"orca {__version__}"
