"""Drive interactive Claude Code in a pty for one prompt (title/side requests appear there).

Usage (inside ``unshare -n`` with capture_server.py listening on PORT):
``python capture_interactive.py CLAUDE_BIN PORT NONESSENTIAL_OFF(0|1) SECONDS``
"""

from __future__ import annotations

import json
import os
import pty
import select
import sys
import tempfile
import time

KEY = "dummy-capture-key-0123456789"


def main() -> None:
    binary, port, off, seconds = sys.argv[1], sys.argv[2], sys.argv[3] == "1", float(sys.argv[4])
    home = tempfile.mkdtemp()
    work = tempfile.mkdtemp()
    with open(os.path.join(home, ".claude.json"), "w") as fh:
        json.dump({"hasCompletedOnboarding": True, "theme": "dark",
                   "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
                   "projects": {work: {"hasTrustDialogAccepted": True,
                                       "hasCompletedProjectOnboarding": True}}}, fh)
    env = dict(os.environ, HOME=home, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}",
               ANTHROPIC_API_KEY=KEY, DISABLE_TELEMETRY="1", DISABLE_ERROR_REPORTING="1",
               DISABLE_AUTOUPDATER="1", TERM="xterm-256color",
               HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9",
               NO_PROXY="127.0.0.1,localhost")
    if off:
        env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(work)
        os.execvpe(binary, [binary], env)
    out = b""
    deadline = time.monotonic() + seconds
    sent = 0
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                out += os.read(fd, 65536)
            except OSError:
                break
        elapsed = seconds - (deadline - time.monotonic())
        if sent == 0 and elapsed > 4:
            os.write(fd, b"say hi to the parser module")
            sent = 1
        elif sent == 1 and elapsed > 5:
            os.write(fd, b"\r")
            sent = 2
    os.kill(pid, 9)
    sys.stderr.write(out.decode(errors="replace")[-1500:])


if __name__ == "__main__":
    main()
