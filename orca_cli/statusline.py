"""`orca statusline [--session S] [--router R] [--url U] [--token T]` (SPEC §15).

One line for an agent's status bar, e.g. Claude Code's `statusLine` command, which runs it
after each assistant message with a JSON document on stdin (its `session_id`, `model`,
`workspace`, `cost`, ...):

    orca base:default · deepseek-chat · $0.0016 · cache 87% warm 4:12 · streak 0/2 · strikes 0/2 · 1 esc left · share 12%/20%

It never fails the agent: when no sidecar answers, or the session is unknown yet, it prints a
short line and exits 0. It runs as its own process on every update, so the entry point
dispatches here before the CLI framework is imported: this module uses the standard library
only, and speaks HTTP/1.0 over a plain socket to the sidecar's `GET /orca/v1/status`.

Which sidecar: `--url`, else `$ORCA_URL`, else the running sidecars' records. With several
running, the one serving the project's config (found as `orca` finds it, from the workspace
Claude Code names) is asked first, then the others, each with a short timeout, and the first
that knows the session answers (`serving_order`; the operator commands use it too).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlsplit

__all__ = ["error_message", "format_status", "main", "project_configs"]

TIMEOUT_S = 0.5
PROBE_TIMEOUT_S = 0.2  # each of several running sidecars, asked in turn
NOT_RUNNING = "orca: not running"
_USAGE = ("usage: orca statusline [--session S] [--router R] [--url URL] [--token T] "
          "[--json]\n"
          "Reads Claude Code's status-line JSON on stdin when --session is not given; --json "
          "prints the sidecar's status document instead of the line.\n")


_FLAGS = {"--session": "session", "-s": "session", "--router": "router", "-r": "router",
          "--url": "url", "--token": "token"}


def _args(argv: Sequence[str]) -> dict[str, str] | None:
    """`--name value` or `--name=value`; None asks for the usage text."""
    out: dict[str, str] = {}
    it = iter(argv)
    for arg in it:
        if arg in ("-h", "--help"):
            return None
        if arg == "--json":
            out["json"] = "1"
            continue
        name, eq, value = arg.partition("=")
        if name in _FLAGS:
            out[_FLAGS[name]] = value if eq else next(it, "")
    return out


def _stdin_doc() -> dict[str, Any]:
    """Claude Code's status JSON (`session_id`, `workspace`, ...); {} when there is none."""
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return {}
        doc = json.loads(sys.stdin.read() or "{}")
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _workspaces(doc: Mapping[str, Any]) -> list[str]:
    """The directories whose config is the project's: those Claude Code names, then ours."""
    ws = doc.get("workspace")
    ws = ws if isinstance(ws, dict) else {}
    dirs = [_text(ws.get("current_dir")), _text(ws.get("project_dir")), _text(doc.get("cwd"))]
    out: list[str] = []
    for d in [*dirs, os.getcwd()]:
        if d is not None and d not in out:
            out.append(d)
    return out


def project_configs(dirs: Sequence[str], environ: Mapping[str, str] | None = None) -> list[str]:
    """The config `orca` would load in each directory, as real paths, in order, none twice.

    The order of `orca_cli/config/discover.py` (`$ORCA_CONFIG`, `./orca.toml`,
    `$XDG_CONFIG_HOME/orca/orca.toml`), written again here because importing the config
    package costs this process about 90 ms; a test holds the two to the same answers."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CONFIG_HOME", "")
    if not xdg or not os.path.isabs(xdg):
        xdg = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    home_cfg = os.path.join(xdg, "orca", "orca.toml")
    out: list[str] = []
    for d in dirs:
        named = env.get("ORCA_CONFIG")
        local = os.path.join(d, "orca.toml")
        found = (os.path.join(os.getcwd(), named) if named else local if os.path.isfile(local)
                 else home_cfg if os.path.isfile(home_cfg) else None)
        if found is not None and os.path.realpath(found) not in out:
            out.append(os.path.realpath(found))
    return out


def _get(url: str, path: str, token: str | None,
         timeout_s: float = TIMEOUT_S) -> tuple[int, Any]:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or 80
    head = (f"GET {parts.path.rstrip('/')}{path} HTTP/1.0\r\nHost: {parts.netloc}\r\n"
            f"Accept: application/json\r\n")
    if token:
        head += f"Authorization: Bearer {token}\r\n"
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
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
    if share.get("warmup") and share.get("warmup_inverted"):  # after a state loss (SPEC §6.4)
        parts.append(f"strong denied: inverted warm-up {share.get('total')}/"
                     f"{share.get('warmup_requests')}")
    elif share.get("warmup"):
        parts.append(f"share warm-up {share.get('total')}/{share.get('warmup_requests')}")
    else:
        parts.append(f"share {float(share.get('ratio') or 0):.0%}/"
                     f"{float(share.get('cap') or 0):.0%}")
    return " · ".join(parts)


def _line(opts: Mapping[str, str]) -> str:
    from orca_cli.proxy.token import find_sidecar, running_sidecars, serving_order

    stdin = {} if opts.get("session") else _stdin_doc()
    session = opts.get("session") or _text(stdin.get("session_id"))
    if not session:
        return "orca: no session yet"
    query = f"?session={quote(session, safe='')}"
    if opts.get("router"):
        query += f"&router={quote(opts['router'], safe='')}"
    given = opts.get("token") or os.environ.get("ORCA_ADMIN_TOKEN") or None  # as the commands
    recs = [] if opts.get("url") or os.environ.get("ORCA_URL") else running_sidecars()
    render = _as_json if opts.get("json") else format_status
    if len(recs) > 1:
        order = serving_order(recs, project_configs(_workspaces(stdin)))
        return _first_that_knows([(r.url, given or r.token) for r in order],
                                 "/orca/v1/status" + query, render=render)
    url, token, _ = find_sidecar(opts.get("url"), given)
    if url is None:
        url = "http://127.0.0.1:8787"  # the default port; the config is not read here
    return _first_that_knows([(url, token)], "/orca/v1/status" + query, TIMEOUT_S,
                             render=render)


def error_message(doc: Any) -> str:
    """An admin error's message (`{"error": {"message": ...}}`), "" for anything else."""
    err = doc.get("error") if isinstance(doc, dict) else None
    msg = err.get("message") if isinstance(err, dict) else None
    return msg if isinstance(msg, str) else ""


def _as_json(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True)


def _first_that_knows(sidecars: Sequence[tuple[str, str | None]], path: str,
                      timeout_s: float = PROBE_TIMEOUT_S, *,
                      render: Any = format_status) -> str:
    """The line (or, `render`ed, the document) from the first sidecar that knows the
    session; else why none did."""
    line = NOT_RUNNING
    for url, token in sidecars:
        try:
            status, doc = _get(url, path, token, timeout_s)
        except (OSError, ValueError, IndexError):
            continue
        if status == 200 and isinstance(doc, dict):
            return str(render(doc))
        if status == 404:
            line = "orca: no requests from this session yet"
        elif status == 400 and error_message(doc):  # e.g. a session start several share
            return f"orca: {error_message(doc)}"
        elif line == NOT_RUNNING:
            line = f"orca: the sidecar answered {status}"
    return line


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
