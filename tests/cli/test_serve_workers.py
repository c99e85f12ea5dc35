"""`orca serve --workers N` (SPEC §18): N processes on one port sharing sessions through Redis,
one admin token, a graceful stop; refused on the memory store. Real processes, a real Redis,
real sockets (one new connection per request, so the kernel spreads them over the workers).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from orca_cli.proxy.token import sidecars_dir
from orca_cli.trace.log import short_id
from tests.agents.kit import wait_for_base
from tests.state.conftest import REDIS_URL, delete_prefix

REPO = Path(__file__).resolve().parents[2]
CONFIG = """
[state]
backend = "redis"
redis_url = "{url}"
key_prefix = "{prefix}"

[[channels]]
name = "sim-cheap"
type = "sim"
api = ["openai", "anthropic"]
keys = ["sim-key-1"]
models = ["small"]

[[channels]]
name = "sim-frontier"
type = "sim"
api = ["openai", "anthropic"]
keys = ["sim-key-2"]
models = ["big"]

[models.big]
input = 5.0

[routers.coding]
strategy = "cheapest"
allowed_models = ["small", "big"]
strong_pool = ["big"]
[routers.coding.escalation]
mode = "auto"
share_cap = 1.0  # one session asking strong is the whole traffic here

[workspace]
share_cap = 1.0
"""


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


@pytest.fixture
def prefix() -> Iterator[str]:
    name = f"orca-workers-{uuid.uuid4().hex[:10]}"
    yield name
    delete_prefix(REDIS_URL, name)


def _start(tmp_path: Path, prefix: str, workers: int) -> tuple[subprocess.Popen[bytes], str,
                                                                  Path]:
    config = tmp_path / "orca.toml"
    config.write_text(CONFIG.format(url=REDIS_URL, prefix=prefix))
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "orca_cli", "serve", "--config",
                                 str(config), "--port", "0", "--workers", str(workers)],
                                env=_env(), cwd=tmp_path, stdout=sink, stderr=subprocess.STDOUT)
    try:
        # The banner prints once a worker answers (`orca serve --workers`).
        return proc, wait_for_base(proc, log, 30.0), log
    except AssertionError:
        proc.kill()
        raise


def _pid(base: str) -> int:
    """The pid of the worker that answered one request on a new connection."""
    r = httpx.get(base + "/healthz", headers={"connection": "close"}, timeout=5)
    assert r.status_code == 200
    return int(r.json()["pid"])


def _stop(proc: subprocess.Popen[bytes], log: Path) -> int:
    """SIGTERM, and its exit status; a sidecar that outlives 20 s is killed with its workers
    (so no process or Popen object is left to the next test) and the test fails, saying
    which of its processes were still there, in which state, and what the log said."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        left = subprocess.run(["ps", "-o", "pid=,stat=,etimes=,args=", "--pid", str(proc.pid),
                               "--ppid", str(proc.pid)], capture_output=True, text=True,
                              check=False).stdout
        for pid in _children(proc.pid):
            os.kill(pid, signal.SIGKILL)
        proc.kill()
        proc.wait()
        raise AssertionError(f"orca serve --workers outlived SIGTERM by 20 s; still running:\n"
                             f"{left}\nits log:\n{log.read_text()[-4000:]}") from None


def _children(pid: int) -> set[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True,
                         text=True, check=False).stdout
    return {int(p) for p in out.split()}


def test_workers_need_the_redis_store(tmp_path: Path) -> None:
    config = tmp_path / "orca.toml"
    config.write_text("[[channels]]" + CONFIG.split("[[channels]]", 1)[1])  # no [state]: memory
    proc = subprocess.run([sys.executable, "-m", "orca_cli", "serve", "--config", str(config),
                           "--port", "0", "--workers", "2"], env=_env(), cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "--workers 2 needs the Redis store" in proc.stderr
    assert "listening" not in proc.stderr


def test_two_workers_share_one_port_and_every_session(tmp_path: Path, prefix: str) -> None:
    proc, base, log = _start(tmp_path, prefix, 2)
    try:
        workers = _children(proc.pid)
        assert len(workers) == 2, workers
        # New connections land on both workers (each binds the port with SO_REUSEPORT).
        seen = {_pid(base) for _ in range(40)}
        assert seen == workers, (seen, workers)
        # A session escalated on one worker is strong on whichever worker serves it next.
        body = {"model": "orca/coding", "messages": [{"role": "user", "content": "fix it"}]}
        first = httpx.post(base + "/v1/chat/completions", json=body, timeout=10, headers={
            "x-orca-session": "shared-1", "x-orcarouter-tier": "strong", "connection": "close"})
        assert first.status_code == 200, first.text
        assert first.headers["x-orca-session-tier"].startswith("strong")
        tiers = set()
        for i in range(20):
            turn = {**body, "messages": [*body["messages"],
                                         {"role": "assistant", "content": "done"},
                                         {"role": "user", "content": f"and step {i}"}]}
            r = httpx.post(base + "/v1/chat/completions", json=turn, timeout=10, headers={
                "x-orca-session": "shared-1", "connection": "close"})
            assert r.status_code == 200, r.text
            tiers.add((r.headers["x-orca-session-tier"], r.headers["x-orca-model"]))
        assert {(t.split(";")[0], m) for t, m in tiers} == {("strong", "big")}, tiers
        # One admin token for every worker: the operator CLI reads the session from any.
        shown = subprocess.run([sys.executable, "-m", "orca_cli", "session", "show", "shared-1",
                                "--url", base, "--json"], env=_env(), cwd=tmp_path,
                               capture_output=True, text=True, timeout=60, check=False)
        assert shown.returncode == 0, shown.stderr
        assert '"strong"' in shown.stdout
        # A worker that dies is started again; the port keeps answering meanwhile.
        dead = min(workers)
        os.kill(dead, signal.SIGKILL)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and len(_children(proc.pid) - {dead}) < 2:
            assert _pid(base) != dead or _alive(dead)
            time.sleep(0.1)
        restarted = _children(proc.pid) - {dead}
        assert len(restarted) == 2, restarted
        workers |= restarted
    finally:
        code = _stop(proc, log)
    assert code == 0, log.read_text()
    assert not any(_alive(p) for p in workers), "a worker outlived the sidecar"
    text = log.read_text()
    assert "2 workers" in text and "Traceback" not in text, text


def test_sigterm_stops_every_worker_gracefully_and_removes_the_record(tmp_path: Path,
                                                                      prefix: str) -> None:
    """SIGTERM, what the parent sends each worker on a stop, ends a worker's graceful stop
    with exit status 0 (not killed by uvicorn's re-raised signal); SIGTERM to the parent
    stops every worker, writes the last request's log line, removes the sidecar record and
    exits 0."""
    proc, base, log = _start(tmp_path, prefix, 2)
    try:
        record = sidecars_dir() / f"{urlsplit(base).port}.json"
        assert json.loads(record.read_text())["pid"] == proc.pid
        workers = _children(proc.pid)
        seen: set[int] = set()
        deadline = time.monotonic() + 15
        while seen != workers and time.monotonic() < deadline:  # both serving, not starting
            seen.add(_pid(base))
        assert seen == workers, (seen, workers)
        one = min(workers)
        os.kill(one, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and f"(pid {one}) exited" not in log.read_text():
            time.sleep(0.05)
        assert f"(pid {one}) exited with 0 " in log.read_text(), log.read_text()
        body = {"model": "orca/coding", "messages": [{"role": "user", "content": "hi"}]}
        r = httpx.post(base + "/v1/chat/completions", json=body, timeout=10,
                       headers={"connection": "close"})
        assert r.status_code == 200, r.text
        rid = r.headers["x-orca-request-id"]
        workers = _children(proc.pid)
    finally:
        code = _stop(proc, log)
    text = log.read_text()
    assert code == 0, text
    assert not record.exists(), "the sidecar record outlived orca serve"
    assert not any(_alive(p) for p in workers), "a worker outlived the sidecar"
    assert len([x for x in text.splitlines() if short_id(rid) in x]) == 1, text
    assert "Traceback" not in text, text


def test_sigterm_while_the_workers_start_stops_at_once(tmp_path: Path, prefix: str) -> None:
    """A stop asked for before any worker answers is not held until the banner's wait for
    one (30 s) runs out, and still removes the record."""
    config = tmp_path / "orca.toml"
    config.write_text(CONFIG.format(url=REDIS_URL, prefix=prefix))
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "orca_cli", "serve", "--config",
                                 str(config), "--port", "0", "--workers", "2"],
                                env=_env(), cwd=tmp_path, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)  # its workers go with it on a failure
    try:
        deadline = time.monotonic() + 30
        while not list(sidecars_dir().glob("*.json")) and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.01)
        [record] = sidecars_dir().glob("*.json")
        assert "listening" not in log.read_text()  # no worker answers yet
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=20)
    finally:
        left = subprocess.run(["ps", "-o", "pid=", "-s", str(proc.pid)], capture_output=True,
                              text=True, check=False).stdout.split()
        if left:  # a worker forked after the stop, or the whole sidecar still running
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert code == 0, log.read_text()
    assert not left, f"processes outlived the sidecar: {left}"
    assert not record.exists(), "the sidecar record outlived orca serve"
    assert "no worker accepts connections" not in log.read_text()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/status").exists() and "zombie" not in Path(
        f"/proc/{pid}/status").read_text()


def test_a_stop_right_after_a_fork_still_reaches_the_new_worker(tmp_path: Path) -> None:
    """A SIGTERM that reaches the parent between a worker's fork and its registration (seen
    when a stop followed a worker's restart on a busy machine) must still stop that worker:
    before, the parent waited for it forever. The stop signals are blocked across the fork."""
    script = tmp_path / "race.py"
    script.write_text(
        "import os, signal, sys, time\n"
        "from orca_cli.proxy import workers\n"
        "real_fork = os.fork\n"
        "def fork():\n"
        "    pid = real_fork()\n"
        "    if pid:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)  # the stop, before registration\n"
        "    return pid\n"
        "os.fork = fork\n"
        "sys.exit(workers.supervise(1, lambda i: time.sleep(60)))\n")
    proc = subprocess.run([sys.executable, str(script)], env=_env(), cwd=tmp_path,
                          capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr


def test_serve_says_what_config_check_finds_before_the_banner(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`orca config check` refuses an escalation that cannot escalate; `orca serve` serves
    such a config as its routers allow, but says so on stderr, never silently."""
    from orca_cli.cli.serve import _say_config_issues
    from orca_cli.config.load import loads

    cfg = loads('[[channels]]\nname = "s"\ntype = "sim"\nmodels = ["a"]\n\n'
                '[routers.r]\nallowed_models = ["a"]\n', source="c.toml", environ={})
    _say_config_issues(cfg)
    err = capsys.readouterr().err
    assert "orca: config error (served anyway): c.toml: routers.r.escalation.pool" in err
    assert "orca: warning: c.toml: models.a: has no [models] table" in err


def test_a_stop_while_a_worker_starts_waits_for_its_server(tmp_path: Path, prefix: str) -> None:
    """A SIGTERM that reaches a worker while it starts is taken by the server's own handler,
    as a graceful stop, once that handler is in place. Before, it raised SystemExit wherever
    start-up stood; code that swallows it there (a finalizer does: "Exception ignored in")
    left the worker serving, stopped by nobody, and the parent waited for it forever. Here
    start-up holds such a region for 3 s, and the stop is sent inside it."""
    config = tmp_path / "orca.toml"
    config.write_text(CONFIG.format(url=REDIS_URL, prefix=prefix))
    marks = tmp_path / "starting"
    marks.mkdir()
    script = tmp_path / "slow_start.py"
    script.write_text(
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "from orca_cli import compose\n"
        "real = compose.create_app\n"
        "def create_app(*args, **kwargs):\n"
        f"    Path({str(marks)!r}, str(os.getpid())).write_text('')\n"
        "    end = time.monotonic() + 3\n"
        "    while time.monotonic() < end:\n"
        "        try:\n"
        "            time.sleep(0.05)\n"
        "        except BaseException:  # start-up code that swallows what is raised in it\n"
        "            pass\n"
        "    return real(*args, **kwargs)\n"
        "compose.create_app = create_app\n"
        "from orca_cli.cli import main\n"
        f"sys.argv = ['orca', 'serve', '--config', {str(config)!r}, '--port', '0',\n"
        "            '--workers', '2']\n"
        "main()\n")
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, str(script)], env=_env(), cwd=tmp_path,
                                stdout=sink, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while len(list(marks.iterdir())) < 2 and time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        time.sleep(0.05)
    assert len(list(marks.iterdir())) == 2, log.read_text()
    assert _stop(proc, log) == 0, log.read_text()
    assert "listening on" not in log.read_text()  # it stopped before any worker answered
