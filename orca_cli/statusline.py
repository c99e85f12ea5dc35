"""`orca statusline [--session S] [--router R] [--url U] [--token T]` (SPEC §15).

One line for an agent's status bar, e.g. Claude Code's `statusLine` command, which runs it
after each assistant message with a JSON document on stdin (its `session_id`, `model`,
`workspace`, `cost`, ...):

    orca base:default · deepseek-chat · $0.0016 · cache 87% warm 4:12 · streak 0/2 · strikes 0/2 · 1 esc left · share 12%/20%

It never fails the agent: when no sidecar answers, or the session is unknown yet, it prints a
short line and exits 0. It runs as its own process on every update, so the entry point
dispatches here before the CLI framework is imported: this module uses the standard library
only, and speaks HTTP/1.0 over a plain socket to the sidecar's `GET /orca/v1/status`.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlsplit

__all__ = ["format_status", "main"]

TIMEOUT_S = 0.5
NOT_RUNNING = "orca: not running"
_USAGE = ("usage: orca statusline [--session S] [--router R] [--url URL] [--token T]\n"
          "Reads Claude Code's status-line JSON on stdin when --session is not given.\n")


_FLAGS = {"--session": "session", "-s": "session", "--router": "router", "-r": "router",
          "--url": "url", "--token": "token"}


def _args(argv: Sequence[str]) -> dict[str, str] | None:
    """`--name value` or `--name=value`; None asks for the usage text."""
    out: dict[str, str] = {}
    it = iter(argv)
    for arg in it:
        if arg in ("-h", "--help"):
            return None
        name, eq, value = arg.partition("=")
        if name in _FLAGS:
            out[_FLAGS[name]] = value if eq else next(it, "")
    return out


def _stdin_session() -> str | None:
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return None
        doc = json.loads(sys.stdin.read() or "{}")
    except (OSError, ValueError):
        return None
    sid = doc.get("session_id") if isinstance(doc, dict) else None
    return sid if isinstance(sid, str) and sid else None


def _get(url: str, path: str, token: str | None) -> tuple[int, Any]:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or 80
    head = (f"GET {parts.path.rstrip('/')}{path} HTTP/1.0\r\nHost: {parts.netloc}\r\n"
            f"Accept: application/json\r\n")
    if token:
        head += f"Authorization: Bearer {token}\r\n"
    with socket.create_connection((host, port), timeout=TIMEOUT_S) as sock:
        sock.sendall((head + "\r\n").encode("latin-1"))
        chunks = []
        while True:
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
    raw = b"".join(chunks)
    header, _, body = raw.partition(b"\r\n\r\n")
    status = int(header.split(b" ", 2)[1])
    return status, json.loads(body or b"null")


def _clock(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)) or seconds <= 0:
        return "cold"
    s = int(seconds)
    return f"warm {s // 60}:{s % 60:02d}"


def format_status(doc: Mapping[str, Any]) -> str:
    """The one line, from `GET /orca/v1/status`."""
    fig = doc.get("figures") or {}
    share = doc.get("share") or {}
    cached = fig.get("cached_share")
    cache = f"cache {'-' if cached is None else f'{cached:.0%}'} {_clock(doc.get('cache_clock_s'))}"
    parts = [f"orca {doc.get('tier')}:{doc.get('reason')}", str(doc.get("model") or "-"),
             f"${float(fig.get('cost_usd') or 0):.4f}",
             cache,
             f"streak {doc.get('difficulty_streak')}/{doc.get('streak_needed')}",
             f"strikes {doc.get('strikes')}/{doc.get('strikes_needed')}",
             f"{doc.get('escalations_left')} esc left"]
    if share.get("warmup"):
        parts.append(f"share warm-up {share.get('total')}/{share.get('warmup_requests')}")
    else:
        parts.append(f"share {float(share.get('ratio') or 0):.0%}/"
                     f"{float(share.get('cap') or 0):.0%}")
    return " · ".join(parts)


def _line(opts: Mapping[str, str]) -> str:
    from orca_cli.proxy.token import find_sidecar

    session = opts.get("session") or _stdin_session()
    url, token, _ = find_sidecar(opts.get("url"), opts.get("token"))
    if url is None:
        url = "http://127.0.0.1:8787"  # the default port; the config is not read here
    if not session:
        return "orca: no session yet"
    query = f"?session={quote(session, safe='')}"
    if opts.get("router"):
        query += f"&router={quote(opts['router'], safe='')}"
    try:
        status, doc = _get(url, "/orca/v1/status" + query, token)
    except (OSError, ValueError, IndexError):
        return NOT_RUNNING
    if status == 404:
        return "orca: no requests from this session yet"
    if status != 200 or not isinstance(doc, dict):
        return f"orca: the sidecar answered {status}"
    return format_status(doc)


def main(argv: Sequence[str] | None = None) -> int:
    opts = _args(sys.argv[1:] if argv is None else argv)
    if opts is None:
        sys.stdout.write(_USAGE)
        return 0
    try:
        line = _line(opts)
    except Exception:  # noqa: BLE001 - a status bar never shows a traceback
        line = NOT_RUNNING
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    os._exit(main())
