"""Proxy benchmark: what `orca serve` adds to a request, beside a direct call and LiteLLM (SPEC §12).

    python bench/bench_proxy.py              # full run (2,000 requests a figure, 3 rounds)
    python bench/bench_proxy.py --quick      # a smoke run in about a minute
    python bench/bench_proxy.py --json       # one JSON document on stdout, nothing else
    python bench/bench_proxy.py --instructions  # instructions a request, counted by callgrind

One run starts a fast fake upstream (`bench/fake_upstream.py`), `orca serve` with the memory
store, `orca serve` with Redis (db 15, a unique key prefix deleted afterwards) and LiteLLM
proxy 1.108.7 (its own virtualenv, installed on first use; skipped with the reason when that
fails), then measures every target on the same scenarios in interleaved rounds:

* a 10 KB coding-agent body at concurrency 1: JSON latency, and a 36-event stream's time to
  first byte and whole-stream time; added latency = target minus direct in the same round;
* the same in the Responses API (`/v1/responses`, a 10 KB Codex-shaped body) beside the Chat
  Completions rows, and `orca serve --quiet` (no request log) beside the default `orca serve`,
  so the Responses path's and the request log's costs are differences within one run;
* the same 10 KB request and 36-event stream translated (SPEC §13.2): a Messages client served
  by the Chat Completions channel (`messages_to_chat_*`) and a Chat Completions client by the
  Anthropic one (`chat_to_messages_*`), beside the same-format `json_c1` / `anthropic_json_c1`
  rows (whose routers pick a channel of the client's own format); direct is the fake upstream
  asked in the client's format;
* CPU per request of the proxy process (its own `utime + stime`) at concurrency 1 and 16,
  and one worker's throughput at concurrency 16, for JSON and the stream; at concurrency 16
  also `orca serve --workers 2` with Redis (orca-redis-2w), its CPU summed over the workers;
* token-paced streams (events 1 ms apart): CPU per event at concurrency 1 and 16;
* the same latest turn behind 10 KB, 200 KB and 1 MB transcripts (orca with memory).

The proxies run alone on CPU 1; the fake upstream and this load generator share CPU 0;
orca-redis-2w alone is not pinned (two workers on one core would measure one core). Every
figure is the median over the rounds; the JSON keeps each round. The machine may be shared:
before each figure the run waits (briefly) for other processes to go quiet, and it records
how many cores they used meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# These resolve only once the repository root is on sys.path (the script may run from anywhere).
from bench import proxy_targets as T
from bench.fake_upstream import STREAM_EVENTS
from bench.loadgen import Endpoint, fetch, percentile, run_load
from bench.proxy_bodies import SIZES, agent_body, encode

SUMMARY = "Measure what orca serve adds to a request (SPEC §12), beside direct and LiteLLM."
REDIS_URL = "redis://127.0.0.1:6379/15"
PROXY_CPU, LOAD_CPU = 1, 0


_ALL = ("direct", "floor", "orca-memory", "orca-quiet", "orca-redis", "litellm")


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    api: str = "openai"
    size: str = "10KB"
    stream: bool = False
    paced: bool = False
    concurrency: int = 1
    share: float = 1.0  # of --requests
    targets: tuple[str, ...] = _ALL
    to: str = ""  # the channel's wire format when orca translates ("" = the client's own)

    @property
    def route(self) -> str:
        """What a target names its model by: the client's format, `a>b` when translated to
        b, or "paced"."""
        return "paced" if self.paced else f"{self.api}>{self.to}" if self.to else self.api


_CORE = ("direct", "floor", "orca-memory", "orca-redis")
_RESPONSES = ("direct", "floor", "orca-memory", "orca-quiet", "orca-redis")
_TRANSLATED = ("direct", "orca-memory", "orca-redis")
_THROUGHPUT = (*_ALL, "orca-redis-2w")  # two workers: a throughput question only
SCENARIOS = (
    Scenario("json_c1"),
    Scenario("stream_c1", stream=True),
    Scenario("json_c16", concurrency=16, targets=_THROUGHPUT),
    Scenario("stream_c16", stream=True, concurrency=16, targets=_THROUGHPUT),
    Scenario("paced_c1", stream=True, paced=True, share=0.1, targets=_CORE),
    Scenario("paced_c16", stream=True, paced=True, concurrency=16, share=0.5, targets=_CORE),
    Scenario("anthropic_json_c1", api="anthropic", share=0.25, targets=_CORE),
    Scenario("anthropic_stream_c1", api="anthropic", stream=True, share=0.25, targets=_CORE),
    Scenario("responses_json_c1", api="responses", targets=_RESPONSES),
    Scenario("responses_stream_c1", api="responses", stream=True, targets=_RESPONSES),
    Scenario("responses_json_c16", api="responses", concurrency=16, targets=_RESPONSES),
    Scenario("responses_stream_c16", api="responses", stream=True, concurrency=16,
             targets=_RESPONSES),
    Scenario("messages_to_chat_json_c1", api="anthropic", to="openai", targets=_TRANSLATED),
    Scenario("messages_to_chat_stream_c1", api="anthropic", to="openai", stream=True,
             targets=_TRANSLATED),
    Scenario("chat_to_messages_json_c1", to="anthropic", targets=_TRANSLATED),
    Scenario("chat_to_messages_stream_c1", to="anthropic", stream=True, targets=_TRANSLATED),
    Scenario("growth_10KB", share=0.25, targets=("direct", "orca-memory")),
    Scenario("growth_200KB", size="200KB", share=0.25, targets=("direct", "orca-memory")),
    Scenario("growth_1MB", size="1MB", share=0.0625, targets=("direct", "orca-memory")),
)


@dataclass
class Target:
    """Where one contender listens and how a client names its models there."""

    name: str
    port: int
    proc: T.Proc | None = None  # None: the fake upstream itself (direct)
    headers: tuple[tuple[str, str], ...] = ()
    # Scenario.route ("openai" / "anthropic" / "responses", "anthropic>openai" …, "paced")
    # → the model a client names
    models: dict[str, str] = field(default_factory=dict)

    def model(self, sc: Scenario) -> str:
        return self.models[sc.route]

    def serves(self, sc: Scenario) -> bool:
        return sc.route in self.models


def _direct(upstream: T.Proc) -> Target:
    """The fake upstream asked in the client's own format (a translated row's baseline)."""
    return Target("direct", upstream.port, models={
        "openai": "fake-base", "paced": "fake-paced", "anthropic": "fake-claude-base",
        "responses": "fake-base", "anthropic>openai": "fake-claude-base",
        "openai>anthropic": "fake-base"})


def _orca(name: str, proc: T.Proc, *, responses: bool = True) -> Target:
    """`responses` False: a revision from before the Responses API and translation (no
    `/v1/responses`, no translated scenario). Router `coding` serves on the Chat Completions
    channel (it picks its cheapest model) and `claude` on the Anthropic one only
    (`T.orca_config`): a Messages client of `claude` and a Chat Completions client of `coding`
    go native, the other two pairs translated."""
    models = {"openai": "orca/coding", "paced": "orca/paced", "anthropic": "orca/claude"}
    if responses:
        models.update({"responses": "orca/coding", "anthropic>openai": "orca/coding",
                       "openai>anthropic": "orca/claude"})
    return Target(name, proc.port, proc, models=models)


def _litellm(proc: T.Proc) -> Target:
    return Target("litellm", proc.port, proc, (("Authorization", proc.notes["authorization"]),),
                  models={"openai": "bench-model", "paced": "bench-paced"})


def _runs(t: Target, sc: Scenario) -> bool:
    """A what-if target (`orca-memory[asyncio]`) runs what `orca-memory` runs, in the wire
    formats it serves."""
    return t.name.split("[", 1)[0] in sc.targets and t.serves(sc)


_PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages",
          "responses": "/v1/responses"}


def _path(sc: Scenario) -> str:
    return _PATHS[sc.api]


def _cpu_stat() -> list[int]:
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:]]


def _busy_ticks() -> int:
    """Clock ticks all CPUs spent running processes since boot."""
    v = _cpu_stat()
    return v[0] + v[1] + v[2]  # user, nice, system (softirq time is nobody's process time)


def _self_ticks() -> int:
    t = os.times()
    return round((t.user + t.system) * T.CLK_TCK)


async def _wait_quiet(max_wait_s: float, log: Any, threshold: float = 0.25) -> None:
    """Wait (at most `max_wait_s`) until other processes use under `threshold` of a core:
    the machine is shared, and a figure taken beside someone's test run measures them."""
    end = time.monotonic() + max_wait_s
    while True:
        b0 = _busy_ticks()
        await asyncio.sleep(0.3)
        cores = (_busy_ticks() - b0) / T.CLK_TCK / 0.3
        if cores < threshold or time.monotonic() >= end:
            if cores >= threshold:
                log(f"  (machine still busy: {cores:.2f} cores used by others; measuring anyway)")
            return
        await asyncio.sleep(1.0)


async def _measure(t: Target, sc: Scenario, rnd: int, requests: int, warmup: int,
                   max_s: float, bodies: dict[tuple[str, str, bool, str], bytes],
                   upstream_pid: int) -> dict[str, Any]:
    key = (sc.api, sc.size, sc.stream, t.model(sc))
    body = bodies.get(key)
    if body is None:
        body = bodies[key] = encode(agent_body(sc.api, SIZES[sc.size], model=key[3],  # type: ignore[arg-type]
                                               stream=sc.stream))
    ep = Endpoint("127.0.0.1", t.port, _path(sc), t.headers)
    prefix = f"{sc.name}-r{rnd}"
    try:
        await run_load(ep, body, requests=max(warmup, 2 * sc.concurrency),
                       concurrency=sc.concurrency, max_s=max_s, session_prefix=prefix)
        gc.collect()
        gc.disable()
        pid = t.proc.pid if t.proc is not None else upstream_pid
        c0, u0 = T.cpu_sample(pid), T.cpu_sample(upstream_pid)
        b0, s0 = _busy_ticks(), _self_ticks()
        res = await run_load(ep, body, requests=requests, concurrency=sc.concurrency,
                             max_s=max_s, session_prefix=prefix)
        b1, s1 = _busy_ticks(), _self_ticks()
        c1, u1 = T.cpu_sample(pid), T.cpu_sample(upstream_pid)
    finally:
        gc.enable()
    n = max(res.count, 1)
    ms = 1e-6
    return {
        "round": rnd, "requests": res.count, "errors": res.errors, "wall_s": round(res.wall_s, 3),
        "statuses": {str(k): v for k, v in res.statuses.items()}, "body_bytes": len(body),
        "response_bytes": res.body_bytes, "rps": round(res.count / res.wall_s, 1) if res.wall_s else 0.0,
        "p50_ms": percentile(res.total_ns, 50) * ms, "p99_ms": percentile(res.total_ns, 99) * ms,
        "ttfb_p50_ms": percentile(res.first_byte_ns, 50) * ms,
        "ttfb_p99_ms": percentile(res.first_byte_ns, 99) * ms,
        # the proxy's CPU (for direct: the fake upstream's own, for reference)
        "cpu_ms_per_req": (c1.ticks - c0.ticks) * 1000.0 / T.CLK_TCK / n,
        "cpu_ms_per_req_sched": (c1.sched_ns - c0.sched_ns) * ms / n,
        "upstream_cpu_ms_per_req": (u1.sched_ns - u0.sched_ns) * ms / n,
        "client_cpu_ms_per_req": (s1 - s0) * 1000.0 / T.CLK_TCK / n,
        # cores other processes used meanwhile: the machine's noise during this figure
        "foreign_cores": max(0.0, ((b1 - b0) - (c1.ticks - c0.ticks) - (s1 - s0)
                                   - (0 if t.proc is None else u1.ticks - u0.ticks))
                             / T.CLK_TCK / max(res.wall_s, 1e-9)),
    }


_CHECKED = ("json_c1", "stream_c1", "responses_json_c1", "responses_stream_c1",
            "messages_to_chat_json_c1", "messages_to_chat_stream_c1",
            "chat_to_messages_json_c1", "chat_to_messages_stream_c1")
_STREAM_END = {"openai": b"data: [DONE]", "anthropic": b"event: message_stop"}


async def _check(targets: Sequence[Target]) -> None:
    """One JSON and one stream request through every target in Chat Completions (and the
    Responses API, and translated, where it serves them): 200 and 36 events, or fail. A
    translated stream has the client format's own events (not 36): it must end with its
    final one."""
    for t in targets:
        for sc in (s for s in SCENARIOS if s.name in _CHECKED):
            if not t.serves(sc):
                continue
            body = encode(agent_body(sc.api, SIZES["10KB"],  # type: ignore[arg-type]
                                     model=t.model(sc), stream=sc.stream))
            status, got = await fetch(Endpoint("127.0.0.1", t.port, _path(sc), t.headers), body)
            events = got.count(b"\n\n")
            if sc.to and t.proc is not None:
                last = [e for e in got.split(b"\n\n") if e.strip()][-1:] or [b""]
                whole = last[0].startswith(_STREAM_END[sc.api]) if sc.stream else True
            else:
                whole = not sc.stream or events == STREAM_EVENTS
            if status != 200 or not whole:
                raise RuntimeError(f"{t.name}: {sc.name} answered {status} with {events} "
                                   f"events: {got[:300]!r}")


async def _run_rounds(targets: dict[str, Target], args: argparse.Namespace,
                      upstream_pid: int, log: Any, failed: dict[str, str],
                      restart: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every figure of every target, round after round; a target that breaks (its process
    died, its connections fail) is dropped from the rest of the run with the reason."""
    await _check(list(targets.values()))
    bodies: dict[tuple[str, str, bool, str], bytes] = {}
    rows: list[dict[str, Any]] = []
    order = list(targets)
    chosen = _chosen(args.scenarios)
    for rnd in range(args.rounds):
        if rnd and restart:
            for name, start in restart.items():
                if name in targets and name not in failed:
                    targets[name] = start()
            await _check([targets[n] for n in restart if n in targets and n not in failed])
        rotated = order[rnd % len(order):] + order[:rnd % len(order)]
        for sc in chosen:
            for name in rotated:
                if not _runs(targets[name], sc) or name in failed:
                    continue
                await _wait_quiet(args.quiet_wait, log)
                n = max(2 * sc.concurrency, int(args.requests * sc.share))
                if name == "litellm":
                    n = min(n, args.litellm_requests)
                t0 = time.perf_counter()
                try:
                    row = await _measure(targets[name], sc, rnd, n, args.warmup,
                                         args.max_seconds, bodies, upstream_pid)
                except (OSError, TimeoutError) as exc:
                    proc = targets[name].proc
                    code = None if proc is None else proc.popen.poll()
                    failed[name] = (f"{sc.name}, round {rnd + 1}: {type(exc).__name__}: {exc}"
                                    + ("" if code is None else f"; the process exited ({code})"))
                    log(f"{name} failed: {failed[name]}\n"
                        + ("" if proc is None else proc.log_tail()))
                    continue
                row.update(target=name, scenario=sc.name)
                rows.append(row)
                log(f"round {rnd + 1}/{args.rounds} {sc.name:<20} {name:<12} "
                    f"{row['requests']:>5} req  p50 {row['p50_ms']:7.3f} ms  "
                    f"cpu {row['cpu_ms_per_req']:7.3f} ms/req  {row['rps']:8.1f} req/s  "
                    f"({time.perf_counter() - t0:.1f} s)")
    return rows


def _chosen(spec: str) -> list[Scenario]:
    """`--scenarios json_c1,responses_` → the scenarios whose name starts with any entry; an
    entry ending in `$` names one scenario exactly (`json_c1$`: not json_c16)."""
    if not spec:
        return list(SCENARIOS)
    wanted = [w.strip() for w in spec.split(",") if w.strip()]
    chosen = [sc for sc in SCENARIOS
              if any(sc.name == w[:-1] if w.endswith("$") else sc.name.startswith(w)
                     for w in wanted)]
    if not chosen:
        raise SystemExit(f"--scenarios {spec!r} names none of: "
                         + ", ".join(sc.name for sc in SCENARIOS))
    return chosen


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """Median per (target, scenario) of every figure, plus the paired added latencies."""
    direct = {(r["scenario"], r["round"]): r for r in rows if r["target"] == "direct"}
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        d = direct.get((r["scenario"], r["round"]))
        if r["target"] != "direct" and d is not None:
            for f in ("p50_ms", "p99_ms", "ttfb_p50_ms", "ttfb_p99_ms"):
                r["added_" + f] = r[f] - d[f]
        grouped.setdefault((r["target"], r["scenario"]), []).append(r)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for (target, scenario), rs in grouped.items():
        med: dict[str, float] = {}
        for f, v in rs[0].items():
            if isinstance(v, (int, float)) and f != "round":
                vals = [float(r[f]) for r in rs]
                med[f] = round(statistics.median(vals), 4)
                if f == "p50_ms" and len(vals) > 1:
                    med["p50_spread"] = round((max(vals) - min(vals)) / max(med[f], 1e-9), 3)
        med["rounds"] = len(rs)
        out.setdefault(target, {})[scenario] = med
    for target, figures in out.items():
        for paced, burst in (("paced_c1", "stream_c1"), ("paced_c16", "stream_c16")):
            p, b = figures.get(paced), figures.get(burst)
            if p is None:
                continue
            p["cpu_ms_per_event"] = round(p["cpu_ms_per_req"] / STREAM_EVENTS, 5)
            if b is not None:
                # what pacing adds per event: each event its own read, tap and write
                p["cpu_ms_per_event_marginal"] = round(
                    (p["cpu_ms_per_req"] - b["cpu_ms_per_req"]) / (STREAM_EVENTS - 1), 5)
    return out


def _in_process_costs() -> list[dict[str, Any]]:
    """orjson parse and the delta score of each growth body, timed here (not the proxy's)."""
    from orca_cli.routing.features import Scorer

    scorer = Scorer()
    out = []
    for size in ("10KB", "200KB", "1MB"):
        body = agent_body("openai", SIZES[size], model="orca/coding", stream=False)
        raw = encode(body)
        loops = max(5, 2_000_000 // len(raw))
        t0 = time.perf_counter_ns()
        for _ in range(loops):
            orjson.loads(raw)
        parse = (time.perf_counter_ns() - t0) / loops / 1000
        t0 = time.perf_counter_ns()
        for _ in range(loops):
            scorer.delta(body, "openai")
        delta = (time.perf_counter_ns() - t0) / loops / 1000
        out.append({"size": size, "body_bytes": len(raw), "parse_us": round(parse, 1),
                    "delta_us": round(delta, 1)})
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=SUMMARY)
    p.add_argument("--quick", action="store_true", help="300 requests a figure, one round")
    p.add_argument("--requests", type=int, default=None, help="requests per figure (2000)")
    p.add_argument("--litellm-requests", type=int, default=None,
                   help="cap for LiteLLM's figures, ~11-37 ms each (500; quick 100)")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (3; quick 1)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up requests (100; quick 30)")
    p.add_argument("--max-seconds", type=float, default=60.0, help="time cap per figure")
    p.add_argument("--no-litellm", action="store_true", help="skip the LiteLLM target")
    p.add_argument("--no-install", action="store_true", help="never pip-install LiteLLM")
    p.add_argument("--no-save", action="store_true",
                   help="do not keep a full run's JSON in bench/results/proxy-<date>-<HHMM>.json "
                   "(the figures a later run without LiteLLM quotes)")
    p.add_argument("--no-floor", action="store_true",
                   help="skip the floor target (bench/floor_proxy.py: the serving stack alone)")
    p.add_argument("--no-redis", action="store_true",
                   help="skip the Redis targets (orca-redis and orca-redis-2w)")
    p.add_argument("--no-workers", action="store_true",
                   help="skip orca-redis-2w (`orca serve --workers 2` with Redis, unpinned; "
                        "json_c16 and stream_c16 only)")
    p.add_argument("--no-quiet", action="store_true",
                   help="skip orca-quiet (`orca serve --quiet`: no request log), the target "
                        "the request log's cost is measured against")
    p.add_argument("--scenarios", default="", metavar="NAMES",
                   help="only the scenarios whose name starts with one of these "
                        "(comma-separated, e.g. json_c1,stream_c1,responses_; a trailing $ "
                        "matches a name exactly: json_c1$ is not json_c16)")
    p.add_argument("--what-if", default="", help="also measure bench/orca_what_if.py "
                   "variants beside orca-memory, e.g. nodelay,asyncio; at:<git-rev> runs "
                   "that commit's orca_cli (a before/after in one run)")
    p.add_argument("--quiet-wait", type=float, default=None,
                   help="seconds to wait for other processes to go quiet before a figure "
                        "(10; quick 5)")
    p.add_argument("--fresh", action="store_true",
                   help="start orca-memory and orca-quiet anew before every round after the "
                        "first, so each round's figure comes from another process: the median "
                        "then spans processes, whose layout in memory alone moves CPU per "
                        "request by more than the request log costs")
    p.add_argument("--redis-url", default=REDIS_URL,
                   help=f"the Redis target's database ({REDIS_URL}; its keys get a unique "
                        "prefix and are deleted at the end)")
    p.add_argument("--instructions", action="store_true",
                   help="count instructions a request instead of timing: every proxy under "
                        "valgrind --tool=callgrind, (count(N2) - count(N1)) / (N2 - N1) per "
                        "scenario; syscalls a request from strace (bench/proxy_instructions.py)")
    p.add_argument("--instr-counts", default="40,240", metavar="N1,N2",
                   help="--instructions: the two batch sizes, after the same warm-up (40,240)")
    p.add_argument("--instr-runs", type=int, default=2,
                   help="--instructions: processes per target; the spread between them is "
                        "the figure's repeatability (2)")
    p.add_argument("--instr-jobs", type=int, default=os.cpu_count() or 1,
                   help="--instructions: processes under callgrind at once (nproc)")
    p.add_argument("--instr-idle", type=float, default=3.0, metavar="S",
                   help="--instructions: seconds of idle counted for the idle rate (3)")
    p.add_argument("--no-strace", action="store_true",
                   help="--instructions: no syscall counts")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument("--render", type=Path, default=None, metavar="FILE",
                   help="print the tables of a saved --json document and exit")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.render is not None:
        saved = orjson.loads(args.render.read_bytes())
        if saved.get("mode") == "instructions":
            from bench.instr_report import render as render_instructions

            render_instructions(saved)
        else:
            from bench.proxy_report import render

            render(saved)
        return 0
    if args.instructions:
        return _instructions(args)
    quick = args.quick
    args.requests = args.requests or (300 if quick else 2000)
    args.litellm_requests = args.litellm_requests or (100 if quick else 500)
    args.rounds = args.rounds or (1 if quick else 3)
    args.warmup = args.warmup or (30 if quick else 100)
    if args.quiet_wait is None:
        args.quiet_wait = 5.0 if quick else 10.0
    what_ifs = [w for w in args.what_if.split(",") if w]

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    machine = T.machine_facts()
    pinned = (os.cpu_count() or 1) >= 2
    proxy_cpu, load_cpu = (PROXY_CPU, LOAD_CPU) if pinned else (None, None)
    wd = T.workdir()
    procs: list[T.Proc] = []
    skipped: dict[str, str] = {}
    notes: dict[str, str] = {}
    prefixes: list[str] = []  # each Redis target's own, its keys deleted at the end
    stat0 = _cpu_stat()
    failed: dict[str, str] = {}
    try:
        upstream = T.start_fake_upstream(wd, load_cpu)
        procs.append(upstream)
        targets = {"direct": _direct(upstream)}
        if not args.no_floor:
            floor = T.start_floor(wd, upstream.port, proxy_cpu)
            procs.append(floor)
            targets["floor"] = _orca("floor", floor)  # it maps the same model names
        else:
            skipped["floor"] = "--no-floor"
        mem = T.start_orca("orca-memory", wd, upstream.port, proxy_cpu)
        procs.append(mem)
        targets["orca-memory"] = _orca("orca-memory", mem)
        if args.no_quiet:
            skipped["orca-quiet"] = "--no-quiet"
        else:
            quiet = T.start_orca("orca-quiet", wd, upstream.port, proxy_cpu,
                                 serve_args=("--quiet",))
            procs.append(quiet)
            targets["orca-quiet"] = _orca("orca-quiet", quiet)
        restart: dict[str, Any] = {}
        if args.fresh:
            def anew(name: str, serve_args: tuple[str, ...] = ()) -> Any:
                def start() -> Target:
                    T.stop(targets[name].proc)  # type: ignore[arg-type]
                    proc = T.start_orca(name, wd, upstream.port, proxy_cpu,
                                        serve_args=serve_args)
                    procs.append(proc)
                    return _orca(name, proc)
                return start
            restart["orca-memory"] = anew("orca-memory")
            if "orca-quiet" in targets:
                restart["orca-quiet"] = anew("orca-quiet", ("--quiet",))
        for w in what_ifs:
            name = f"orca-memory[{w}]"
            old = w.startswith("at:")
            # An earlier revision runs with no request-log flags and, lacking the Responses
            # API, with a config without it; it measures only the formats it serves.
            variant = f"tree={T.export_revision(w.removeprefix('at:'), wd)}" if old else w
            proc = T.start_orca(name.replace("[", "-").replace(":", "-").rstrip("]"), wd,
                                upstream.port, proxy_cpu, what_if=variant,
                                responses=not old)
            procs.append(proc)
            targets[name] = _orca(name, proc, responses=not old)
        why = "--no-redis" if args.no_redis else T.redis_available(args.redis_url)
        if why is None:
            prefixes.append(T.unique_prefix())
            red = T.start_orca("orca-redis", wd, upstream.port, proxy_cpu, backend="redis",
                               redis_url=args.redis_url, key_prefix=prefixes[-1])
            procs.append(red)
            targets["orca-redis"] = _orca("orca-redis", red)
        else:
            skipped["orca-redis"] = why
        why = why or ("--no-workers" if args.no_workers else None)
        if why is None:
            # Not pinned: two workers on CPU 1 would measure that one core again. They share
            # both cores with the fake upstream and the load generator, so its c16 figure is
            # what two workers give on this machine with the load beside them.
            prefixes.append(T.unique_prefix())
            two = T.start_orca("orca-redis-2w", wd, upstream.port, None, backend="redis",
                               redis_url=args.redis_url, key_prefix=prefixes[-1],
                               serve_args=("--workers", "2"))
            procs.append(two)
            T.wait_workers(two, 2)
            targets["orca-redis-2w"] = _orca("orca-redis-2w", two)
        else:
            skipped["orca-redis-2w"] = why
        if args.no_litellm:
            skipped["litellm"] = "--no-litellm"
        else:
            log("litellm: checking bench/.venv-litellm (a first run installs it, a few minutes)")
            exe, why = T.ensure_litellm(not args.no_install, wd / "litellm-pip.log")
            notes["litellm"] = why
            if exe is None:
                skipped["litellm"] = why
            else:
                try:
                    lit = T.start_litellm(exe, wd, upstream.port, proxy_cpu)
                    procs.append(lit)
                    targets["litellm"] = _litellm(lit)
                except RuntimeError as exc:
                    skipped["litellm"] = f"did not start: {str(exc).splitlines()[0]}"
        if load_cpu is not None:
            os.sched_setaffinity(0, {load_cpu})
        try:
            import uvloop
            rows = uvloop.run(_run_rounds(targets, args, upstream.pid, log, failed, restart))
        except ImportError:
            rows = asyncio.run(_run_rounds(targets, args, upstream.pid, log, failed, restart))
    finally:
        for p in procs:
            T.stop(p)
        if prefixes:
            notes["redis_keys_deleted"] = str(sum(T.redis_cleanup(args.redis_url, p)
                                                  for p in prefixes))
        shutil.rmtree(wd, ignore_errors=True)
    stat1 = _cpu_stat()
    delta = [b - a for a, b in zip(stat0, stat1, strict=False)]
    machine["steal_pct"] = round(100.0 * delta[7] / max(sum(delta), 1), 2) if len(delta) > 7 else 0.0
    machine["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    machine["pinning"] = (("proxies on CPU 1; fake upstream and load generator on CPU 0"
                           + ("; orca-redis-2w unpinned" if "orca-redis-2w" in targets else ""))
                          if pinned else "one CPU: nothing pinned")
    doc: dict[str, Any] = {
        "machine": machine,
        "settings": {"requests": args.requests, "litellm_requests": args.litellm_requests,
                     "rounds": args.rounds, "warmup": args.warmup, "quick": quick,
                     "scenarios": args.scenarios or "all", "what_if": args.what_if,
                     "max_seconds": args.max_seconds, "stream_events": STREAM_EVENTS},
        "skipped": {**skipped, **{k: f"failed mid-run ({v})" for k, v in failed.items()}},
        "notes": notes,
        "summary": summarize(rows), "in_process": _in_process_costs(), "rows": rows,
    }
    from bench.proxy_report import checks, comparisons, render

    doc["spec"] = checks(doc["summary"])
    doc["comparisons"] = comparisons(doc["summary"])
    if not quick and not args.no_save and not args.scenarios:
        saved = _result_path("proxy")
        saved.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        log(f"saved {saved.relative_to(ROOT)}")
    if args.json:
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        render(doc)
    return 0


def _result_path(kind: str) -> Path:
    """Where a run saves its JSON: `bench/results/<kind>-<UTC date>-<HHMM>.json`, so that a
    second run on one day keeps the first one's file (a suffix when even the minute is taken)."""
    from bench.proxy_report import RESULTS

    RESULTS.mkdir(exist_ok=True)
    stem = f"{kind}-{time.strftime('%Y-%m-%d-%H%M', time.gmtime())}"
    path, n = RESULTS / f"{stem}.json", 2
    while path.exists():
        path, n = RESULTS / f"{stem}-{n}.json", n + 1
    return path


def _instructions(args: argparse.Namespace) -> int:
    """`--instructions`: instructions (and syscalls) a request of each proxy process, counted
    rather than timed (bench/proxy_instructions.py); saved as
    bench/results/instructions-<date>-<HHMM>.json unless --no-save."""
    from bench.instr_report import render
    from bench.proxy_instructions import run

    args.warmup = args.warmup or 20
    doc = run(args)
    if not args.no_save:
        saved = _result_path("instructions")
        saved.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        print(f"saved {saved.relative_to(ROOT)}", file=sys.stderr, flush=True)
    if args.json:
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        render(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
