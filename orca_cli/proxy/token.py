"""The admin token and the running sidecars' records (SPEC §1.1a, §15, §20).

`orca serve` writes a fresh token per start to `$XDG_STATE_HOME/orca/admin.token` (default
`~/.local/state/orca/admin.token`), mode 0600, created atomically so no other user can read it
even for a moment; a stale file from a previous run stops working when the sidecar restarts.

Beside it, each running sidecar keeps a record keyed by its port,
`$XDG_STATE_HOME/orca/sidecars/<port>.json` (mode 0600): its URL, process id, config file
and token. A second `orca serve` on another port therefore no longer leaves the operator
CLI with the wrong token: the CLI finds the sidecar from `--url`, `$ORCA_URL`, these records
(only those whose process is alive), then the config, in that order (`find_sidecar`).

This module is imported by `orca statusline`, whose whole process must stay fast: stdlib
only, and nothing heavy at import.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "SidecarRecord",
    "admin_token_path",
    "find_sidecar",
    "read_admin_token",
    "record_config",
    "remove_sidecar_record",
    "running_sidecars",
    "serving_order",
    "sidecar_record",
    "sidecars_dir",
    "write_admin_token",
    "write_sidecar_record",
]


def _state_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME", str(Path.home())))
                                             / ".local" / "state")
    return Path(base) / "orca"


def admin_token_path(environ: Mapping[str, str] | None = None) -> Path:
    return _state_dir(environ) / "admin.token"


def sidecars_dir(environ: Mapping[str, str] | None = None) -> Path:
    return _state_dir(environ) / "sidecars"


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def write_admin_token(path: Path | None = None) -> str:
    import secrets

    token = secrets.token_urlsafe(32)
    _write_private(path or admin_token_path(), token.encode() + b"\n")
    return token


def read_admin_token(path: Path | None = None) -> str | None:
    path = path or admin_token_path()
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


class SidecarRecord(NamedTuple):
    """One running sidecar (a NamedTuple: `dataclasses` costs `orca statusline` 5 ms)."""

    url: str
    port: int
    pid: int
    token: str
    config: str | None = None
    started_at: float = 0.0


def write_sidecar_record(rec: SidecarRecord, environ: Mapping[str, str] | None = None) -> Path:
    path = sidecars_dir(environ) / f"{rec.port}.json"
    doc = {"url": rec.url, "port": rec.port, "pid": rec.pid, "token": rec.token,
           "config": rec.config, "started_at": rec.started_at}
    _write_private(path, json.dumps(doc).encode())
    return path


def remove_sidecar_record(port: int, pid: int | None = None,
                          environ: Mapping[str, str] | None = None) -> None:
    """Remove the port's record, only if it still names this process (a later sidecar on
    the same port keeps its own)."""
    path = sidecars_dir(environ) / f"{port}.json"
    rec = _read_record(path)
    if rec is not None and (pid is None or rec.pid == pid):
        try:
            path.unlink()
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def _read_record(path: Path) -> SidecarRecord | None:
    try:
        doc: Any = json.loads(path.read_text())
        return SidecarRecord(url=str(doc["url"]), port=int(doc["port"]), pid=int(doc["pid"]),
                             token=str(doc["token"]), config=doc.get("config"),
                             started_at=float(doc.get("started_at") or 0.0))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def running_sidecars(environ: Mapping[str, str] | None = None) -> list[SidecarRecord]:
    """The records whose process is alive, most recently started first."""
    try:
        names = os.listdir(sidecars_dir(environ))
    except OSError:
        return []
    out = []
    for name in names:
        if name.endswith(".json"):
            rec = _read_record(sidecars_dir(environ) / name)
            if rec is not None and _alive(rec.pid):
                out.append(rec)
    out.sort(key=lambda r: -r.started_at)
    return out


def record_config(rec: SidecarRecord) -> str | None:
    """The real path of the config a sidecar serves. Records name it absolutely; an older
    record's relative path is read against that process's directory (Linux `/proc`)."""
    if not rec.config:
        return None
    if os.path.isabs(rec.config):
        return os.path.realpath(rec.config)
    try:
        return os.path.realpath(os.path.join(os.readlink(f"/proc/{rec.pid}/cwd"), rec.config))
    except OSError:
        return None


def serving_order(recs: Sequence[SidecarRecord], configs: Sequence[str]) -> list[SidecarRecord]:
    """The running sidecars to ask, best first: those serving one of `configs` (in the
    order of `configs`), then the others; newest first within each (`recs`' order)."""
    rank = {path: i for i, path in enumerate(configs)}

    def key(rec: SidecarRecord) -> int:
        path = record_config(rec)
        return rank.get(path, len(rank)) if path is not None else len(rank)

    return sorted(recs, key=key)


def find_sidecar(url: str | None, token: str | None, *, environ: Mapping[str, str] | None = None,
                 config_port: int | None = None) -> tuple[str | None, str | None, str]:
    """(url, token, how it was found). The url is None when only the config can tell (the
    caller then uses its [server] host and port). Order: `url`, `$ORCA_URL`, the running
    sidecars' records (the one on the config's port first, else the newest), the config."""
    env = os.environ if environ is None else environ
    recs = running_sidecars(env)
    by_url = {r.url.rstrip("/"): r for r in recs}

    def token_for(u: str) -> str | None:
        if token:
            return token
        rec = by_url.get(u.rstrip("/"))
        return rec.token if rec is not None else read_admin_token(admin_token_path(env))

    if url:
        return url.rstrip("/"), token_for(url), "--url"
    if env.get("ORCA_URL"):
        u = env["ORCA_URL"].rstrip("/")
        return u, token_for(u), "$ORCA_URL"
    if recs:
        pick = next((r for r in recs if r.port == config_port), recs[0])
        more = f", one of {len(recs)} running" if len(recs) > 1 else ""
        return pick.url, token or pick.token, f"the sidecar started with pid {pick.pid}{more}"
    return None, token or read_admin_token(admin_token_path(env)), "the config"


@contextlib.contextmanager
def sidecar_record(host: str, port: int, token: str, config: str | None) -> Iterator[None]:
    """This process's record as a running sidecar (URL, pid, token), removed on exit."""
    near = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host in ("::", "[::]") else host
    shown = f"[{near.strip('[]')}]" if ":" in near else near
    write_sidecar_record(SidecarRecord(url=f"http://{shown}:{port}", port=port, pid=os.getpid(),
                                       token=token, config=config, started_at=time.time()))
    try:
        yield
    finally:
        remove_sidecar_record(port, os.getpid())
