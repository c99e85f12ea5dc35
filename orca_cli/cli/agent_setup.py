"""What makes each coding agent use the sidecar (SPEC §14.5): the text `orca serve`'s banner
and `orca init --agent` print, and the files `orca init --agent … --write` edits.

Each set-up is the one tests/agents runs against `orca serve` (Claude Code, Codex CLI, Aider,
llm, the SDKs) or tests/cli/test_init_agents.py runs with the agent itself. An agent insists on
some API key even though orca holds the providers' keys: any non-empty value does, unless the
sidecar has an `inbound_token`, which is then the key to give.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["AGENTS", "CLAUDE_CODE_MAIN", "CLAUDE_CODE_SMALL", "Setup", "aider_command",
           "banner_lines",
           "claude_exports", "codex_block", "codex_config_path", "llm_models_path", "llm_yaml",
           "opencode_json", "setup_for"]

AGENTS = ("claude-code", "codex", "aider", "opencode", "llm")
# The model names Claude Code asks for when nothing overrides them (2.1.332, the version
# tests/agents runs): its main model and its small one. A config whose [aliases] route none
# of them needs `ANTHROPIC_MODEL` / `ANTHROPIC_DEFAULT_HAIKU_MODEL` (the small model's
# variable; `ANTHROPIC_SMALL_FAST_MODEL` is its deprecated name) naming a router instead.
CLAUDE_CODE_MAIN = ("claude-opus-5-5",)
CLAUDE_CODE_SMALL = ("claude-haiku-5-5", "claude-haiku-4-5")


@dataclass(frozen=True)
class Setup:
    """Where the sidecar is and what to call: the base URL (no `/v1`), the model name an
    OpenAI-style agent asks for (`orca/<router>`), and the key agents must send."""

    base: str
    model: str = "orca/coding"
    side_model: str | None = "orca/background"
    key: str = "orca"
    passthrough: bool = False  # a channel forwards the client's own key (pass_through_auth)
    # Claude Code's model variables, set when no alias routes its default names (None: the
    # config's aliases do and the agent's own names are sent).
    claude_model: str | None = None  # ANTHROPIC_MODEL
    claude_small_model: str | None = None  # ANTHROPIC_DEFAULT_HAIKU_MODEL

    @property
    def v1(self) -> str:
        return f"{self.base}/v1"


def setup_for(cfg: object, base: str) -> Setup:
    """The set-up for a loaded config: its first session-aware router as the main model, a
    sessionless one for an agent's weak model, and the inbound token as the key if set."""
    routers = getattr(cfg, "routers", {}) or {}
    aware = [n for n, r in routers.items() if getattr(r, "session_aware", True)]
    sessionless = [n for n, r in routers.items() if not getattr(r, "session_aware", True)]
    main = "coding" if "coding" in aware else (aware[0] if aware else "coding")
    side = "background" if "background" in sessionless else (
        sessionless[0] if sessionless else None)
    server = getattr(cfg, "server", None)
    token = getattr(server, "inbound_token", "") if server is not None else ""
    passthrough = any(getattr(ch, "pass_through_auth", False) and getattr(ch, "enabled", True)
                      for ch in getattr(cfg, "channels", ()) or ())
    model, side_model = f"orca/{main}", f"orca/{side}" if side else None
    claude_model = claude_small = None
    if aware and not _routes(cfg, CLAUDE_CODE_MAIN):
        claude_model = model
    if aware and not _routes(cfg, CLAUDE_CODE_SMALL):
        claude_small = side_model or model
    return Setup(base=base, model=model, side_model=side_model,
                 key="$ORCA_INBOUND_TOKEN" if token else "orca", passthrough=passthrough,
                 claude_model=claude_model, claude_small_model=claude_small)


def _routes(cfg: object, names: tuple[str, ...]) -> bool:
    """Whether the config serves every one of `names` (an alias, a router or a model)."""
    from orca_cli.config.schema import Config
    from orca_cli.errors import UnknownModel
    from orca_cli.routing.target import resolve_target

    if not isinstance(cfg, Config):
        return True
    try:
        for name in names:
            resolve_target(name, cfg)
    except UnknownModel:
        return False
    return True


def claude_exports(s: Setup) -> list[tuple[str, str]]:
    """The environment that points Claude Code at the sidecar, in `export` order."""
    env = [("ANTHROPIC_BASE_URL", s.base), ("ANTHROPIC_API_KEY", s.key)]
    if s.claude_model:
        env.append(("ANTHROPIC_MODEL", s.claude_model))
    if s.claude_small_model:
        env.append(("ANTHROPIC_DEFAULT_HAIKU_MODEL", s.claude_small_model))
    return env


def banner_lines(s: Setup) -> list[str]:
    """The start-up lines of `orca serve`: per agent, what points it here."""
    key = "your inbound_token as the API key" if s.key.startswith("$") else \
        "any non-empty API key"
    if s.passthrough:
        key += "; a pass_through_auth channel forwards the agent's key: give it your real one"
    codex = [f"                 {line}" for line in codex_block(s).splitlines() if line]
    return [
        f"Point your agent at it ({key}; `orca init --agent NAME` prints each set-up):",
        "  Claude Code  export " + " ".join(f"{k}={v}" for k, v in claude_exports(s)),
        f"  Codex CLI    export ORCA_API_KEY={s.key}; and in ~/.codex/config.toml:",
        *codex,
        f"  Aider        export OPENAI_API_BASE={s.v1} OPENAI_API_KEY={s.key}; "
        f"{aider_command(s)}",
        "  OpenCode     orca init --agent opencode --write   (an \"orca\" provider in "
        "./opencode.json)",
        "  llm          orca init --agent llm --write        (a model \"orca\" in "
        "extra-openai-models.yaml)",
        f"  SDKs         OpenAI(base_url=\"{s.v1}\"), Anthropic(base_url=\"{s.base}\")",
    ]


def aider_command(s: Setup) -> str:
    """Aider's command line: the main model, and its weak model (commit messages, history
    summaries) on the sessionless router when the config has one."""
    weak = f" --weak-model openai/{s.side_model}" if s.side_model else ""
    return f"aider --model openai/{s.model}{weak}"


def codex_block(s: Setup) -> str:
    """The `~/.codex/config.toml` lines: top-level keys first (TOML wants them before any
    table), then the provider table."""
    return (f'model = "{s.model}"\n'
            'model_provider = "orca"\n'
            "\n"
            "[model_providers.orca]\n"
            'name = "orca"\n'
            f'base_url = "{s.v1}"\n'
            'env_key = "ORCA_API_KEY"\n'
            'wire_api = "responses"\n')


def codex_config_path() -> str:
    home = os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
    return os.path.join(home, "config.toml")


def llm_yaml(s: Setup) -> str:
    return (f"- model_id: orca\n"
            f"  model_name: {s.model}\n"
            f'  api_base: "{s.v1}"\n'
            f"  api_key_name: orca\n")


def llm_models_path() -> str:
    """`extra-openai-models.yaml` in llm's directory: `$LLM_USER_PATH`, else click's app
    directory for `io.datasette.llm` (`~/.config/io.datasette.llm` on Linux)."""
    root = os.environ.get("LLM_USER_PATH")
    if not root:
        import click

        root = click.get_app_dir("io.datasette.llm")
    return os.path.join(root, "extra-openai-models.yaml")


def opencode_json(s: Setup) -> str:
    import json

    name = s.model.split("/", 1)[-1]
    doc = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {"orca": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "orca",
            "options": {"baseURL": s.v1, "apiKey": "{env:ORCA_API_KEY}"},
            "models": {s.model: {"name": f"orca {name}"}},
        }},
        "model": f"orca/{s.model}",
    }
    return json.dumps(doc, indent=2) + "\n"
