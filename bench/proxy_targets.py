"""The processes the proxy benchmark runs and measures (SPEC §12 method).

* the fake upstream (`bench/fake_upstream.py`), pinned with the load generator on one CPU;
* `orca serve` with the memory store, and again with Redis (db 15, a unique key prefix whose
  keys are deleted afterwards), each pinned alone on the other CPU; `orca serve --workers 2`
  with Redis (its own prefix) is not pinned, its workers forked children of the started
  process;
* LiteLLM proxy, installed into its own virtualenv (`bench/.venv-litellm`) and run with one
  worker, no database, no callbacks, no telemetry, pointed at the same fake upstream.

CPU per request comes from each process's own accounting: `utime + stime` of
`/proc/<pid>/stat` summed over the process and its descendants (clock ticks, usually 10 ms),
plus the per-thread `schedstat` run time (nanoseconds) as a finer cross-check. Every process
here is started by the benchmark and stopped by its pid. The servers that are not being
measured stay up: idle, orca and LiteLLM each draw about 2 ms of CPU per second (measured),
well under the noise of the figures.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orca_cli.testing.net import free_port  # outside the ephemeral range: nothing takes it

__all__ = [
    "LITELLM_VERSION",
    "CpuSample",
    "Launch",
    "Proc",
    "cpu_sample",
    "ensure_litellm",
    "machine_facts",
    "redis_available",
    "redis_cleanup",
    "start_fake_upstream",
    "start_floor",
    "start_litellm",
    "start_orca",
    "stop",
    "wait_workers",
]

ROOT = Path(__file__).resolve().parents[1]
LITELLM_VERSION = "1.108.7"
LITELLM_VENV = ROOT / "bench" / ".venv-litellm"
CLK_TCK = os.sysconf("SC_CLK_TCK")
_READY_TIMEOUT_S = 120.0


@dataclass
class Proc:
    """A started server: its pid, port and log file (stdout and stderr)."""

    name: str
    popen: subprocess.Popen[bytes]
    port: int
    log: Path
    cpu: int | None = None
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log_tail(self, chars: int = 1500) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


@dataclass(frozen=True, slots=True)
class Launch:
    """How a measured server is started when not plainly: `wrap` goes in front of its argv
    (e.g. `setarch -R valgrind --tool=callgrind ...`), `env` is added to its environment, and
    `ready_s` bounds the wait for its port (a server under valgrind starts ~50x slower)."""

    wrap: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    ready_s: float = 60.0


PLAIN = Launch()


@dataclass(frozen=True, slots=True)
class CpuSample:
    ticks: int  # utime + stime, clock ticks, over the process tree
    sched_ns: int  # run time of the tree's live threads, from schedstat


def _descendants(pid: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                rest = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(rest[1]), []).append(int(entry))
    out, todo = [pid], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def cpu_sample(pid: int) -> CpuSample:
    ticks = sched = 0
    for p in _descendants(pid):
        try:
            with open(f"/proc/{p}/stat", "rb") as f:
                rest = f.read().rsplit(b")", 1)[1].split()
            ticks += int(rest[11]) + int(rest[12])  # fields 14 and 15: utime, stime
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/schedstat", "rb") as f:
                    sched += int(f.read().split()[0])
        except (OSError, IndexError, ValueError):
            continue
    return CpuSample(ticks, sched)


def _pin(cpu: int | None) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})


def _spawn(name: str, argv: list[str], *, env: dict[str, str], cpu: int | None,
           workdir: Path, port: int, launch: Launch = PLAIN) -> Proc:
    log = workdir / f"{name}.log"
    argv = [*launch.wrap, *argv]
    env = {**env, **dict(launch.env)}
    with open(log, "wb") as out:
        popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                 stdin=subprocess.DEVNULL, cwd=workdir,
                                 preexec_fn=lambda: _pin(cpu))  # noqa: PLW1509 - affinity only
    return Proc(name, popen, port, log, cpu)


def _wait_listening(proc: Proc, timeout_s: float = _READY_TIMEOUT_S) -> None:
    """Until the port accepts and answers an HTTP request; fail with the log's tail."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc.popen.poll() is not None:
            break
        try:
            with socket.create_connection(("127.0.0.1", proc.port), timeout=1.0) as s:
                s.sendall(b"GET /health/liveliness HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          b"Connection: close\r\n\r\n")
                if s.recv(16).startswith(b"HTTP/1."):
                    return
        except OSError:
            pass
        time.sleep(0.2)
    tail = proc.log.read_text(errors="replace")[-2000:]
    stop(proc)
    raise RuntimeError(f"{proc.name} did not start on port {proc.port}:\n{tail}")


def wait_workers(proc: Proc, workers: int, timeout_s: float = 30.0) -> None:
    """Until `workers` distinct pids have answered `/healthz` (`orca serve --workers N`):
    the port answers once one worker listens, and the kernel spreads new connections over
    the listening sockets only, so a load started earlier would find one worker."""
    seen: set[int] = set()
    end = time.monotonic() + timeout_s
    while len(seen) < workers and time.monotonic() < end and proc.popen.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", proc.port), timeout=1.0) as s:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                          b"Connection: close\r\n\r\n" % proc.port)
                got = b"".join(iter(lambda: s.recv(65536), b""))
            seen.add(int(json.loads(got.split(b"\r\n\r\n", 1)[1])["pid"]))
        except (OSError, ValueError, KeyError, IndexError):
            pass
        time.sleep(0.05)  # not a busy loop beside the workers still starting
    if len(seen) < workers:
        stop(proc)
        raise RuntimeError(f"{proc.name}: {len(seen)} of {workers} workers answered on port "
                           f"{proc.port}:\n{proc.log_tail(2000)}")


def _clean_env() -> dict[str, str]:
    """The environment minus anything that could steer a proxy (keys, configs, proxies)."""
    drop = ("ORCA_", "LITELLM_", "OPENAI_", "ANTHROPIC_", "DATABASE_URL", "REDIS_")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(drop) and not k.endswith("_API_KEY")
           and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


def start_fake_upstream(workdir: Path, cpu: int | None) -> Proc:
    port = free_port()
    argv = [sys.executable, str(ROOT / "bench" / "fake_upstream.py"), "--port", str(port)]
    proc = _spawn("fake-upstream", argv, env=_clean_env(), cpu=cpu, workdir=workdir, port=port)
    _wait_listening(proc, 30.0)
    return proc


def start_floor(workdir: Path, upstream_port: int, cpu: int | None,
                launch: Launch = PLAIN, name: str = "floor") -> Proc:
    """`bench/floor_proxy.py`: uvicorn + raw ASGI + aiohttp and nothing else (the floor)."""
    port = free_port()
    argv = [sys.executable, str(ROOT / "bench" / "floor_proxy.py"), "--upstream-port",
            str(upstream_port), "--port", str(port)]
    proc = _spawn(name, argv, env=_clean_env(), cpu=cpu, workdir=workdir, port=port,
                  launch=launch)
    _wait_listening(proc, launch.ready_s)
    return proc


def orca_config(upstream_port: int, *, backend: str, redis_url: str = "",
                key_prefix: str = "orca", responses: bool = True,
                store_timeout_ms: int | None = None) -> str:
    """One channel per wire format at the fake upstream; routers `coding` (both channels'
    models, its cheapest on the Chat Completions one) and `claude` (the Anthropic channel's
    only), gated_adaptive with Frontier Escalation on, as the documented example runs it. The OpenAI channel also answers
    the Responses API (`api = ["openai", "responses"]`, as OpenAI's own endpoint does) unless
    `responses` is False: a revision from before the Responses API refuses that key's list."""
    base = f"http://127.0.0.1:{upstream_port}"
    api = '["openai", "responses"]' if responses else '"openai"'
    state = f'backend = "{backend}"\n'
    if backend == "redis":
        state += f'redis_url = "{redis_url}"\nkey_prefix = "{key_prefix}"\n'
        if store_timeout_ms is not None:
            state += f"timeout_ms = {store_timeout_ms}\n"
    return f"""\
[server]
host = "127.0.0.1"

[state]
{state}
[[channels]]
name = "fake-openai"
type = "openai-compatible"
api = {api}
base_url = "{base}"
keys = ["sk-fake-bench-key"]
models = ["bench-base", "bench-strong", "bench-paced"]
model_map = {{ "bench-base" = "fake-base", "bench-strong" = "fake-strong", "bench-paced" = "fake-paced" }}

[[channels]]
name = "fake-anthropic"
type = "anthropic"
base_url = "{base}"
keys = ["sk-ant-fake-bench-key"]
models = ["bench-claude-base", "bench-claude-strong"]

# 1M-token windows: the 1 MB transcript (~256 K estimated tokens) must stay servable.
[models."bench-base"]
input = 0.27
output = 1.10
context_window = 1048576
[models."bench-claude-base"]
input = 1.00
output = 5.00
context_window = 1048576
[models."bench-strong"]
input = 2.00
output = 8.00
context_window = 1048576
[models."bench-claude-strong"]
input = 3.00
output = 15.00
context_window = 1048576
[models."bench-paced"]
input = 0.27
output = 1.10
context_window = 1048576

[routers.coding]
strategy = "gated_adaptive"
mode = "balanced"
session_aware = true
weak_pool = ["bench-base", "bench-claude-base"]
mid_pool = []
strong_pool = ["bench-strong", "bench-claude-strong"]

[routers.coding.escalation]
mode = "auto"

# The Anthropic channel's models only: a Messages client goes native, a Chat Completions one
# through translation (`coding` picks bench-base on the Chat Completions channel: cheapest).
[routers.claude]
strategy = "gated_adaptive"
mode = "balanced"
session_aware = true
weak_pool = ["bench-claude-base"]
mid_pool = []
strong_pool = ["bench-claude-strong"]

[routers.claude.escalation]
mode = "auto"

[routers.paced]
strategy = "cheapest"
session_aware = true
weak_pool = ["bench-paced"]

[routers.paced.escalation]
mode = "off"
"""


def start_orca(name: str, workdir: Path, upstream_port: int, cpu: int | None, *,
               backend: str = "memory", redis_url: str = "", key_prefix: str = "orca",
               python_args: tuple[str, ...] = (), what_if: str | None = None,
               config: str | None = None, serve_args: tuple[str, ...] = (),
               responses: bool = True, launch: Launch = PLAIN) -> Proc:
    """`orca serve` in its own process; `python_args` may put a profiler in front, and
    `what_if` names a `bench/orca_what_if.py` variant to run instead of the shipped CLI.
    `config` replaces the `orca_config` text; `notes["token_path"]` is its admin token.
    `serve_args` go after `orca serve`'s own (e.g. `--quiet`: no request log); `responses`
    False leaves the Responses API out of the config (for a revision that predates it).
    `launch` wraps the process (valgrind, for `bench_proxy.py --instructions`)."""
    cfg = workdir / f"{name}.toml"
    cfg.write_text(config if config is not None else orca_config(
        upstream_port, backend=backend, redis_url=redis_url, key_prefix=key_prefix,
        responses=responses))
    port = free_port()
    env = _clean_env()
    env["XDG_STATE_HOME"] = str(workdir / f"{name}-state")  # its admin token stays here
    entry = (["-m", "orca_cli"] if what_if is None
             else [str(ROOT / "bench" / "orca_what_if.py"), what_if])
    argv = [sys.executable, *python_args, *entry, "serve", "--config", str(cfg),
            "--port", str(port), *serve_args]
    proc = _spawn(name, argv, env=env, cpu=cpu, workdir=workdir, port=port, launch=launch)
    _wait_listening(proc, launch.ready_s)
    proc.notes["token_path"] = str(workdir / f"{name}-state" / "orca" / "admin.token")
    return proc


def machine_facts() -> dict[str, Any]:
    """The machine a figure belongs to: cores, Python, platform, load and date at the start."""
    return {"nproc": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "machine": platform.machine(),
            "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}


def export_revision(rev: str, workdir: Path) -> Path:
    """The `orca_cli` package of git revision `rev`, exported under `workdir` (for the
    `at:<rev>` what-if: an earlier commit measured beside the current tree)."""
    out = workdir / f"at-{rev}"
    out.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "orca_cli"],
                             check=True, capture_output=True, timeout=120).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True, timeout=120)
    return out


def redis_available(url: str) -> str | None:
    """None when `url` answers PING, else why not."""
    try:
        import redis
    except ImportError:
        return "redis-py is not installed in this venv"
    try:
        client = redis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)
        client.ping()
        client.close()
    except Exception as exc:  # noqa: BLE001 - any failure means: skip the Redis target
        return f"Redis at {url} is unreachable ({type(exc).__name__})"
    return None


def unique_prefix() -> str:
    return f"orcabench-{os.getpid()}-{secrets.token_hex(4)}"


def redis_cleanup(url: str, prefix: str) -> int:
    """Delete every key under `prefix` (the benchmark's own); returns how many."""
    import redis

    client = redis.Redis.from_url(url, socket_timeout=5.0)
    deleted = 0
    try:
        batch: list[bytes] = []
        for key in client.scan_iter(match=f"{prefix}*", count=1000):
            batch.append(key)
            if len(batch) >= 500:
                deleted += int(client.delete(*batch))
                batch.clear()
        if batch:
            deleted += int(client.delete(*batch))
    finally:
        client.close()
    return deleted


def ensure_litellm(install: bool, log: Path) -> tuple[Path | None, str]:
    """The LiteLLM venv's `litellm` executable, installing it when asked; or (None, why)."""
    exe = LITELLM_VENV / "bin" / "litellm"
    py = LITELLM_VENV / "bin" / "python"
    if exe.exists():
        got = subprocess.run([str(py), "-c", "import litellm, importlib.metadata as m; "
                              "print(m.version('litellm'))"], check=False, capture_output=True,
                             text=True, timeout=120)
        if got.returncode == 0 and got.stdout.strip() == LITELLM_VERSION:
            return exe, f"litellm {LITELLM_VERSION} in {LITELLM_VENV.relative_to(ROOT)}"
    if not install:
        return None, f"{LITELLM_VENV.relative_to(ROOT)} has no litellm {LITELLM_VERSION} (--no-install)"
    base = getattr(sys, "_base_executable", sys.executable)
    try:
        with open(log, "wb") as out:
            subprocess.run([base, "-m", "venv", str(LITELLM_VENV)], check=True, stdout=out,
                           stderr=subprocess.STDOUT, timeout=300)
            subprocess.run([str(py), "-m", "pip", "install", "-q",
                            f"litellm[proxy]=={LITELLM_VERSION}"], check=True, stdout=out,
                           stderr=subprocess.STDOUT, timeout=1800)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
        return None, f"pip install litellm[proxy]=={LITELLM_VERSION} failed ({exc}): " + " | ".join(tail)
    if not exe.exists():
        return None, "the LiteLLM install left no litellm executable"
    return exe, f"litellm {LITELLM_VERSION} installed into {LITELLM_VENV.relative_to(ROOT)}"


def start_litellm(exe: Path, workdir: Path, upstream_port: int, cpu: int | None) -> Proc:
    """One uvicorn worker in the litellm process itself, no DB, no callbacks, no telemetry,
    the model cost map read locally (never fetched), logs at ERROR. A fresh master key, as
    1.108 refuses to start without one; clients send it (`notes["authorization"]`)."""
    master = "sk-bench-" + secrets.token_hex(16)
    cfg = workdir / "litellm.yaml"
    base = f"http://127.0.0.1:{upstream_port}/v1"
    cfg.write_text(f"""\
model_list:
  - model_name: bench-model
    litellm_params:
      model: openai/fake-base
      api_base: {base}
      api_key: sk-fake-bench-key
  - model_name: bench-paced
    litellm_params:
      model: openai/fake-paced
      api_base: {base}
      api_key: sk-fake-bench-key
litellm_settings:
  telemetry: false
  set_verbose: false
  json_logs: false
  callbacks: []
  success_callback: []
  failure_callback: []
  drop_params: true
  request_timeout: 600
general_settings:
  disable_spend_logs: true
  disable_error_logs: true
  disable_adding_master_key_hash_to_db: true
  allow_requests_on_db_unavailable: true
""")
    port = free_port()
    env = _clean_env()
    env.update({"LITELLM_MASTER_KEY": master, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR",
                "LITELLM_TELEMETRY": "False", "DISABLE_SCHEMA_UPDATE": "True",
                "LITELLM_MODE": "PRODUCTION"})
    argv = [str(exe), "--config", str(cfg), "--host", "127.0.0.1", "--port", str(port),
            "--num_workers", "1"]
    proc = _spawn("litellm", argv, env=env, cpu=cpu, workdir=workdir, port=port)
    proc.notes["authorization"] = f"Bearer {master}"
    _wait_listening(proc)
    return proc


def stop(proc: Proc, timeout_s: float = 15.0) -> None:
    """SIGTERM, then SIGKILL; by pid only."""
    if proc.popen.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.popen.terminate()
    try:
        proc.popen.wait(timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.popen.kill()
        proc.popen.wait(5.0)


def workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="orca-bench-"))
