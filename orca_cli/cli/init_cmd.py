"""`orca init [--path orca.toml] [--force]` (SPEC §1.1): write the commented example config."""

from __future__ import annotations

import os

import typer

from orca_cli.cli.output import fail

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("init")
    def init_cmd(
        path: str = typer.Option("orca.toml", "--path", "-p", help="Where to write the config."),
        force: bool = typer.Option(False, "--force", "-f", help="Overwrite an existing file."),
    ) -> None:
        """Write a commented orca.toml that serves offline (sim channels) out of the box.

        \b
        Example:
          orca init && orca serve --config orca.toml
        """
        from orca_cli.config.template import template_text

        if os.path.isdir(path):
            hint = os.path.join(path, "orca.toml")
            fail(f"{path} is a directory; pass a file name, e.g. --path {hint}")
        if os.path.exists(path) and not force:
            fail(f"{path} already exists; pass --force to overwrite it, "
                 "or --path to write elsewhere")
        parent = os.path.dirname(path)
        try:
            if parent:
                os.makedirs(parent, exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(template_text())
        except OSError as exc:
            fail(f"cannot write {path}: {exc.strerror or exc}; pick another --path")
        typer.echo(f"wrote {path}")
        typer.echo(f"next: orca config check {path} && orca serve --config {path}", err=True)
