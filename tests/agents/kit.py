"""Real agents against a real `orca serve` (SPEC §14.6).

`orca serve` runs as a subprocess (`python -m orca_cli serve --config … --port 0`) with the
example config (sim channels); each agent runs as a subprocess pointed at it, with a throwaway
HOME, every documented telemetry opt-out and a dead proxy for anything not on loopback. The
assertions read orca's traces through the operator CLI (`orca explain ID --json`, `orca
session show ID --json`), found by the `X-Request-Id` each agent is told to send.

The agents live in a cache directory (`$ORCA_AGENTS_DIR`, default `~/.cache/orca-agents`),
installed by `.ci/install-agents`. Outside CI a missing agent skips its tests with that
command; under `CI=true` it fails them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.unavailable import unavailable

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "orca.toml.example"
INSTALL_HINT = ".ci/install-agents (npm and pip into ~/.cache/orca-agents)"
AGENT_TIMEOUT_S = 120.0
_LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")


# Read at import: the suite's autouse fixture scrubs ORCA_* from the environment of each test.
_AGENTS_DIR = os.environ.get("ORCA_AGENTS_DIR") or str(Path.home() / ".cache" / "orca-agents")


def agents_dir() -> Path:
    return Path(_AGENTS_DIR)


def agent_binary(name: str) -> Path:
    """The installed agent's executable, or a skip (a failure under CI=true)."""
    root = agents_dir()
    places = {
        "claude": root / "npm" / "node_modules" / ".bin" / "claude",
        "codex": root / "npm" / "node_modules" / ".bin" / "codex",
        "llm": root / "venv-llm" / "bin" / "llm",
        "aider": root / "venv-aider" / "bin" / "aider",
    }
    path = places[name]
    if path.exists() and os.access(path, os.X_OK):
        return path
    unavailable(f"{name} is not installed at {path}; install the agents with {INSTALL_HINT}")


def agent_env(home: Path, **extra: str) -> dict[str, str]:
    """A scrubbed environment: throwaway HOME, telemetry off, no route off loopback."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_BUG_COMMAND": "1",
        "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    }
    env.update(extra)
    return env


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def run_agent(argv: Sequence[str | Path], env: Mapping[str, str], cwd: Path,
              timeout: float = AGENT_TIMEOUT_S) -> Run:
    proc = subprocess.run([str(a) for a in argv], check=False, env=dict(env), cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    return Run(proc.returncode, proc.stdout, proc.stderr)


@dataclass
class Orca:
    """A running `orca serve` and the operator CLI pointed at it."""

    base: str
    config: Path
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen[bytes]  # its exit status is there once `serving` has stopped it

    def cli(self, *args: str) -> Any:
        proc = subprocess.run([sys.executable, "-m", "orca_cli", *args, "--url", self.base,
                               "--json"], check=False, env=self.env, capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 0, f"orca {' '.join(args)} failed: {proc.stderr}"
        return json.loads(proc.stdout)

    def explain(self, request_id: str) -> dict[str, Any]:
        trace = self.cli("explain", request_id)
        assert isinstance(trace, dict)
        return trace

    def session(self, session_id: str) -> Any:
        return self.cli("session", "show", session_id)

    def requests(self, session_id: str) -> list[dict[str, Any]]:
        """`orca requests --session S --json` (SPEC §15), as a list of traces."""
        rows = self.cli("requests", "--session", session_id)
        if isinstance(rows, dict):
            rows = rows.get("requests", rows.get("data", []))
        traces = []
        for row in rows:
            rid = row.get("request_id") or row.get("id")
            traces.append(self.explain(str(rid)))
        return sorted(traces, key=lambda t: float(t.get("ts", 0)))

    def server_log(self) -> str:
        return self.log.read_text(errors="replace")


def wait_for_base(proc: subprocess.Popen[bytes], log: Path, deadline_s: float) -> str:
    """The URL an `orca serve` subprocess prints once it is listening (its log at `log`)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        found = _LISTENING.search(log.read_text(errors="replace"))
        if found:
            return found.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"orca serve did not start: {log.read_text(errors='replace')}")


@contextlib.contextmanager
def serving(workdir: Path, config_text: str | None = None) -> Iterator[Orca]:
    """`orca serve` on a free port with `config_text` (default: the example config, sim
    channels, memory state), run in `workdir`, stopped on exit."""
    config = workdir / "orca.toml"
    if config_text is None:
        shutil.copyfile(EXAMPLE, config)
    else:
        config.write_text(config_text)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    log = workdir / "orca-serve.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "orca_cli", "serve", "--config",
                                 str(config), "--port", "0"], env=env, cwd=workdir,
                                stdout=sink, stderr=subprocess.STDOUT)
    try:
        base = wait_for_base(proc, log, 30.0)
        yield Orca(base=base, config=config, env=env, log=log, proc=proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def orca(tmp_path: Path) -> Iterator[Orca]:
    """`orca serve` on a free port with the example config (sim channels, memory state)."""
    with serving(tmp_path) as served:
        yield served


def selected(trace: Mapping[str, Any]) -> tuple[str, str, int]:
    sel = trace["selected"]
    return sel["model"], sel["channel"], sel["key_index"]


def assert_one_session(traces: Sequence[Mapping[str, Any]]) -> str:
    """Every turn: one session id, one model, one channel and key; cached tokens from turn 2."""
    assert all(t["status"] == 200 for t in traces), [t["status"] for t in traces]
    sessions = {t["session_id"] for t in traces}
    assert len(sessions) == 1 and None not in sessions, sessions
    assert len({selected(t) for t in traces}) == 1, [selected(t) for t in traces]
    for t in traces[1:]:
        assert t["usage"]["cached_tokens"] > 0, t["usage"]
    assert all(t["tier"]["decision"] == "base" for t in traces)
    return str(sessions.pop())


def kill_processes_under(root: Path) -> list[int]:
    """End the processes whose executable lives under `root`, by pid: the Codex TUI starts a
    detached app-server daemon from `$CODEX_HOME/packages/` that outlives the TUI."""
    killed = []
    prefix = str(root.resolve()) + os.sep
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv0 = (entry / "cmdline").read_bytes().split(b"\0", 1)[0].decode(errors="replace")
        except OSError:
            continue
        if argv0.startswith(prefix):
            try:
                os.kill(int(entry.name), 9)
                killed.append(int(entry.name))
            except ProcessLookupError:
                pass
    return killed


_SCREEN_NOISE = re.compile(
    rb"\x1b\[[0-9;?>=<$]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[78=>]|\s")


_TERMINAL_ANSWERS = ((b"\x1b[6n", b"\x1b[1;1R"), (b"\x1b[c", b"\x1b[?62;22c"))


class Terminal:
    """An interactive agent in a pty: wait for what it draws, type into it."""

    def __init__(self, argv: Sequence[str | Path], env: Mapping[str, str], cwd: Path) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: become the agent
            os.chdir(cwd)
            os.execve(str(argv[0]), [str(a) for a in argv], dict(env))
        self.pid, self.fd = pid, fd
        # A pty starts 0x0; full-screen TUIs draw nothing into that.
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.screen = bytearray()

    def _read(self, wait_s: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], wait_s)
        if ready:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return False
            self.screen.extend(chunk)
            for query, answer in _TERMINAL_ANSWERS:  # a TUI waits for its terminal's replies
                if query in chunk:
                    os.write(self.fd, answer)
        return True

    def shows(self, text: bytes) -> bool:
        """Whether `text` was written: as is (an escape sequence), or as drawn with escapes and
        blanks ignored (TUIs draw spaces as cursor moves)."""
        raw = bytes(self.screen)
        return text in raw or _SCREEN_NOISE.sub(b"", text) in _SCREEN_NOISE.sub(b"", raw)

    def wait_for(self, *texts: bytes, deadline: float) -> bytes:
        """The first of `texts` the agent writes (an AssertionError at the deadline)."""
        while True:
            for text in texts:
                if self.shows(text):
                    return text
            if time.monotonic() > deadline or not self._read(0.1):
                raise AssertionError(f"the agent never drew {texts!r}: "
                                     f"{bytes(self.screen[-2000:])!r}")

    def pump(self, seconds: float) -> None:
        """Keep reading (the agent blocks when its pty buffer fills) for up to `seconds`."""
        self._read(seconds)

    def type(self, text: bytes) -> None:
        os.write(self.fd, text)

    def close(self) -> None:
        os.kill(self.pid, 9)
        os.waitpid(self.pid, 0)
        os.close(self.fd)
