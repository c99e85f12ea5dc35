"""A fixed pure-Python loop that converts callgrind instruction counts into CPU time.

    python bench/instr_rate.py 20000          # run the loop 20,000 times and exit (under callgrind)
    python bench/instr_rate.py --time 20000   # natively: µs per iteration, best of 9 runs (JSON)

`bench_proxy.py --instructions` counts the loop's instructions per iteration under callgrind
(two iteration counts, their difference: start-up cancels) and times it natively, and divides:
instructions per µs of this CPython on this machine. Each iteration does what the request path
does most — a small dict, a frozen dataclass, an f-string, `str.split`, a comprehension,
`isinstance` and `dict.get` — so the rate is of the same kind of code. It is an approximation:
the served proxy runs a much larger code footprint (more cache and branch misses per
instruction), so its own rate is likely lower and a µs figure derived here is a lower bound.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import orjson


@dataclass(frozen=True, slots=True)
class _Rec:
    model: str
    n: int
    stream: bool


def _work(i: int) -> int:
    d = {"model": "orca/coding", "n": i, "stream": i & 1 == 0, "tags": ["edit", "test"]}
    rec = _Rec(d["model"], i, d["stream"])  # type: ignore[arg-type]
    key = f"{rec.model}:{rec.n}:{'s' if rec.stream else 'j'}"
    parts = key.split(":")
    total = sum(len(p) for p in parts)
    tags = d.get("tags")
    if isinstance(tags, list):
        total += len(tags)
    kept = {k: v for k, v in d.items() if k != "tags"}
    return total + len(kept) + (hash(key) & 7)


def loop(n: int) -> int:
    acc = 0
    for i in range(n):
        acc += _work(i)
    return acc


def native_us(n: int, runs: int = 9) -> dict[str, float]:
    """µs per iteration: the best (least disturbed) of `runs` timed loops of `n`, and the
    median, in this process's CPU time."""
    loop(n // 10)  # warm
    times = []
    for _ in range(runs):
        t0 = time.process_time_ns()
        loop(n)
        times.append((time.process_time_ns() - t0) / 1000 / n)
    times.sort()
    return {"best_us": round(times[0], 5), "median_us": round(times[len(times) // 2], 5),
            "iterations": n, "runs": runs}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--time"]:
        sys.stdout.write(orjson.dumps(native_us(int(argv[1]))).decode() + "\n")
    else:
        loop(int(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
