"""Instructions per request of each proxy process, counted by callgrind (`bench_proxy.py
--instructions`).

On a shared 2-core VM, CPU time cannot tell two targets 0.1 ms apart: two processes running
the same code differ by up to ±0.2 ms a request (bench/README.md, "Runs of 2026-12-04 16:30
UTC"). The number of instructions a process executes does not depend on the machine's load, so
here every proxy (floor, orca-memory = `orca serve`, orca-quiet = `orca serve --quiet`,
orca-redis, each `--what-if` target) runs under `valgrind --tool=callgrind`, with
`PYTHONHASHSEED=0` and, through `setarch -R`, no address-space randomization. The same load
generator sends the same bodies over the real sockets as the timed figures do. Per scenario,
after a warm-up, it sends N1 then N2 requests (`--instr-counts`, 40 and 240), and after each
batch asks callgrind (`callgrind_control --dump`) for the instructions the process ran since the
previous dump: instructions a request = (count(N2) − count(N1)) / (N2 − N1). Whatever both
batches do once cancels: opening and closing the connections, the last request's tail, a
timer that happened to fire. Start-up, warm-up and shutdown are outside both batches. Only the
proxy process is counted: the fake upstream, Redis and the client run natively beside it.

* **Idle wake-ups.** uvicorn wakes its loop 10 times a second even when idle (its server tick),
  and under callgrind a request takes ~60 ms instead of ~1 ms, so those wake-ups weigh ~50
  times more per request than they do natively. Every process measures its idle rate
  (instructions a second with no request, before and after its scenarios); `idle_bound` is
  that rate × the two batches' wall-time difference, per request: the most the wake-ups can
  add to a figure. It is not subtracted: under load a wake-up shares a loop turn that runs
  anyway and costs less than idle, and a starved process's timers fire late and less often,
  so wall time does not predict them (subtracting made the spread between processes worse).
* **Repeatability.** Each target runs in `--instr-runs` processes (2), one after another or side
  by side (`--instr-jobs`); each process measures every scenario. The figure is their mean
  and `spread` is (max − min) / mean.
* **System calls.** callgrind counts user-space instructions only; a `write` a request is kernel
  time it does not see. The same batches are sent once more to a native process of each target
  with `strace -f -c -p` attached for each batch: syscalls a request = the same difference.
  Skipped, and said so, when strace is missing.
* **µs.** `bench/instr_rate.py`, a fixed pure-Python loop, is timed natively (best of 9) and
  counted under callgrind: instructions per µs of this CPython here, the rate at which
  differences are quoted in µs (an upper bound on the served proxy's rate, so a lower bound
  on its µs).

LiteLLM is not counted (its start-up alone would take many minutes under callgrind).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from bench import bench_proxy as P
from bench import proxy_targets as T
from bench.loadgen import Endpoint, LoadResult, fetch, run_load
from bench.proxy_bodies import SIZES, agent_body, encode

__all__ = ["DEFAULT_SCENARIOS", "run"]

# Concurrency 1, 10 KB, back-to-back: each wire format, the Responses API, both translations.
DEFAULT_SCENARIOS = ("json_c1$,stream_c1$,responses_json_c1$,responses_stream_c1$,"
                     "anthropic_json_c1$,anthropic_stream_c1$,messages_to_chat,chat_to_messages")
SETTLE_S = 0.5  # after a batch, before its dump: the last request's tail (trace, commit, log)
LOAD_CAP_S = 1800.0  # a batch under callgrind: bounded, but far beyond what it needs
RATE_ITERATIONS = (5_000, 30_000)  # bench/instr_rate.py under callgrind; natively 30,000
RATE_SCRIPT = Path(__file__).resolve().parent / "instr_rate.py"
HASHSEED = (("PYTHONHASHSEED", "0"),)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")


@dataclass(frozen=True)
class Plan:
    """One target: its name and how to start one process of it (launch, a unique label)."""

    name: str
    start: Callable[[T.Launch, str], P.Target]


@dataclass
class Ctx:
    wd: Path
    scenarios: list[P.Scenario]
    counts: tuple[int, int]
    warmup: int
    idle_s: float
    setarch: bool
    bodies: dict[tuple[str, str, bool, str], bytes] = field(default_factory=dict)

    def body(self, t: P.Target, sc: P.Scenario) -> bytes:
        key = (sc.api, sc.size, sc.stream, t.model(sc))
        got = self.bodies.get(key)
        if got is None:
            got = self.bodies[key] = encode(agent_body(
                sc.api, SIZES[sc.size], model=key[3], stream=sc.stream))  # type: ignore[arg-type]
        return got


def missing_tools(strace: bool) -> dict[str, str]:
    """What is absent: valgrind and callgrind_control are required, setarch and strace not."""
    return {tool: "not on PATH" for tool in ("valgrind", "callgrind_control", "setarch", "strace")
            if (strace or tool != "strace") and shutil.which(tool) is None}


def _setarch_works() -> bool:
    """`setarch -R` needs the personality syscall; a container may refuse it."""
    if shutil.which("setarch") is None:
        return False
    try:
        return subprocess.run(["setarch", "-R", "true"], check=False, capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def callgrind_launch(out: Path, setarch: bool, *, at_start: bool = False) -> T.Launch:
    """Under callgrind; instrumentation off until `Dumper.instrument` (start-up then takes
    ~8 s instead of 1–2 minutes) unless `at_start`."""
    wrap = ("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}.%p", "--dump-line=no",
            "--vgdb=yes", f"--instr-atstart={'yes' if at_start else 'no'}")
    return T.Launch((("setarch", "-R") if setarch else ()) + wrap, HASHSEED, ready_s=900.0)


# --- one process under callgrind -------------------------------------------------------------


class Dumper:
    """`callgrind_control --dump=<label>` for one process; each dump holds the instructions
    since the previous one. `dump` returns the seconds the process ran since that one."""

    def __init__(self, pid: int, out: Path) -> None:
        self.pid, self.out, self.last = pid, out, time.monotonic()

    async def _control(self, arg: str) -> None:
        proc = await asyncio.create_subprocess_exec(
            "callgrind_control", arg, str(self.pid),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await asyncio.wait_for(proc.communicate(), 300)
        if proc.returncode != 0 or b"OK" not in out:
            raise RuntimeError(f"callgrind_control {arg} {self.pid}: {out.decode()[-300:]}")

    async def instrument(self) -> None:
        await self._control("--instr=on")

    async def dump(self, label: str) -> float:
        ran = time.monotonic() - self.last
        await self._control(f"--dump={label}")
        self.last = time.monotonic()
        return ran

    def counts(self) -> dict[str, int]:
        """Label → instructions, from the dump files' headers (`desc: Trigger: dump <label>`,
        `summary: <Ir>`)."""
        return read_dumps(self.out.parent.glob(f"{self.out.name}.{self.pid}.*"))


def read_dumps(paths: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for path in paths:
        label, total = "", None
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("desc: Trigger: "):
                    label = line.split(":", 2)[2].strip().removeprefix("dump ").strip()
                elif line.startswith("summary:"):
                    total = int(line.split()[1])
                    break
        if total is not None:
            out[label] = total
    return out


def _eligible(t: P.Target, sc: P.Scenario) -> str | None:
    """Why `t` does not run `sc`, or None. orca-quiet runs wherever orca-memory does (the
    timed run leaves it out of some scenarios only to save time); the floor does not
    translate, so it runs no translated scenario, nor does an `at:<rev>` target (a revision
    from before translation routes such a request to a channel of the client's format)."""
    base = t.name.split("[", 1)[0]
    base = "orca-memory" if base == "orca-quiet" else base
    if base not in sc.targets:
        return f"{sc.name} is not a {base} scenario"
    if sc.to and "[at:" in t.name:
        return "an earlier revision may answer a translated scenario untranslated"
    if not t.serves(sc):
        return f"{t.name} does not serve {sc.route!r} requests"
    return None


def _endpoint(t: P.Target, sc: P.Scenario) -> Endpoint:
    return Endpoint("127.0.0.1", t.port, P._path(sc), t.headers)


async def _probe(t: P.Target, sc: P.Scenario, ctx: Ctx) -> tuple[int, str | None]:
    """One request: (events a response carries, None), or (0, why it failed)."""
    try:
        status, got = await fetch(_endpoint(t, sc), ctx.body(t, sc), session=f"{sc.name}-probe",
                                  timeout_s=600.0)
    except (OSError, TimeoutError) as exc:
        return 0, f"{type(exc).__name__}: {exc}"
    if status != 200:
        return 0, f"answered {status}: {got[:200]!r}"
    return (sum(1 for e in got.split(b"\n\n") if e.strip()) if sc.stream else 1), None


async def _load(t: P.Target, sc: P.Scenario, n: int, ctx: Ctx) -> LoadResult:
    res = await run_load(_endpoint(t, sc), ctx.body(t, sc), requests=n,
                         concurrency=sc.concurrency, max_s=LOAD_CAP_S, session_prefix=sc.name)
    if res.count != n or res.errors:
        raise RuntimeError(f"{n} requests: {res.count} answered 200, {res.errors} errors "
                           f"(statuses {res.statuses})")
    return res


async def _idle(d: Dumper, label: str, seconds: float) -> float:
    await asyncio.sleep(seconds)
    return await d.dump(label)


async def count_process(plan: Plan, run_no: int, ctx: Ctx) -> dict[str, Any]:
    """One process of `plan` under callgrind through every scenario it serves: per scenario
    the two batches' instruction counts and wall times, and the process's idle rates."""
    label = f"{_safe(plan.name)}.{run_no}"
    out = ctx.wd / f"cg-{label}"
    t0 = time.monotonic()
    target = await asyncio.to_thread(plan.start, callgrind_launch(out, ctx.setarch), label)
    assert target.proc is not None
    proc = target.proc
    _log(f"  {label}: started under callgrind in {time.monotonic() - t0:.0f} s (pid {proc.pid})")
    d = Dumper(proc.pid, out)
    res: dict[str, Any] = {"target": plan.name, "run": run_no, "pid": proc.pid,
                           "startup_s": round(time.monotonic() - t0, 1), "walls": {},
                           "events": {}, "unserved": {}, "errors": {}}
    walls: dict[str, float] = res["walls"]
    try:
        await d.instrument()
        await d.dump("startup")
        walls["idle-start"] = await _idle(d, "idle-start", ctx.idle_s)
        for sc in ctx.scenarios:
            why = _eligible(target, sc)
            if why is None:
                events, why = await _probe(target, sc, ctx)
            if why is not None:
                res["unserved"][sc.name] = why
                continue
            res["events"][sc.name] = events
            t1 = time.monotonic()
            try:
                await _load(target, sc, ctx.warmup, ctx)
                await asyncio.sleep(SETTLE_S)
                await d.dump(f"{sc.name}.warm")
                for n in ctx.counts:
                    await _load(target, sc, n, ctx)
                    await asyncio.sleep(SETTLE_S)
                    walls[f"{sc.name}.{n}"] = await d.dump(f"{sc.name}.{n}")
            except (OSError, TimeoutError, RuntimeError) as exc:
                res["errors"][sc.name] = f"{type(exc).__name__}: {exc}"
                _log(f"  {label}: {sc.name} failed: {exc}")
                if proc.popen.poll() is not None:
                    _log(proc.log_tail())
                    break
                continue
            _log(f"  {label}: {sc.name} counted ({time.monotonic() - t1:.0f} s)")
        walls["idle-end"] = await _idle(d, "idle-end", ctx.idle_s)
    finally:
        await asyncio.to_thread(T.stop, proc, 120.0)
    res["counts"] = d.counts()
    return res


# --- system calls: the same batches, natively, with strace attached -------------------------


def _tracer(pid: int, tid: str) -> int:
    with open(f"/proc/{pid}/task/{tid}/status", encoding="ascii", errors="replace") as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return 0


async def _until_traced(pid: int, tracer: int, timeout_s: float = 30.0) -> None:
    """Until every thread of `pid` is traced by `tracer` (strace has attached)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            if all(_tracer(pid, tid) == tracer for tid in os.listdir(f"/proc/{pid}/task")):
                return
        except OSError:
            pass
        await asyncio.sleep(0.05)
    raise RuntimeError(f"strace did not attach to {pid} within {timeout_s:.0f} s")


def parse_strace_c(text: str) -> dict[str, int]:
    """`strace -c` summary → syscall name → calls."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 5 or not parts[0].replace(".", "", 1).isdigit():
            continue
        name = parts[-1]
        if name != "total":
            out[name] = int(parts[3])
    return out


async def _straced(pid: int, out: Path, action: Callable[[], Awaitable[Any]]) -> tuple[
        dict[str, int], float]:
    """Syscalls `pid` made while `action` ran (plus the settle pause), and that wall time."""
    st = await asyncio.create_subprocess_exec(
        "strace", "-f", "-c", "-o", str(out), "-p", str(pid), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        await _until_traced(pid, st.pid)
        t0 = time.monotonic()
        await action()
        await asyncio.sleep(SETTLE_S)
        wall = time.monotonic() - t0
    finally:
        with contextlib.suppress(ProcessLookupError):
            st.send_signal(signal.SIGINT)
        await asyncio.wait_for(st.wait(), 60)
    return parse_strace_c(out.read_text(errors="replace")), wall


async def syscall_process(plan: Plan, ctx: Ctx) -> dict[str, Any]:
    """One native process of `plan`: per scenario the syscalls of the two batches (strace
    attached for each batch only), and of an idle spell."""
    label = _safe(f"{plan.name}.strace")
    target = await asyncio.to_thread(plan.start, T.Launch(env=HASHSEED), label)
    assert target.proc is not None
    pid = target.proc.pid
    res: dict[str, Any] = {"target": plan.name, "phases": {}, "errors": {}}
    phases: dict[str, Any] = res["phases"]
    k = 0

    async def traced(name: str, action: Callable[[], Awaitable[Any]]) -> None:
        nonlocal k
        k += 1
        calls, wall = await _straced(pid, ctx.wd / f"strace-{label}-{k}.txt", action)
        phases[name] = {"calls": calls, "wall_s": round(wall, 4)}

    try:
        await traced("idle", lambda: asyncio.sleep(ctx.idle_s))
        for sc in ctx.scenarios:
            if _eligible(target, sc) is not None or (await _probe(target, sc, ctx))[1]:
                continue
            try:
                await _load(target, sc, ctx.warmup, ctx)
                for n in ctx.counts:
                    await traced(f"{sc.name}.{n}", partial(_load, target, sc, n, ctx))
            except (OSError, TimeoutError, RuntimeError) as exc:
                res["errors"][sc.name] = f"{type(exc).__name__}: {exc}"
    finally:
        await asyncio.to_thread(T.stop, target.proc)
    return res


# --- instructions per µs ---------------------------------------------------------------------


async def rate_native() -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(RATE_SCRIPT), "--time", str(RATE_ITERATIONS[1]),
        stdout=asyncio.subprocess.PIPE, env={**os.environ, **dict(HASHSEED)})
    out, _ = await proc.communicate()
    import orjson

    return dict(orjson.loads(out))


async def rate_counted(n: int, ctx: Ctx) -> int:
    """Instructions of one whole run of the loop (`n` iterations) under callgrind."""
    out = ctx.wd / f"cg-rate-{n}"
    launch = callgrind_launch(out, ctx.setarch, at_start=True)
    proc = await asyncio.create_subprocess_exec(
        *launch.wrap, sys.executable, str(RATE_SCRIPT), str(n),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, **dict(launch.env)})
    await proc.wait()
    got = read_dumps(ctx.wd.glob(f"{out.name}.{proc.pid}"))
    if not got:
        raise RuntimeError(f"callgrind wrote no count for instr_rate.py {n}")
    return next(iter(got.values()))


# --- figures ---------------------------------------------------------------------------------


def figures(procs: Sequence[dict[str, Any]], counts: tuple[int, int]) -> dict[str, Any]:
    """target → scenario → instructions a request (mean over processes), `spread` across
    processes, per event for streams, and `idle_bound`: what the loop's idle wake-ups could
    add at most (the idle rate × the batches' wall-time difference, a request)."""
    n1, n2 = counts
    out: dict[str, dict[str, Any]] = {}
    for p in procs:
        c, w = p["counts"], p["walls"]
        rates = [c[k] / w[k] for k in ("idle-start", "idle-end") if k in c and w.get(k)]
        rate = max(rates) if rates else 0.0
        p["idle_rates"] = [round(r) for r in rates]
        for sc, events in p["events"].items():
            k1, k2 = f"{sc}.{n1}", f"{sc}.{n2}"
            if k1 not in c or k2 not in c:
                continue
            fig = out.setdefault(p["target"], {}).setdefault(sc, {"events": events, "runs": []})
            fig["runs"].append({"run": p["run"], "per_request": round((c[k2] - c[k1]) / (n2 - n1)),
                                "idle_bound": round(rate * max(w[k2] - w[k1], 0.0) / (n2 - n1)),
                                "count_n1": c[k1], "count_n2": c[k2],
                                "wall_n1_s": round(w[k1], 2), "wall_n2_s": round(w[k2], 2)})
    for scs in out.values():
        for fig in scs.values():
            vals = [r["per_request"] for r in fig["runs"]]
            mean = statistics.mean(vals)
            fig.update(per_request=round(mean), spread=round((max(vals) - min(vals)) / mean, 5),
                       idle_bound=max(r["idle_bound"] for r in fig["runs"]), processes=len(vals))
            if fig["events"] > 1:
                fig["per_event"] = round(mean / fig["events"])
    return out


def wakeups(procs: Sequence[dict[str, Any]], inst: dict[str, Any],
            counts: tuple[int, int]) -> dict[str, Any]:
    """How much the loop's timer wake-ups weigh in the figures. `idle_rate`: instructions a
    second with no request (the processes' range). `load_rate`: the least-squares slope,
    through the origin, of the difference between two processes' figures against the
    difference of their wall time a request (the two batches' difference over N2 − N1), over
    every figure counted in two or more processes: what a second more of wall time adds while
    serving. `share`: that rate × a figure's wall time a request, as a fraction of the figure
    (mean and max over figures and processes)."""
    dn = counts[1] - counts[0]
    idle = [r for p in procs for r in p.get("idle_rates", [])]
    sxy = sxx = 0.0
    pairs = 0
    walls: list[tuple[float, float]] = []  # (wall s a request, instructions a request)
    for scs in inst.values():
        for fig in scs.values():
            runs = fig["runs"]
            w = [(r["wall_n2_s"] - r["wall_n1_s"]) / dn for r in runs]
            walls += [(x, fig["per_request"]) for x in w]
            for a in range(len(runs)):
                for b in range(a + 1, len(runs)):
                    sxy += (w[a] - w[b]) * (runs[a]["per_request"] - runs[b]["per_request"])
                    sxx += (w[a] - w[b]) ** 2
                    pairs += 1
    out: dict[str, Any] = {"idle_rate": [min(idle), max(idle)] if idle else None,
                           "pairs": pairs}
    if sxx > 0:
        k = sxy / sxx
        shares = [k * x / f for x, f in walls if f]
        out.update(load_rate=round(k), share_mean=round(statistics.mean(shares), 5),
                   share_max=round(max(shares), 5))
        spreads, fitted = [], []
        for scs in inst.values():
            for fig in scs.values():
                vals = [r["per_request"] - k * (r["wall_n2_s"] - r["wall_n1_s"]) / dn
                        for r in fig["runs"]]
                mean = statistics.mean(vals)
                fig["per_request_fitted"] = round(mean)
                fig["spread_fitted"] = round((max(vals) - min(vals)) / mean, 5)
                spreads.append(fig["spread"])
                fitted.append(fig["spread_fitted"])
        out.update(spread_median=round(statistics.median(spreads), 5),
                   spread_max=max(spreads),
                   spread_fitted_median=round(statistics.median(fitted), 5),
                   spread_fitted_max=max(fitted))
    return out


def syscall_figures(procs: Sequence[dict[str, Any]], counts: tuple[int, int]) -> dict[str, Any]:
    """target → scenario → syscalls a request (total and by name); `idle_per_s`: what the
    process calls a second with no request (not subtracted: a batch lasts well under a
    second natively)."""
    n1, n2 = counts
    out: dict[str, dict[str, Any]] = {}
    for p in procs:
        ph = p["phases"]
        scs = out.setdefault(p["target"], {})
        idle = ph.get("idle")
        if idle:
            scs["idle_per_s"] = {k: round(v / idle["wall_s"], 2) for k, v in
                                 sorted(idle["calls"].items(), key=lambda kv: -kv[1])}
        for name in {k.rsplit(".", 1)[0] for k in ph if k != "idle"}:
            a, b = ph.get(f"{name}.{n1}"), ph.get(f"{name}.{n2}")
            if a is None or b is None:
                continue
            by = {call: (b["calls"].get(call, 0) - a["calls"].get(call, 0)) / (n2 - n1)
                  for call in set(a["calls"]) | set(b["calls"])}
            scs[name] = {"per_request": round(sum(by.values()), 2),
                         "by_name": {k: round(v, 2) for k, v in sorted(by.items(),
                                                                         key=lambda kv: -kv[1])
                                     if abs(v) >= 0.005}}
    return out


# --- the run ---------------------------------------------------------------------------------


def plans(args: argparse.Namespace, wd: Path, upstream_port: int, prefix: str) -> tuple[
        list[Plan], dict[str, str]]:
    """The targets to count, each with how to start one process of it; and those skipped."""
    skipped: dict[str, str] = {}
    out: list[Plan] = []

    def orca(name: str, *, responses: bool = True, **kw: Any) -> Plan:
        def start(launch: T.Launch, label: str) -> P.Target:
            extra = dict(kw)
            if extra.get("backend") == "redis":  # each process its own keys: no shared state
                extra["key_prefix"] = f"{prefix}-{label}"
            return P._orca(name, T.start_orca(label, wd, upstream_port, None, launch=launch,
                                              responses=responses, **extra),
                           responses=responses)
        return Plan(name, start)

    if args.no_floor:
        skipped["floor"] = "--no-floor"
    else:
        out.append(Plan("floor", lambda launch, label: P._orca(
            "floor", T.start_floor(wd, upstream_port, None, launch, name=label))))
    out.append(orca("orca-memory"))
    if args.no_quiet:
        skipped["orca-quiet"] = "--no-quiet"
    else:
        out.append(orca("orca-quiet", serve_args=("--quiet",)))
    for w in (w for w in args.what_if.split(",") if w):
        old = w.startswith("at:")
        variant = f"tree={T.export_revision(w.removeprefix('at:'), wd)}" if old else w
        out.append(orca(f"orca-memory[{w}]", responses=not old, what_if=variant))
    why = "--no-redis" if args.no_redis else T.redis_available(args.redis_url)
    if why is None:
        out.append(orca("orca-redis", backend="redis", redis_url=args.redis_url))
    else:
        skipped["orca-redis"] = why
    skipped["litellm"] = "not counted: under callgrind its start-up alone takes many minutes"
    return out, skipped


async def _guarded(sem: asyncio.Semaphore, what: str, coro: Callable[[], Awaitable[Any]],
                   failed: dict[str, str]) -> Any:
    async with sem:
        try:
            return await coro()
        except (OSError, RuntimeError, TimeoutError, subprocess.SubprocessError) as exc:
            failed[what] = f"{type(exc).__name__}: {str(exc)[:600]}"
            _log(f"{what} failed: {failed[what]}")
            return None


async def _measure_all(all_plans: list[Plan], ctx: Ctx, args: argparse.Namespace,
                       failed: dict[str, str]) -> dict[str, Any]:
    t0 = time.monotonic()
    native = await rate_native()  # first, while nothing of this run competes for the CPU
    _log(f"instr_rate.py natively: {native['best_us']:.3f} µs an iteration (best of "
         f"{native['runs']})")
    sys_procs = []
    if not args.no_strace:
        one = asyncio.Semaphore(1)
        for plan in all_plans:
            got = await _guarded(one, f"{plan.name} (strace)",
                                 partial(syscall_process, plan, ctx), failed)
            if got is not None:
                sys_procs.append(got)
                _log(f"{plan.name}: syscalls counted ({time.monotonic() - t0:.0f} s in)")
    sem = asyncio.Semaphore(args.instr_jobs)
    rate_jobs = [_guarded(sem, f"instr_rate {n}", partial(rate_counted, n, ctx), failed)
                 for n in RATE_ITERATIONS]
    count_jobs = [_guarded(sem, f"{plan.name} #{r + 1}", partial(count_process, plan, r + 1, ctx),
                           failed)
                  for r in range(args.instr_runs) for plan in all_plans]
    got = await asyncio.gather(*rate_jobs, *count_jobs)
    counted = got[:len(rate_jobs)]
    procs = [p for p in got[len(rate_jobs):] if p is not None]
    rate: dict[str, Any] = {"native": native, "iterations": list(RATE_ITERATIONS),
                            "counted": counted}
    if None not in counted:
        per_iter = (counted[1] - counted[0]) / (RATE_ITERATIONS[1] - RATE_ITERATIONS[0])
        rate.update(instructions_per_iteration=round(per_iter),
                    instructions_per_us=round(per_iter / native["best_us"]),
                    instructions_per_us_median=round(per_iter / native["median_us"]))
    _log(f"counted in {time.monotonic() - t0:.0f} s")
    return {"rate": rate, "processes": procs, "syscall_processes": sys_procs}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole `--instructions` run: its JSON document."""
    missing = missing_tools(strace=not args.no_strace)
    if "valgrind" in missing or "callgrind_control" in missing:
        raise SystemExit("--instructions needs valgrind (callgrind) on PATH: "
                         + ", ".join(missing))
    counts = tuple(int(x) for x in args.instr_counts.split(","))
    if len(counts) != 2 or not 0 < counts[0] < counts[1]:
        raise SystemExit(f"--instr-counts wants N1,N2 with 0 < N1 < N2; got {args.instr_counts!r}")
    setarch = _setarch_works()
    scenarios = P._chosen(args.scenarios or DEFAULT_SCENARIOS)
    machine = T.machine_facts()
    wd = T.workdir()
    prefix = T.unique_prefix()
    skipped: dict[str, str] = {}
    failed: dict[str, str] = {}
    notes: dict[str, str] = {}
    if "strace" in missing:
        skipped["syscalls"] = "strace is not on PATH"
    elif args.no_strace:
        skipped["syscalls"] = "--no-strace"
    if not setarch:
        notes["aslr"] = "setarch -R unavailable or refused: address-space randomization stays on"
    redis_used = False
    try:
        upstream = T.start_fake_upstream(wd, None)
        try:
            all_plans, skipped_targets = plans(args, wd, upstream.port, prefix)
            skipped.update(skipped_targets)
            redis_used = any(p.name == "orca-redis" for p in all_plans)
            ctx = Ctx(wd, scenarios, (counts[0], counts[1]), args.warmup, args.instr_idle,
                      setarch)
            got = asyncio.run(_measure_all(all_plans, ctx, args, failed))
        finally:
            T.stop(upstream)
    finally:
        if redis_used:
            notes["redis_keys_deleted"] = str(T.redis_cleanup(args.redis_url, prefix))
        shutil.rmtree(wd, ignore_errors=True)
    from bench.bench_footprint import _source

    machine["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    procs = got["processes"]
    doc: dict[str, Any] = {
        "mode": "instructions", "machine": machine, "source": _source(),
        "settings": {"counts": list(counts), "warmup": args.warmup, "runs": args.instr_runs,
                     "jobs": args.instr_jobs, "idle_s": args.instr_idle,
                     "scenarios": [sc.name for sc in scenarios], "what_if": args.what_if,
                     "setarch_R": setarch, "valgrind": _version(["valgrind", "--version"]),
                     "strace": _version(["strace", "-V"]) if "syscalls" not in skipped else None,
                     "redis_url": args.redis_url if redis_used else None},
        "skipped": skipped, "failed": failed, "notes": notes, "rate": got["rate"],
        "instructions": figures(procs, ctx.counts),
        "wakeups": None,
        "syscalls": syscall_figures(got["syscall_processes"], ctx.counts),
        "unserved": {p["target"]: p["unserved"] for p in procs if p["unserved"] and p["run"] == 1},
        "errors": {f"{p['target']} #{p['run']}": p["errors"] for p in procs if p["errors"]},
        "processes": [{k: v for k, v in p.items() if k not in ("unserved",)} for p in procs],
    }
    from bench.instr_report import comparisons

    doc["wakeups"] = wakeups(procs, doc["instructions"], ctx.counts)
    doc["comparisons"] = comparisons(doc)
    return doc


def _version(argv: list[str]) -> str | None:
    try:
        got = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (got.stdout or got.stderr).strip().splitlines()[0] if got.returncode == 0 else None
