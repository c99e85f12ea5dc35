"""`orca doctor [--probe] [--config PATH] [--json]`."""

from __future__ import annotations

import typer

from orca_cli.cli.output import fail, out_console, print_json


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    def doctor_cmd(
        probe: bool = typer.Option(False, "--probe", help="Read each channel's model list and send one tiny real request per format."),
        config: str | None = typer.Option(None, "--config", help="Config file."),
        as_json: bool = typer.Option(False, "--json", help="Print the checks as JSON."),
    ) -> None:
        """Check config, store, upstreams, port and token; every problem with its fix.

        \b
        Example:
            orca doctor
            orca doctor --probe
        """
        import asyncio

        from orca_cli.config.load import load
        from orca_cli.doctor import run_checks
        from orca_cli.errors import ConfigError

        try:
            cfg = load(config)
        except ConfigError as exc:
            fail(f"config: {exc}")
        checks = asyncio.run(run_checks(cfg, probe=probe))
        if as_json:
            print_json([c.to_json() for c in checks])
        else:
            console = out_console()
            marks = {"ok": "[green]ok[/]", "warn": "[yellow]warn[/]", "fail": "[red]FAIL[/]"}
            for c in checks:
                console.print(f"{marks[c.status]:>14}  {c.name}: {c.detail}", markup=True,
                              highlight=False)
                if c.fix:
                    console.print(f"{'':>6}fix: {c.fix}", highlight=False)
        if any(c.status == "fail" for c in checks):
            raise typer.Exit(1)
