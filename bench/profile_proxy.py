"""Profile `orca serve` while it serves a few hundred benchmark requests (SPEC §12: profile
before changing anything).

    python bench/profile_proxy.py                      # py-spy, JSON and stream, c1
    python bench/profile_proxy.py --profiler cprofile  # cProfile (deterministic, slower)
    python bench/profile_proxy.py --what-if asyncio    # a bench/orca_what_if.py variant

The setup is `bench_proxy.py`'s: the fake upstream and this load generator on CPU 0, orca
(memory store) alone on CPU 1, the same 10 KB agent body. py-spy (installed on first use into
`bench/.venv-tools`) attaches to the running server only for the measured requests and
samples without pausing it, so start-up and warm-up are not in the profile; its idle samples
(the loop waiting in epoll) are left out, so shares are shares of CPU. cProfile profiles the
whole process, start-up included, and slows every Python call.

Prints the top functions by self time and by inclusive time, and the self time per package.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pstats
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import proxy_targets as T
from bench.loadgen import Endpoint, run_load
from bench.proxy_bodies import SIZES, agent_body, encode

TOOLS_VENV = ROOT / "bench" / ".venv-tools"


def _py_spy() -> Path:
    exe = TOOLS_VENV / "bin" / "py-spy"
    if not exe.exists():
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", str(TOOLS_VENV)], check=True, timeout=300)
        subprocess.run([str(TOOLS_VENV / "bin" / "python"), "-m", "pip", "install", "-q",
                        "py-spy"], check=True, timeout=900)
    return exe


async def _load(port: int, scenarios: Sequence[str], requests: int, concurrency: int,
                warm: bool, size: str) -> None:
    for sc in scenarios:
        body = encode(agent_body("openai", SIZES[size],
                                 model="orca/paced" if sc == "paced" else "orca/coding",
                                 stream=sc in ("stream", "paced")))
        ep = Endpoint("127.0.0.1", port, "/v1/chat/completions")
        res = await run_load(ep, body, requests=min(50, requests) if warm else requests,
                             concurrency=concurrency, max_s=120.0, session_prefix=f"prof-{sc}")
        if res.errors:
            raise RuntimeError(f"{res.errors} failed requests ({res.statuses})")


def _package(frame: str) -> str:
    path = frame[frame.rfind("(") + 1:].rstrip(")")
    for marker, name in (("orca_cli/", None), ("site-packages/", None)):
        i = path.find(marker)
        if i >= 0:
            rest = path[i + len(marker):] if name is None else name
            parts = rest.split("/")
            return ("orca_cli." if marker == "orca_cli/" else "") + parts[0].removesuffix(".py")
    if "asyncio/" in path:
        return "asyncio (stdlib)"
    return "other stdlib / native"


def _report_raw(raw: Path, top: int) -> None:
    self_c: Counter[str] = Counter()
    incl_c: Counter[str] = Counter()
    pkg_c: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [f.strip() for f in stack.split(";") if f.strip()]
        if frames and frames[0].startswith("process "):
            frames = frames[1:]
        if frames and frames[0].startswith("thread "):
            frames = frames[1:]
        if not frames:
            continue
        total += n
        self_c[frames[-1]] += n
        pkg_c[_package(frames[-1])] += n
        for f in set(frames):
            incl_c[f] += n
    print(f"{total} samples (CPU only; idle excluded)")
    print("\nself time by package")
    for name, n in pkg_c.most_common(12):
        print(f"  {100 * n / total:5.1f} %  {name}")
    print(f"\ntop {top} by self time")
    for name, n in self_c.most_common(top):
        print(f"  {100 * n / total:5.1f} %  {name}")
    print(f"\ntop {top} by inclusive time (orca_cli frames)")
    shown = 0
    for name, n in incl_c.most_common():
        if "orca_cli/" in name:
            print(f"  {100 * n / total:5.1f} %  {name}")
            shown += 1
            if shown >= top:
                break


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Profile orca serve under benchmark load.")
    p.add_argument("--profiler", choices=("py-spy", "cprofile"), default="py-spy")
    p.add_argument("--scenario", choices=("json", "stream", "both", "paced"), default="both",
                   help="paced: a 36-event stream with events 1 ms apart")
    p.add_argument("--requests", type=int, default=600, help="measured requests per scenario")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--size", choices=tuple(SIZES), default="10KB", help="transcript size")
    p.add_argument("--what-if", choices=("nodelay", "asyncio", "uvloop"), default=None)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--keep", type=Path, default=None, help="copy the raw profile here")
    args = p.parse_args(argv)
    scenarios = ("json", "stream") if args.scenario == "both" else (args.scenario,)
    pinned = (os.cpu_count() or 1) >= 2
    wd = T.workdir()
    out = wd / ("profile.txt" if args.profiler == "py-spy" else "profile.pstats")
    py_args = ("-m", "cProfile", "-o", str(out)) if args.profiler == "cprofile" else ()
    procs: list[T.Proc] = []
    try:
        up = T.start_fake_upstream(wd, 0 if pinned else None)
        procs.append(up)
        orca = T.start_orca("orca-memory", wd, up.port, 1 if pinned else None,
                            python_args=py_args, what_if=args.what_if)
        procs.append(orca)
        if pinned:
            os.sched_setaffinity(0, {0})
        asyncio.run(_load(orca.port, scenarios, args.requests, args.concurrency, warm=True,
                           size=args.size))
        spy = None
        if args.profiler == "py-spy":
            spy = subprocess.Popen([str(_py_spy()), "record", "--pid", str(orca.pid), "--format",
                                    "raw", "--function", "--nonblocking", "--rate", "1000",
                                    "--output", str(out)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
            time.sleep(1.0)  # py-spy attaches
        t0 = time.perf_counter()
        c0 = T.cpu_sample(orca.pid)
        asyncio.run(_load(orca.port, scenarios, args.requests, args.concurrency, warm=False,
                           size=args.size))
        c1 = T.cpu_sample(orca.pid)
        wall = time.perf_counter() - t0
        n = args.requests * len(scenarios)
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(60)
        T.stop(orca)  # cProfile writes its file at a clean exit
        print(f"{n} requests ({', '.join(scenarios)}, {args.size}, c{args.concurrency}) in "
              f"{wall:.2f} s; "
              f"orca CPU {(c1.sched_ns - c0.sched_ns) / 1e6 / n:.3f} ms/request"
              + (" (under cProfile)" if args.profiler == "cprofile" else ""))
        if args.keep is not None:
            shutil.copy(out, args.keep)
        if args.profiler == "py-spy":
            _report_raw(out, args.top)
        else:
            stats = pstats.Stats(str(out))
            stats.sort_stats("tottime").print_stats(args.top)
            stats.sort_stats("cumulative").print_stats("orca_cli", args.top)
    finally:
        for proc in procs:
            T.stop(proc)
        shutil.rmtree(wd, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
