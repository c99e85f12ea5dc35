"""The `orca` command line (SPEC §1.1). Each command lives in its own module and registers
itself on `app`; heavy imports happen inside the commands (completion runs this on every TAB)."""

from __future__ import annotations

import typer

from orca_cli.cli.usage import OrcaGroup

__all__ = ["app", "main"]

app = typer.Typer(
    name="orca",
    cls=OrcaGroup,  # usage errors as one line, exit 2 (SPEC §1.1)
    help="Session-aware LLM routing sidecar: pins each conversation to one model and key, "
    "escalates to a frontier model only on corroborated evidence, inside hard caps.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from orca_cli import __version__

        typer.echo(f"orca {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Session-aware LLM routing sidecar: pins each conversation to one model and key,
    escalates to a frontier model only on corroborated evidence, inside hard caps."""


def _plain_help_types() -> None:
    """Help without typer's Python type tags (`<bool>`, `<str>`): a flag takes no value, and
    a value is named by its metavar or its option name in capitals (`--url URL`)."""
    from typer.core import TyperArgument, TyperOption

    def option_type(self: TyperOption, ctx: object) -> str | None:
        if self.metavar is not None:
            return self.metavar
        if self.is_flag or self.count:
            return None
        return (self.name or "value").upper()

    def argument_type(self: TyperArgument, ctx: object) -> str | None:
        return None  # the argument's own column already names it

    TyperOption.display_type_rich = option_type  # type: ignore[method-assign]
    TyperArgument.display_type_rich = argument_type  # type: ignore[method-assign,assignment]


def _register() -> None:
    from orca_cli.cli import (
        audit,
        budget,
        config_cmd,
        demo,
        doctor,
        escalate,
        explain,
        init_cmd,
        pins,
        replay,
        requests,
        routes,
        score,
        serve,
        session,
        stats,
        statusline,
    )

    for mod in (serve, demo, init_cmd, config_cmd, score, explain, requests, session, escalate,
                pins, audit, stats, statusline, replay, doctor, routes, budget):
        mod.register(app)


_plain_help_types()
_register()


def main() -> None:
    from orca_cli.errors import OrcaError

    try:
        app()
    except OrcaError as exc:  # one sentence on stderr, never a traceback
        import sys

        sys.stderr.write(f"orca: {exc}\n")
        raise SystemExit(exc.exit_code) from None
