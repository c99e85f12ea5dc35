"""`orca config show|check|path` (SPEC §1.1, §2).

`check` exits 0 printing `ok: <file>` (warnings on stderr) or 1 with one
`orca: <file>: <key>: <why>` line per problem. `show` prints the effective config with every
secret replaced by its fingerprint; `--json` is exactly one JSON document on stdout.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import typer

from orca_cli.cli.output import EXIT_FAIL, EXIT_USAGE, fail, print_json

__all__ = ["register", "sub"]

sub = typer.Typer(
    help="Show or check the configuration (orca.toml).",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_PATH_ARG = typer.Argument(None, metavar="PATH", help="Config file (same as --config).")
_CONFIG_OPT = typer.Option(None, "--config", "-c", metavar="PATH", help="Config file to use.")


def register(app: typer.Typer) -> None:
    app.add_typer(sub, name="config")


def _pick(path: str | None, config: str | None) -> str | None:
    if path and config and path != config:
        fail(f"two config files given ({path} and --config {config}); pass one", EXIT_USAGE)
    return path or config


def _no_file_note() -> str:
    from orca_cli.config.discover import looked_at

    return (f"no config file found (looked at {looked_at(os.environ)}); using the built-in "
            "defaults, which have no channel: `orca serve` needs a config file (`orca init` "
            "writes one)")


@sub.command("check")
def check_cmd(path: str | None = _PATH_ARG, config: str | None = _CONFIG_OPT) -> None:
    """Validate a config file: every problem as `file: key: why`, exit 1 if any.

    \b
    Example:
      orca config check orca.toml.example
    """
    from orca_cli.config.load import check, validate_all
    from orca_cli.errors import ConfigError

    try:
        cfg, errors = validate_all(_pick(path, config), environ=os.environ)
    except ConfigError as exc:
        fail(str(exc))
    if errors or cfg is None:
        for err in errors:
            sys.stderr.write(f"orca: {err}\n")
        n = len(errors)
        sys.stderr.write(f"orca: {n} problem(s); fix them and run `orca config check` again\n")
        raise typer.Exit(EXIT_FAIL)
    issues = check(cfg)
    problems = [i for i in issues if i.severity == "error"]
    for issue in problems:
        sys.stderr.write(f"orca: {issue}\n")
    if problems:
        raise typer.Exit(EXIT_FAIL)
    for issue in issues:
        sys.stderr.write(f"orca: warning: {issue}\n")
    if cfg.source is None:
        sys.stderr.write(f"orca: {_no_file_note()}\n")
        typer.echo("ok: built-in defaults (no config file: `orca serve` needs one, "
                   "`orca init` writes it)")
    else:
        typer.echo(f"ok: {cfg.source}")


@sub.command("show")
def show_cmd(
    path: str | None = _PATH_ARG,
    config: str | None = _CONFIG_OPT,
    as_json: bool = typer.Option(False, "--json", help="One JSON document on stdout."),
) -> None:
    """Print the effective config (defaults filled in), secrets redacted to fingerprints.

    \b
    Example:
      orca config show --json | jq .routers
    """
    from orca_cli.config.load import load, redacted
    from orca_cli.errors import ConfigError

    try:
        cfg = load(_pick(path, config), environ=os.environ)
    except ConfigError as exc:
        fail(str(exc))
    doc = redacted(cfg)
    if cfg.source is None:
        sys.stderr.write(f"orca: {_no_file_note()}\n")
    if as_json:
        print_json(doc)
        return
    import tomli_w

    source = doc.pop("source", None)
    text = f"# effective config of {source or 'the built-in defaults'}; secrets redacted\n"
    text += tomli_w.dumps(_tomlable(doc))
    if not sys.stdout.isatty():  # piped: plain TOML, never wrapped or cropped
        sys.stdout.write(text)
        return
    from rich.syntax import Syntax

    from orca_cli.cli.output import out_console

    out_console().print(Syntax(text, "toml", theme="ansi_dark", background_color="default"))


@sub.command("path")
def path_cmd(config: str | None = _CONFIG_OPT) -> None:
    """Print the config file orca would read: --config, $ORCA_CONFIG, ./orca.toml, then
    $XDG_CONFIG_HOME/orca/orca.toml."""
    from orca_cli.config.load import discover
    from orca_cli.errors import ConfigError

    try:
        found = discover(config, os.environ)
    except ConfigError as exc:
        fail(str(exc))
    if found is None:
        fail(_no_file_note() + "; create one with `orca init`")
    typer.echo(found)


def _tomlable(value: Any) -> Any:
    """TOML has no null; a redacted secret renders as a readable string."""
    if isinstance(value, dict):
        if value.get("redacted") is True and "fp" in value:
            return f"<redacted fp={value['fp']}>"
        return {k: _tomlable(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_tomlable(v) for v in value]
    return value
