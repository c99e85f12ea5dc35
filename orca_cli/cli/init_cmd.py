"""`orca init [--path orca.toml] [--force] [--agent NAME [--write] [--url URL] [--settings PATH]]`
(SPEC §1.1, §14.5, §15): write the commented example config; with `--agent`, print what makes
that agent use the sidecar instead, and with `--write` also write the files: the config when
there is none (never replaced from here) and the set-up into the agent's own config file.
`--agent claude-code` always adds `orca statusline` as Claude Code's status line (SPEC §15):
that one edit is what the command is for, so it needs no `--write`."""

from __future__ import annotations

import os

import typer

from orca_cli.cli.agent_setup import (
    AGENTS,
    CLAUDE_CODE_MAIN,
    CLAUDE_CODE_SMALL,
    Setup,
    aider_command,
    claude_exports,
    codex_block,
    codex_config_path,
    llm_models_path,
    llm_yaml,
    opencode_json,
)
from orca_cli.cli.output import fail

__all__ = ["STATUSLINE_COMMAND", "agent_text", "register", "write_claude_statusline"]

STATUSLINE_COMMAND = "orca statusline"
_FILE_AGENTS = ("codex", "llm", "opencode")  # the agents whose own config --write edits


def register(app: typer.Typer) -> None:
    @app.command("init")
    def init_cmd(
        path: str = typer.Option("orca.toml", "--path", "-p", help="Where to write the config."),
        force: bool = typer.Option(False, "--force", "-f", help="Overwrite an existing file "
                                   "(or replace another status line or provider)."),
        agent: str | None = typer.Option(None, "--agent", metavar="|".join(AGENTS),
                                         help="Print that agent's set-up for this sidecar; "
                                              "for claude-code, also add `orca statusline` "
                                              "as its status line."),
        write: bool = typer.Option(False, "--write", help="With --agent: also write the "
                                   "config (--path) when there is none and, for codex, llm "
                                   "and opencode, the set-up into the agent's config file "
                                   "(keeping what is there). Without it --agent only prints."),
        url: str | None = typer.Option(None, "--url", help="The sidecar's address in the "
                                       "set-up (default: \\[server] host and port of the "
                                       "config, http://127.0.0.1:8787)."),
        settings: str | None = typer.Option(None, "--settings", metavar="PATH",
                                            help="Claude Code settings file to edit (default "
                                                 "~/.claude/settings.json)."),
    ) -> None:
        """Write a commented orca.toml, or an agent's set-up (--agent).

        The config serves offline (sim channels) out of the box. With --agent, print that
        agent's set-up instead (--write: write it, and the config when there is none).

        \b
        Example:
          orca init && orca serve --config orca.toml
          orca init --agent claude-code
          orca init --agent codex --write
        """
        if agent is None:
            _write_config(path, force)
            return
        if agent not in AGENTS:
            fail(f"--agent must be one of {', '.join(AGENTS)}, got {agent!r}", 2)
        # An agent set up by environment variables alone (aider) has no file of its own to
        # write: `--write` then writes `./orca.toml` only, when missing, as for any agent.
        # Without a config at `path` the set-up is the example's, the one written below.
        setup = _setup(path, (url or _config_url(path)).rstrip("/"))
        # The agent's file is read and its new text made first: one that cannot take the
        # set-up fails the command before anything is written.
        plan = _plan_agent(agent, setup, force) if write and agent in _FILE_AGENTS else None
        if write and not os.path.exists(path):
            _write_config(path, force=False)
        typer.echo(agent_text(agent, setup), nl=False)
        if agent == "claude-code":
            target = settings or os.path.join(os.path.expanduser("~"), ".claude",
                                              "settings.json")
            typer.echo(write_claude_statusline(target, force=force))
        elif plan is not None:
            target_path, text, done = plan
            if text is not None:
                _replace_file(target_path, text)
            typer.echo(done)


def _config_url(path: str) -> str:
    """`http://host:port` from the config's [server] table, read as plain TOML (no
    environment needed); the defaults when it cannot be read."""
    import tomllib

    host, port = "127.0.0.1", 8787
    try:
        with open(path, "rb") as fh:
            server = tomllib.load(fh).get("server", {})
        host = str(server.get("host", host))
        port = int(server.get("port", port))
    except (OSError, ValueError, TypeError, AttributeError):
        pass
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _setup(path: str, base: str) -> Setup:
    """The set-up printed for the sidecar of the config at `path`: its routers and Claude
    Code's model variables as `orca serve`'s banner gives them for that config (the latter set
    when its aliases do not route Claude Code's own model names); with no file there, the
    example config's."""
    setup = Setup(base=base)
    if not os.path.exists(path):
        return setup
    from dataclasses import replace

    from orca_cli.cli.agent_setup import setup_for
    from orca_cli.cli.operator import Operator

    found = setup_for(Operator(config=path).cfg, base)  # provider keys need not be set
    return replace(setup, model=found.model, side_model=found.side_model,
                   claude_model=found.claude_model, claude_small_model=found.claude_small_model)


_CLAUDE_NOTES = {
    "ANTHROPIC_API_KEY": "any non-empty value; orca holds the provider keys",
    "ANTHROPIC_MODEL": f"no [aliases] pattern routes {', '.join(CLAUDE_CODE_MAIN)}, "
                       "Claude Code's default",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL": f"nor {', '.join(CLAUDE_CODE_SMALL)}, its small model",
}


def agent_text(agent: str, s: Setup) -> str:
    """The set-up `orca init --agent` prints: commands to paste, files to write."""
    if agent == "claude-code":
        lines = [f"export {k}={v}" + (f"    # {_CLAUDE_NOTES[k]}" if k in _CLAUDE_NOTES else "")
                 for k, v in claude_exports(s)]
        return "\n".join([*lines, "claude"]) + "\n"
    if agent == "codex":
        return (f"# {codex_config_path()}\n{codex_block(s)}\n"
                f"export ORCA_API_KEY={s.key}    # Codex insists on a key: any non-empty "
                "value\ncodex\n")
    if agent == "aider":
        return (f"export OPENAI_API_BASE={s.v1}    # Aider reads OPENAI_API_BASE\n"
                f"export OPENAI_API_KEY={s.key}\n"
                f"{aider_command(s)}\n")
    if agent == "llm":
        return (f"# {llm_models_path()}\n{llm_yaml(s)}\n"
                f"llm keys set orca    # any non-empty value\n"
                f"llm -m orca \"…\"    # then: llm -c \"…\"\n")
    return (f"# opencode.json (in the project, or ~/.config/opencode/opencode.json)\n"
            f"{opencode_json(s)}\n"
            f"export ORCA_API_KEY={s.key}\n"
            "opencode\n")


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


# (the agent's file, its new text — None when it already has the set-up —, what was done)
Plan = tuple[str, str | None, str]


def _plan_agent(agent: str, s: Setup, force: bool) -> Plan:
    if agent == "codex":
        return _plan_codex(codex_config_path(), s, force)
    if agent == "llm":
        return _plan_llm(llm_models_path(), s, force)
    if agent == "opencode":
        return _plan_opencode("opencode.json", s, force)
    fail(f"{agent} is set up by the environment above; there is no file to write", 2)


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")


def _replace_file(path: str, text: str) -> None:
    parent = os.path.dirname(path)
    try:
        if parent:
            os.makedirs(parent, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")


def _plan_codex(path: str, s: Setup, force: bool) -> Plan:
    """Add the provider to Codex's config.toml, keeping its other settings and comments: the
    top-level keys go first (TOML puts them before any table), the table at the end. A file
    that already names another provider, model or `orca` provider changes only with --force
    (then rewritten from its parsed form, comments lost)."""
    import tomllib

    import tomli_w

    text = _read_text(path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        fail(f"{path} is not valid TOML ({exc}); fix it first")
    wanted = tomllib.loads(codex_block(s))
    current = {k: doc.get(k) for k in ("model", "model_provider")}
    provider = doc.get("model_providers", {}).get("orca")
    if current == {k: wanted[k] for k in current} and provider == wanted["model_providers"]["orca"]:
        return path, None, f"{path} already uses orca"
    clash = [k for k, v in current.items() if v is not None] + (["[model_providers.orca]"]
                                                                 if provider else [])
    if clash and not force:
        fail(f"{path} already sets {', '.join(clash)}; pass --force to replace them")
    if clash:
        doc.update({k: wanted[k] for k in current})
        doc.setdefault("model_providers", {})["orca"] = wanted["model_providers"]["orca"]
        new = tomli_w.dumps(doc)
    else:
        head, table = codex_block(s).split("\n\n", 1)
        new = f"{head}\n{text}{'' if not text or text.endswith(chr(10)) else chr(10)}\n{table}"
    tomllib.loads(new)  # what is written parses
    return path, new, f"wrote the orca provider into {path}"


def _plan_llm(path: str, s: Setup, force: bool) -> Plan:
    """Append the model to llm's extra-openai-models.yaml (a YAML list), once."""
    text = _read_text(path)
    entry = llm_yaml(s)
    if entry in text:
        return path, None, f"{path} already has the orca model"
    if "model_id: orca\n" in text and not force:
        fail(f"{path} already has a model `orca`; edit it, or pass --force to add this one")
    sep = "" if not text or text.endswith("\n") else "\n"
    return path, text + sep + entry, f"added the orca model to {path}"


def _plan_opencode(path: str, s: Setup, force: bool) -> Plan:
    """Add the `orca` provider (and the default model) to ./opencode.json, keeping the rest.
    A file with comments or trailing commas (OpenCode reads JSONC) is not rewritten: its
    comments would be lost (`orca init --agent opencode` prints the block to add)."""
    import json

    text = _read_text(path)
    try:
        doc = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        fail(f"{path} is not plain JSON ({exc}), perhaps JSONC with comments or trailing "
             f"commas, which a rewrite would lose: add the block `orca init --agent opencode` prints to "
             f"it by hand")
    if not isinstance(doc, dict):
        fail(f"{path} is not a JSON object; fix it first")
    wanted = json.loads(opencode_json(s))
    providers = doc.setdefault("provider", {})
    if providers.get("orca") == wanted["provider"]["orca"] and doc.get("model") == wanted["model"]:
        return path, None, f"{path} already uses orca"
    if ("orca" in providers or "model" in doc) and not force:
        fail(f"{path} already sets provider.orca or model; pass --force to replace them")
    doc.setdefault("$schema", wanted["$schema"])
    providers["orca"] = wanted["provider"]["orca"]
    doc["model"] = wanted["model"]
    return path, json.dumps(doc, indent=2) + "\n", f"wrote the orca provider into {path}"
