"""The admin token (SPEC §1.1a): written by `orca serve`, read by the CLI.

`$XDG_STATE_HOME/orca/admin.token` (default `~/.local/state/orca/admin.token`), mode 0600,
created atomically so no other user can read it even for a moment. A fresh token per start:
a stale file from a previous run stops working when the sidecar restarts.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

__all__ = ["admin_token_path", "read_admin_token", "write_admin_token"]


def admin_token_path(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".local" / "state")
    return Path(base) / "orca" / "admin.token"


def write_admin_token(path: Path | None = None) -> str:
    path = path or admin_token_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(32)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, token.encode() + b"\n")
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return token


def read_admin_token(path: Path | None = None) -> str | None:
    path = path or admin_token_path()
    try:
        return path.read_text().strip() or None
    except OSError:
        return None
