"""Footprint benchmark: resident memory of `orca serve` and the cost of `orca replay` (SPEC §12).

    python bench/bench_footprint.py              # full run: 10,000 sessions, 3 replay runs (~3 min)
    python bench/bench_footprint.py --quick      # 1,000 sessions, one replay run
    python bench/bench_footprint.py --json       # one JSON document on stdout (progress on stderr)

Three figures:

1. **Idle RSS** of `orca serve` with the memory store (`VmRSS` and `VmHWM` from
   `/proc/<pid>/status`), right after start-up and after a 100-request warm-up.
2. **RSS under many sessions**: `--sessions` requests (10 KB agent body, `--concurrency`
   workers), each opening its own session (`X-Orca-Session`), through a real `orca serve`
   at the fake upstream. It reports RSS before and after, the growth per session, and what
   the admin API shows resident (sessions and pins), and the size of one stored trace. Then,
   unless `--ttl-s 0`, it waits for those keys' TTLs to pass, sends one request so a commit
   runs the store's sweep, reads RSS and the admin API again, and sends as many new sessions
   again, to see whether the memory the sweep freed is reused.
3. **`orca replay`** of the default corpus (`orca replay --json`: 400 sessions, memory store),
   run as a child process `--replay-runs` times: wall time and CPU time (`utime + stime` from
   `wait4`), and its peak RSS. The medians are reported.

The server runs the proxy benchmark's config (`bench/proxy_targets.orca_config`). With
`--ttl-s N` (default 120) the per-session TTLs that config allows to be set, the channel
cache window (`cache_ttl_s`, which the model and channel pins follow), `tier_ttl_s` and
`server.trace_ttl_s`, are shortened to N seconds so their expiry can be watched in one run.
Nothing expires while the load runs (it is capped below N seconds), so the figures before the
sweep are those of the stock TTLs (300 s pins, 4 h tier state, 24 h traces).

The server runs alone on CPU 1; the fake upstream and this load generator share CPU 0. Every
loop is bounded by a count and a time limit; only loopback is used; every process started
here is stopped by its pid, and the temporary directory is removed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import statistics
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# These resolve only once the repository root is on sys.path (the script may run from anywhere).
from bench import proxy_targets as T
from bench.loadgen import Endpoint, fetch, run_load
from bench.proxy_bodies import SIZES, agent_body, encode

SUMMARY = "Measure orca serve's resident memory under many sessions, and orca replay's time."
PROXY_CPU, LOAD_CPU = 1, 0
WARMUP = 100
SWEEP_INTERVAL_S = 60.0  # MemoryStore's default: a commit this long after the last sweep sweeps
REPLAY_TIMEOUT_S = 300.0
ADMIN_TIMEOUT_S = 60.0
_STATUS_FIELDS = ("VmRSS", "VmHWM", "RssAnon", "RssFile", "Threads")


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _source() -> dict[str, Any]:
    """Which code ran: the root `orca_cli` was imported from, its commit and whether
    `orca_cli/` differed from it (None when the root is no git checkout)."""
    import subprocess

    import orca_cli

    out: dict[str, Any] = {"orca_cli": str(Path(orca_cli.__file__).parent), "commit": None,
                           "orca_cli_dirty": None}
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              check=False, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--",
                                "orca_cli"], check=False, capture_output=True, text=True,
                                timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return out
    if head.returncode == 0:
        out["commit"] = head.stdout.strip()
        out["orca_cli_dirty"] = bool(dirty.stdout.strip())
    return out


def mem(pid: int) -> dict[str, int]:
    """`VmRSS`, `VmHWM`, `RssAnon`, `RssFile` (KiB) and `Threads` from /proc/<pid>/status."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in _STATUS_FIELDS:
                out[name] = int(value.split()[0])
    return out


# --- the server ------------------------------------------------------------------------------


def footprint_config(upstream_port: int, ttl_s: int) -> str:
    """The proxy benchmark's memory-store config; with `ttl_s` > 0, the configurable
    per-session TTLs shortened to `ttl_s` seconds."""
    text = T.orca_config(upstream_port, backend="memory")
    if ttl_s <= 0:
        return text
    edits = [
        (r'^(\[server\]\nhost = .*)$', rf"\1\ntrace_ttl_s = {ttl_s}", 1),
        (r"^(keys = \[.*\])$", rf"\1\ncache_ttl_s = {ttl_s}", 2),
        (r"^(\[routers\.\w+\.escalation\])$", rf"\1\ntier_ttl_s = {ttl_s}", 3),
    ]
    for pattern, repl, count in edits:
        text, n = re.subn(pattern, repl, text, flags=re.MULTILINE)
        if n != count:
            raise RuntimeError(f"bench config changed shape: {pattern!r} matched {n}, not {count}")
    return text


def _admin(proc: T.Proc, path: str) -> Any:
    token = Path(proc.notes["token_path"]).read_text().strip()
    req = urllib.request.Request(f"http://127.0.0.1:{proc.port}{path}",
                                 headers={"Authorization": f"Bearer {token}"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, no proxy
    with opener.open(req, timeout=ADMIN_TIMEOUT_S) as resp:
        return orjson.loads(resp.read())


def resident(proc: T.Proc) -> dict[str, Any]:
    """What the admin API lists: sessions with tier state, and pins by kind."""
    sessions = _admin(proc, "/orca/v1/sessions?router=coding")
    pins = _admin(proc, "/orca/v1/pins?router=coding")
    kinds: dict[str, int] = {}
    for p in pins:
        kinds[p["kind"]] = kinds.get(p["kind"], 0) + 1
    return {"sessions": len(sessions), "pins": len(pins), "pins_by_kind": kinds}


def trace_bytes(proc: T.Proc, concurrency: int) -> int | None:
    """The JSON size of one stored trace (what every request keeps for `orca explain`): the
    first request of the session load, by its client `X-Request-Id` (`fp-s-<worker>-1`)."""
    import urllib.error

    for w in range(concurrency):
        try:
            return len(orjson.dumps(_admin(proc, f"/orca/v1/explain/fp-s-{w}-1")))
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
    return None


async def _load(port: int, body: bytes, *, requests: int, concurrency: int, max_s: float,
                prefix: str, per_request: bool) -> dict[str, Any]:
    ep = Endpoint("127.0.0.1", port, "/v1/chat/completions")
    res = await run_load(ep, body, requests=requests, concurrency=concurrency, max_s=max_s,
                         session_prefix=prefix, session_per_request=per_request)
    return {"requests": res.count, "errors": res.errors,
            "statuses": {str(k): v for k, v in sorted(res.statuses.items())},
            "wall_s": round(res.wall_s, 3),
            "req_per_s": round(res.count / res.wall_s, 1) if res.wall_s > 0 else 0.0}


def _probe(port: int, body: bytes, session: str) -> int:
    ep = Endpoint("127.0.0.1", port, "/v1/chat/completions")
    status, _ = asyncio.run(fetch(ep, body, session=session, timeout_s=30.0))
    return status


def measure_memory(args: argparse.Namespace, wd: Path, procs: list[T.Proc],
                   cpus: tuple[int | None, int | None]) -> dict[str, Any]:
    proxy_cpu, load_cpu = cpus
    upstream = T.start_fake_upstream(wd, load_cpu)
    procs.append(upstream)
    orca = T.start_orca("orca-memory", wd, upstream.port, proxy_cpu,
                        config=footprint_config(upstream.port, args.ttl_s))
    procs.append(orca)
    if load_cpu is not None:
        os.sched_setaffinity(0, {load_cpu})
    body = encode(agent_body("openai", SIZES["10KB"], model="orca/coding", stream=False))
    out: dict[str, Any] = {"body_bytes": len(body), "concurrency": args.concurrency,
                           "ttl_s": args.ttl_s or None, "stages": {}}
    stages = out["stages"]

    time.sleep(1.0)  # let start-up settle (the readiness probe was its first request)
    stages["idle_start"] = mem(orca.pid)
    _log(f"idle after start-up: {stages['idle_start']['VmRSS'] / 1024:.1f} MiB")

    out["warmup"] = asyncio.run(_load(orca.port, body, requests=WARMUP,
                                      concurrency=args.concurrency, max_s=60.0,
                                      prefix="fp-warm", per_request=False))
    time.sleep(1.0)
    stages["idle_warm"] = mem(orca.pid)
    _log(f"after {WARMUP}-request warm-up: {stages['idle_warm']['VmRSS'] / 1024:.1f} MiB")

    _log(f"{args.sessions} requests, each its own session, concurrency {args.concurrency} ...")
    out["load"] = load = asyncio.run(_load(orca.port, body, requests=args.sessions,
                                           concurrency=args.concurrency, max_s=args.max_seconds,
                                           prefix="fp-s", per_request=True))
    load_end = time.monotonic()
    time.sleep(1.0)
    stages["after_sessions"] = mem(orca.pid)
    n = max(1, load["requests"])
    grown = stages["after_sessions"]["VmRSS"] - stages["idle_warm"]["VmRSS"]
    out["kib_per_session"] = round(grown / n, 3)
    _log(f"after {load['requests']} sessions ({load['wall_s']} s, {load['errors']} errors): "
         f"{stages['after_sessions']['VmRSS'] / 1024:.1f} MiB, {grown / n:.2f} KiB/session")

    # The admin listing scans the whole store and builds its answer in the server: read RSS
    # first, then list, then read RSS again.
    out["resident_after_sessions"] = resident(orca)
    out["trace_bytes"] = trace_bytes(orca, args.concurrency)
    stages["after_admin_listing"] = mem(orca.pid)

    if args.ttl_s > 0:
        wait = max(float(args.ttl_s), SWEEP_INTERVAL_S) + 2.0 - (time.monotonic() - load_end)
        _log(f"waiting {max(0.0, wait):.0f} s for the {args.ttl_s} s TTLs to pass ...")
        if wait > 0:
            time.sleep(wait)
        # The memory store sweeps inside a commit; this request's commit runs it.
        out["sweep_probe_status"] = _probe(orca.port, body, "fp-sweep-probe")
        time.sleep(1.0)
        stages["after_sweep"] = mem(orca.pid)
        out["resident_after_sweep"] = resident(orca)
        back = stages["after_admin_listing"]["VmRSS"] - stages["after_sweep"]["VmRSS"]
        out["kib_returned_by_sweep"] = back
        out["kib_per_session_after_sweep"] = round(
            (stages["after_sweep"]["VmRSS"] - stages["idle_warm"]["VmRSS"]) / n, 3)
        _log(f"after the sweep: {stages['after_sweep']['VmRSS'] / 1024:.1f} MiB")
        # As many new sessions again: does the store reuse what the sweep freed?
        out["second_load"] = asyncio.run(_load(orca.port, body, requests=args.sessions,
                                               concurrency=args.concurrency,
                                               max_s=args.max_seconds, prefix="fp-t",
                                               per_request=True))
        time.sleep(1.0)
        stages["after_second_load"] = mem(orca.pid)
        out["kib_per_session_second_load"] = round(
            (stages["after_second_load"]["VmRSS"] - stages["after_sweep"]["VmRSS"])
            / max(1, out["second_load"]["requests"]), 3)
        _log(f"after {out['second_load']['requests']} more sessions: "
             f"{stages['after_second_load']['VmRSS'] / 1024:.1f} MiB")
    T.stop(orca)
    T.stop(upstream)
    os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
    return out


# --- orca replay -------------------------------------------------------------------------------


def _wait_child(pid: int, deadline: float) -> tuple[int, Any]:
    """`wait4` the child until `deadline` (monotonic), killing it then; (status, rusage)."""
    while True:
        got, status, usage = os.wait4(pid, os.WNOHANG)
        if got == pid:
            return status, usage
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            raise RuntimeError(f"orca replay did not finish in {REPLAY_TIMEOUT_S:.0f} s")
        time.sleep(0.005)


def replay_once(wd: Path, i: int) -> dict[str, Any]:
    import subprocess

    out_path, err_path = wd / f"replay-{i}.json", wd / f"replay-{i}.err"
    env = T._clean_env()
    env["XDG_STATE_HOME"] = str(wd / "replay-state")
    argv = [sys.executable, "-m", "orca_cli", "replay", "--json"]
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        popen = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                 cwd=wd, env=env)
        try:
            status, usage = _wait_child(popen.pid, time.monotonic() + REPLAY_TIMEOUT_S)
        finally:
            popen.returncode = -1  # reaped here by wait4; Popen must not wait for it again
        wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        tail = err_path.read_text(errors="replace")[-800:]
        raise RuntimeError(f"orca replay exited {code}: {tail}")
    doc = orjson.loads(out_path.read_bytes())
    cfg = doc.get("config", {})
    return {"wall_s": round(wall, 3), "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
            "user_s": round(usage.ru_utime, 3), "sys_s": round(usage.ru_stime, 3),
            "max_rss_kib": usage.ru_maxrss, "sessions": cfg.get("sessions"),
            "turns": cfg.get("turns"), "state": cfg.get("state")}


def measure_replay(runs: int, wd: Path) -> dict[str, Any]:
    rows = []
    for i in range(runs):
        rows.append(replay_once(wd, i))
        _log(f"orca replay run {i + 1}/{runs}: {rows[-1]['wall_s']:.2f} s wall, "
             f"{rows[-1]['cpu_s']:.2f} s CPU")
    med = {k: round(statistics.median(r[k] for r in rows), 3)
           for k in ("wall_s", "cpu_s", "user_s", "sys_s", "max_rss_kib")}
    return {"command": "orca replay --json", "runs": rows, "median": med}


# --- output --------------------------------------------------------------------------------------


def render(doc: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    m = doc["machine"]
    con.print(f"[bold]orca footprint[/bold]  {m['date']}  nproc {m['nproc']}, "
              f"CPython {m['python']}, {m['platform']}; load avg at start "
              f"{m['loadavg_at_start'][0]}, at end {m['loadavg_at_end'][0]}")
    src = doc["source"]
    state = {None: "", False: ", clean", True: ", with uncommitted changes"}[src["orca_cli_dirty"]]
    con.print(f"orca_cli from {src['orca_cli']} (commit {src['commit'] or 'unknown'}{state})")
    mm = doc["memory"]
    st = mm["stages"]
    t = Table(title=f"orca serve, memory store ({mm['body_bytes']:,} B body, "
                    f"c{mm['concurrency']}; sessions and pins: admin API)")
    for col in ("stage", "VmRSS MiB", "VmHWM MiB", "RssAnon MiB", "sessions", "pins"):
        t.add_column(col, justify="left" if col == "stage" else "right")
    labels = {"idle_start": "idle, start-up",
              "idle_warm": f"idle, {WARMUP} requests",
              "after_sessions": f"{mm['load']['requests']:,} sessions",
              "after_admin_listing": "+ admin listing",
              "after_sweep": f"TTL {mm['ttl_s']} s, swept",
              "after_second_load": f"+ {mm.get('second_load', {}).get('requests', 0):,} new"}
    counts = {"after_sessions": mm.get("resident_after_sessions"),
              "after_sweep": mm.get("resident_after_sweep")}
    for key, label in labels.items():
        if key not in st:
            continue
        s, c = st[key], counts.get(key)
        t.add_row(label, f"{s['VmRSS'] / 1024:.1f}", f"{s['VmHWM'] / 1024:.1f}",
                  f"{s['RssAnon'] / 1024:.1f}", f"{c['sessions']:,}" if c else "",
                  f"{c['pins']:,}" if c else "")
    con.print(t)
    ld = mm["load"]
    line = (f"growth {mm['kib_per_session']:.2f} KiB per session; load {ld['requests']:,} "
            f"requests in {ld['wall_s']:.1f} s ({ld['req_per_s']:,.0f} req/s), "
            f"{ld['errors']} errors")
    if "kib_per_session_after_sweep" in mm:
        line += (f"; after the sweep {mm['kib_per_session_after_sweep']:.2f} KiB per session "
                 f"stay resident; the sweep gave back {mm['kib_returned_by_sweep'] / 1024:.1f} MiB")
    if "kib_per_session_second_load" in mm:
        line += (f"; {mm['second_load']['requests']:,} new sessions after it added "
                 f"{mm['kib_per_session_second_load']:.2f} KiB per session")
    if mm.get("trace_bytes"):
        line += f"; one stored trace is {mm['trace_bytes']:,} B of JSON"
    con.print(line)
    r = doc["replay"]
    t = Table(title=f"{r['command']} ({r['runs'][0]['sessions']} sessions, "
                    f"{r['runs'][0]['turns']:,} turns, {r['runs'][0]['state']} store)")
    for col in ("run", "wall s", "CPU s", "user s", "sys s", "peak RSS MiB"):
        t.add_column(col, justify="right")
    for i, row in enumerate(r["runs"], 1):
        t.add_row(str(i), f"{row['wall_s']:.2f}", f"{row['cpu_s']:.2f}", f"{row['user_s']:.2f}",
                  f"{row['sys_s']:.2f}", f"{row['max_rss_kib'] / 1024:.1f}")
    med = r["median"]
    t.add_row("median", f"{med['wall_s']:.2f}", f"{med['cpu_s']:.2f}", f"{med['user_s']:.2f}",
              f"{med['sys_s']:.2f}", f"{med['max_rss_kib'] / 1024:.1f}", style="bold")
    con.print(t)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=SUMMARY)
    p.add_argument("--sessions", type=int, default=None, help="distinct sessions (10000)")
    p.add_argument("--quick", action="store_true", help="1,000 sessions, one replay run")
    p.add_argument("--concurrency", type=int, default=8, help="load workers (8)")
    p.add_argument("--max-seconds", type=float, default=100.0,
                   help="time cap of the session load (100; kept below --ttl-s)")
    p.add_argument("--ttl-s", type=int, default=120,
                   help="shorten the per-session TTLs to this and watch the sweep (0: stock TTLs)")
    p.add_argument("--replay-runs", type=int, default=None, help="orca replay runs (3; quick 1)")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.sessions = args.sessions or (1000 if args.quick else 10000)
    args.replay_runs = args.replay_runs or (1 if args.quick else 3)
    if not 1 <= args.sessions <= 1_000_000 or not 1 <= args.concurrency <= 256:
        raise SystemExit("--sessions must be 1..1,000,000 and --concurrency 1..256")
    if args.ttl_s > 0:
        args.max_seconds = min(args.max_seconds, max(1.0, args.ttl_s - 10.0))
    machine = T.machine_facts()
    pinned = (os.cpu_count() or 1) >= 2
    cpus = (PROXY_CPU, LOAD_CPU) if pinned else (None, None)
    wd = T.workdir()
    procs: list[T.Proc] = []
    try:
        memory = measure_memory(args, wd, procs, cpus)
        replay = measure_replay(args.replay_runs, wd)
    finally:
        for p in procs:
            T.stop(p)
        shutil.rmtree(wd, ignore_errors=True)
    machine["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    machine["pinning"] = ("orca serve on CPU 1; fake upstream and load generator on CPU 0; "
                          "orca replay unpinned" if pinned else "one CPU: nothing pinned")
    doc = {"machine": machine, "source": _source(),
           "settings": {"sessions": args.sessions, "concurrency": args.concurrency,
                        "max_seconds": args.max_seconds, "ttl_s": args.ttl_s,
                        "replay_runs": args.replay_runs, "warmup": WARMUP, "quick": args.quick},
           "memory": memory, "replay": replay}
    if args.json:
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        render(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
