"""Drive an interactive agent (Claude Code or the Codex TUI) in a pty for one prompt.

Title/side requests appear only in interactive sessions (tests/agents/CAPTURES.md). Usage,
inside ``unshare -n`` with capture_server.py listening on PORT:
``python capture_interactive.py claude|codex BIN PORT NONESSENTIAL_OFF(0|1) SECONDS``
"""

from __future__ import annotations

import json
import os
import pty
import select
import sys
import tempfile
import time
from pathlib import Path

from tests.agents.kit import kill_processes_under

KEY = "dummy-capture-key-0123456789"
PROMPT = b"say hi to the parser module"


def _claude_env(home: str, work: str, port: str, off: bool) -> dict[str, str]:
    with open(os.path.join(home, ".claude.json"), "w") as fh:
        json.dump({"hasCompletedOnboarding": True, "theme": "dark",
                   "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
                   "projects": {work: {"hasTrustDialogAccepted": True,
                                       "hasCompletedProjectOnboarding": True}}}, fh)
    env = {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}", "ANTHROPIC_API_KEY": KEY}
    if off:
        env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    return env


def _codex_env(home: str, work: str, port: str) -> dict[str, str]:
    with open(os.path.join(home, "config.toml"), "w") as fh:
        fh.write(f'model = "orca/coding"\nmodel_provider = "orca"\n\n'
                 f'[model_providers.orca]\nname = "orca"\n'
                 f'base_url = "http://127.0.0.1:{port}/v1"\nenv_key = "ORCA_KEY"\n'
                 f'wire_api = "responses"\n\n[analytics]\nenabled = false\n\n'
                 f'[projects."{work}"]\ntrust_level = "trusted"\n')
    return {"CODEX_HOME": home, "ORCA_KEY": KEY}


def main() -> None:
    agent, binary, port = sys.argv[1], sys.argv[2], sys.argv[3]
    off, seconds = sys.argv[4] == "1", float(sys.argv[5])
    home, work = tempfile.mkdtemp(), tempfile.mkdtemp()
    env = {"PATH": os.environ["PATH"], "HOME": home, "TERM": "xterm-256color",
           "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
           "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
           "NO_PROXY": "127.0.0.1,localhost"}
    env.update(_claude_env(home, work, port, off) if agent == "claude"
               else _codex_env(home, work, port))
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(work)
        os.execve(binary, [binary], env)
    out = b""
    start = time.monotonic()
    sent = 0
    while time.monotonic() - start < seconds:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                out += os.read(fd, 65536)
            except OSError:
                break
        elapsed = time.monotonic() - start
        if sent == 0 and elapsed > 4:   # a capture script, not a test: the TUI has settled
            os.write(fd, PROMPT)
            sent = 1
        elif sent == 1 and elapsed > 5:
            os.write(fd, b"\r")
            sent = 2
    os.kill(pid, 9)
    kill_processes_under(Path(home))   # the Codex TUI's detached app-server daemon
    sys.stderr.write(out.decode(errors="replace")[-1500:])


if __name__ == "__main__":
    main()
