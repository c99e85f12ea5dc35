"""Auto router benchmark: the local classifier plus scoring per request (SPEC §16, §12).

    python bench/bench_auto.py           # one line per figure
    python bench/bench_auto.py --json    # one JSON document on stdout

On a 10 KB single-turn body (a code review ask with a pasted file) and on the example
config's `orca/auto` pool (built once, as the proxy does per config), it times:

* `classify`:          `classify_local` given the §4 features routing already computed;
* `classify+score`:    that plus `rank_auto` over the pool's candidates (the figure the
                       ≤ 0.1 ms budget is about);
* `classify+score/all`: the same over every model of the example (no caps, no patterns);
* `classify+score/all`: the same over every model of the example (no caps, no patterns);
* `strategy`:          the whole `auto` strategy call (classification, scoring, explain doc);
* `features`:          for reference, `Scorer.delta` + `Scorer.full` on the same body — the
                       §4 work every router pays already (not part of the auto budget).

Each figure is the median of 7 runs of a bounded loop, garbage collector paused.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from orca_cli.config.load import loads
from orca_cli.config.template import example_text
from orca_cli.routing.auto.classify import classify_local
from orca_cli.routing.auto.request import AutoRequest
from orca_cli.routing.auto.score import rank_auto
from orca_cli.routing.candidates import build_candidates
from orca_cli.routing.features import Scorer
from orca_cli.routing.strategies import STRATEGIES, StrategySignals

REPEATS = 7
LOOPS = 5_000
BUDGET_US = 100.0


def body_10kb() -> dict[str, Any]:
    code = "".join(f"def handler_{i}(request, session):\n    value = session.get('k{i}')\n"
                   f"    if value is None:\n        raise KeyError('k{i}')\n    return value\n"
                   for i in range(80))
    text = "Review this Python module for correctness and race conditions:\n```python\n"
    text = (text + code)[:10_200] + "\n```"
    return {"model": "orca/auto", "messages": [
        {"role": "system", "content": "You are a careful reviewer."},
        {"role": "user", "content": text}]}


def _time(fn: Callable[[], object]) -> float:
    """Median microseconds per call."""
    runs = []
    gc.disable()
    try:
        for _ in range(REPEATS):
            start = time.perf_counter_ns()
            for _ in range(LOOPS):
                fn()
            runs.append((time.perf_counter_ns() - start) / LOOPS / 1000)
    finally:
        gc.enable()
    return statistics.median(runs)


def measure() -> dict[str, Any]:
    cfg = loads(example_text(), source="example")
    router = cfg.routers["auto"]
    body = body_10kb()
    scorer = Scorer(cfg.difficulty)
    delta, full = scorer.delta(body, "openai"), scorer.full(body, "openai")
    cands = build_candidates(router.allowed_models, "openai", full.tokens, cfg)
    rng = random.Random(0)
    signals = StrategySignals(full.score, delta.difficulty.values,
                              request=AutoRequest(body, delta, full))
    strategy = STRATEGIES["auto"]
    cls = classify_local(body, delta, full)
    wide = dataclasses.replace(cfg, auto=dataclasses.replace(cfg.auto, spend_profile="any",
                                                               models=()))
    every = build_candidates(wide.model_ids(), "openai", full.tokens, wide)
    figures = {
        "classify": _time(lambda: classify_local(body, delta, full)),
        "classify+score": _time(lambda: rank_auto(cands, cfg, cfg.auto,
                                                  classify_local(body, delta, full))),
        "classify+score/all": _time(lambda: rank_auto(every, wide, wide.auto,
                                                      classify_local(body, delta, full))),
        "strategy": _time(lambda: strategy(cands, cfg, router, signals, {}, rng)),
        "features": _time(lambda: (scorer.delta(body, "openai"), scorer.full(body, "openai"))),
    }
    return {"body_bytes": len(orjson.dumps(body)), "candidates": len(cands),
            "candidates_all": len(every),
            "workload": cls.workload, "complexity": round(cls.complexity, 3),
            "us_per_request": {k: round(v, 2) for k, v in figures.items()},
            "budget_us": BUDGET_US, "within_budget": figures["classify+score"] <= BUDGET_US,
            "python": sys.version.split()[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description="Time the auto router (SPEC §16).")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = measure()
    if args.json:
        print(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode())
        return 0
    print(f"body {out['body_bytes']} bytes, {out['candidates']} candidates, "
          f"workload {out['workload']} complexity {out['complexity']}")
    for name, us in out["us_per_request"].items():
        print(f"  {name:<20} {us:8.2f} us/request")
    print(f"  budget {BUDGET_US:.0f} us for classify+score: "
          f"{'within' if out['within_budget'] else 'OVER'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
