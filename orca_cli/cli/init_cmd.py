"""`orca init [--path orca.toml] [--force] [--agent claude-code [--settings PATH]]` (SPEC §1.1,
§15): write the commented example config; with `--agent claude-code`, also add
`orca statusline` as Claude Code's status line."""

from __future__ import annotations

import os

import typer

from orca_cli.cli.output import fail

__all__ = ["STATUSLINE_COMMAND", "register", "write_claude_statusline"]

AGENTS = ("claude-code",)
STATUSLINE_COMMAND = "orca statusline"


def register(app: typer.Typer) -> None:
    @app.command("init")
    def init_cmd(
        path: str = typer.Option("orca.toml", "--path", "-p", help="Where to write the config."),
        force: bool = typer.Option(False, "--force", "-f", help="Overwrite an existing file "
                                   "(or replace another status line)."),
        agent: str | None = typer.Option(None, "--agent", metavar="claude-code",
                                         help="Also set the agent up: for claude-code, add "
                                              "`orca statusline` as its status line."),
        settings: str | None = typer.Option(None, "--settings", metavar="PATH",
                                            help="Claude Code settings file to edit (default "
                                                 "~/.claude/settings.json)."),
    ) -> None:
        """Write a commented orca.toml that serves offline (sim channels) out of the box.

        \b
        Example:
          orca init && orca serve --config orca.toml
          orca init --agent claude-code
        """
        if agent is not None and agent not in AGENTS:
            fail(f"--agent must be one of {', '.join(AGENTS)}, got {agent!r}", 2)
        if agent is None or not os.path.exists(path) or force:
            _write_config(path, force)
        if agent == "claude-code":
            target = settings or os.path.join(os.path.expanduser("~"), ".claude",
                                              "settings.json")
            typer.echo(write_claude_statusline(target, force=force))


def _write_config(path: str, force: bool) -> None:
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


def write_claude_statusline(path: str, *, force: bool = False) -> str:
    """Set `statusLine` in a Claude Code settings file, keeping every other key; refuses to
    replace a different status line without `force`, and never rewrites a file it cannot
    parse. Returns the sentence to print."""
    import json

    doc: dict[str, object] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        loaded = json.loads(text) if text.strip() else {}
    except FileNotFoundError:
        loaded = {}
    except (OSError, ValueError) as exc:
        fail(f"cannot read {path} as JSON ({exc}); fix it or pass --settings")
    if not isinstance(loaded, dict):
        fail(f"{path} is not a JSON object; fix it or pass --settings")
    doc = loaded
    wanted = {"type": "command", "command": STATUSLINE_COMMAND, "padding": 0}
    current = doc.get("statusLine")
    if current == wanted:
        return f"{path} already shows orca's status line"
    if current is not None and not force:
        fail(f"{path} already has a statusLine ({json.dumps(current)}); pass --force to "
             "replace it")
    doc["statusLine"] = wanted
    parent = os.path.dirname(path)
    try:
        if parent:
            os.makedirs(parent, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(doc, indent=2) + "\n")
        os.replace(tmp, path)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}; pass --settings")
    return (f"Claude Code status line set in {path}: `{STATUSLINE_COMMAND}` (restart Claude "
            "Code to see it)")
