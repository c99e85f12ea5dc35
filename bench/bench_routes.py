"""Dynamic routes benchmark: one walk of a 20-node route graph per request (SPEC §17, §12).

    python bench/bench_routes.py           # one line per figure
    python bench/bench_routes.py --json    # one JSON document on stdout

The graph (compiled once, as the proxy does per config or deployed version) has 20 nodes:
12 conditions (header, metadata, JSON pointer, session, model; eq, in, glob, regex, exists,
gt), 2 splits, 2 budgets, 3 targets and a deny, chained so the longest path visits 17 nodes.
Figures (µs per request, median of 7 runs of a bounded loop, garbage collector paused):

* `walk/longest`:  `evaluate` on a request that takes the longest path;
* `walk/short`:    `evaluate` on a request denied at the second node;
* `needed+walk`:   `counters_needed` (the budget counter names the caller reads) + `evaluate`;
* `facts`:         building `RequestFacts` from a parsed body and lower-cased headers.

The ≤ 20 µs budget is about `needed+walk`.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from orca_cli.config.load import parse
from orca_cli.routing.routes import RequestFacts, Spend, compile_routes, counter_key
from orca_cli.routing.routes.graph import RouteTable

NOW = 1_796_371_200.0


def _cond(field: str, op: str, t: str, f: str, **kw: Any) -> dict[str, Any]:
    return {"type": "condition", "field": field, "op": op, "on_true": t, "on_false": f, **kw}


def graph() -> dict[str, Any]:
    n: dict[str, Any] = {
        "c1": _cond("header:x-team", "exists", "c2", "deny"),
        "c2": _cond("endpoint", "in", "c3", "deny", value=["openai", "anthropic"]),
        "c3": _cond("model", "glob", "c4", "t_cheap", value="gpt-*"),
        "c4": _cond("metadata.plan", "eq", "c5", "t_cheap", value="pro"),
        "c5": _cond("/messages/0/role", "eq", "b1", "t_cheap", value="system"),
        "b1": {"type": "budget", "scope": "key", "window": "day", "usd": 50.0,
               "within": "c6", "exceeded": "t_cheap"},
        "c6": _cond("/max_tokens", "gt", "c7", "t_cheap", number=100),
        "c7": _cond("header:user-agent", "regex", "s1", "t_cheap", value="claude-cli|codex"),
        "s1": {"type": "split", "branches": [{"percent": 0, "next": "t_cheap"},
                                             {"percent": 100, "next": "c8"}]},
        "c8": _cond("session", "exists", "b2", "t_cheap"),
        "b2": {"type": "budget", "scope": "session", "window": "month", "requests": 10000,
               "within": "c9", "exceeded": "t_cheap"},
        "c9": _cond("/stream", "eq", "c10", "t_cheap", value="true"),
        "c10": _cond("metadata.region", "in", "c11", "t_cheap", value=["eu", "us"]),
        "c11": _cond("header:x-priority", "gt", "s2", "t_cheap", number=1),
        "s2": {"type": "split", "branches": [{"percent": 0, "next": "t_mid"},
                                             {"percent": 100, "next": "c12"}]},
        "c12": _cond("/tools/0/name", "exists", "t_big", "t_mid"),
        "t_cheap": {"type": "target", "target": "cheap"},
        "t_mid": {"type": "target", "target": "orca/coding"},
        "t_big": {"type": "target", "target": "sim-a:big", "fallbacks": ["cheap"]},
        "deny": {"type": "deny", "status": 403},
    }
    assert len(n) == 20
    return n


def table() -> RouteTable:
    doc: dict[str, Any] = {
        "channels": [{"name": "sim-a", "type": "sim", "models": ["cheap", "big", "gpt-5"]}],
        "routers": {"coding": {"weak_pool": ["cheap"], "strong_pool": ["big"]}},
        "inbound_keys": [{"name": "ci", "token": "tok"}],
        "routes": [{"name": "bench", "keys": ["ci"], "nodes": graph()}],
    }
    return compile_routes(parse(doc, environ={}).routes)


def body() -> dict[str, Any]:
    return {"model": "gpt-5", "max_tokens": 4096, "stream": True,
            "metadata": {"plan": "pro", "region": "eu"},
            "messages": [{"role": "system", "content": "You are a coding agent. " * 40},
                         {"role": "user", "content": "Fix the failing test. " * 80}],
            "tools": [{"name": "bash", "description": "run a command"}]}


HEADERS = {"x-team": "infra", "user-agent": "claude-cli/2.0", "x-priority": "3",
           "content-type": "application/json", "authorization": "Bearer tok"}


def timed(fn: Callable[[], object], loops: int) -> float:
    runs = []
    for _ in range(7):
        gc.disable()
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        runs.append((time.perf_counter() - t0) / loops * 1e6)
        gc.enable()
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--loops", type=int, default=20000)
    args = ap.parse_args()
    t = table()
    b = body()
    long = RequestFacts("openai", "gpt-5", HEADERS, b, "sess-1", "ci", "req-1", NOW)
    short = RequestFacts("responses", "gpt-5", HEADERS, b, "sess-1", "ci", "req-1", NOW)
    counters = {counter_key("key", "ci", "day", NOW): Spend(10, 1.0)}
    d = t.evaluate(long, counters)
    assert d.kind == "target" and len(d.path) == 17, d
    assert t.evaluate(short, counters).path == ("c1", "c2", "deny")

    def needed_walk() -> object:
        t.counters_needed(long)
        return t.evaluate(long, counters)

    figures = {
        "walk/longest": timed(lambda: t.evaluate(long, counters), args.loops),
        "walk/short": timed(lambda: t.evaluate(short, counters), args.loops),
        "needed+walk": timed(needed_walk, args.loops),
        "facts": timed(lambda: RequestFacts("openai", "gpt-5", HEADERS, b, "sess-1", "ci",
                                            "req-1", NOW), args.loops),
    }
    if args.json:
        print(json.dumps({"unit": "us_per_request", "nodes": 20, "longest_path": len(d.path),
                          "figures": figures}))
        return
    for name, us in figures.items():
        print(f"{name:14s} {us:8.2f} µs")


if __name__ == "__main__":
    main()
