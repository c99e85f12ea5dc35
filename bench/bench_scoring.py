"""Scoring benchmark: what the difficulty scorers cost per request (SPEC §4, §12).

    python bench/bench_scoring.py           # rich tables
    python bench/bench_scoring.py --json    # one JSON document on stdout

Three measurements, each over bounded loops timed with `time.perf_counter_ns` and the garbage
collector paused (as `timeit` does):

* per call: `Scorer.delta` and `Scorer.full` on a short opener, a hard turn with a pasted
  trace, a tool continuation with a 10 KB result and one with a 200 KB result;
* transcript growth: the same latest turn behind 10 KB, 200 KB and 1 MB of history — the
  delta must stay flat while the full score grows with the transcript;
* corpus: every turn of a replay-shaped corpus (~3,960 turns) scored once.

Bodies are parsed dicts, as the proxy holds them after its one parse; the parse itself is
timed beside the growth figures only, to show it stays linear.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# These resolve only once the repository root is on sys.path (the script may run from anywhere).
from bench.scoring_bodies import Turn, corpus, per_call_cases
from orca_cli.routing.features import Scorer
from orca_cli.wire.transcript import Api
from tests.routing import bodies as B

REPEATS = 7  # timed runs per figure; the median is shown, the minimum is in --json
TARGET_NS = 20_000_000  # each run loops until about 20 ms have passed ...
MAX_LOOPS = 20_000  # ... but never more than this many calls
GROWTH_SIZES = (10_000, 200_000, 1_000_000)
APIS: tuple[Api, ...] = ("openai", "anthropic")
SUMMARY = "Time the difficulty scorers (SPEC §4, §12)."


@dataclass(frozen=True, slots=True)
class Timing:
    """Per-call time in microseconds over `repeats` runs of `loops` calls each."""

    median_us: float
    min_us: float
    loops: int
    repeats: int


def measure_all(fns: Sequence[Callable[[], object]], *, repeats: int = REPEATS) -> list[Timing]:
    """Time each of `fns`: one warm-up call sizes each loop, then `repeats` rounds that run
    every function's loop in turn, so a slow spell on a shared machine hits them alike."""
    loops: list[int] = []
    for fn in fns:
        t0 = time.perf_counter_ns()
        fn()
        once = max(time.perf_counter_ns() - t0, 1)
        loops.append(max(1, min(MAX_LOOPS, TARGET_NS // once)))
    runs: list[list[float]] = [[] for _ in fns]
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            for fn, n, out in zip(fns, loops, runs, strict=True):
                start = time.perf_counter_ns()
                for _ in range(n):
                    fn()
                out.append((time.perf_counter_ns() - start) / n / 1000)
    finally:
        if enabled:
            gc.enable()
    return [
        Timing(round(statistics.median(r), 2), round(min(r), 2), n, repeats)
        for r, n in zip(runs, loops, strict=True)
    ]


def per_call(scorer: Scorer) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for case in per_call_cases():
        body, api = case.body, case.api
        delta = scorer.delta(body, api)
        full = scorer.full(body, api)
        t_delta, t_full = measure_all(
            [partial(scorer.delta, body, api), partial(scorer.full, body, api)]
        )
        rows.append(
            {
                "case": case.name,
                "api": api,
                "body_bytes": len(orjson.dumps(body)),
                "delta_chars": sum(map(len, delta.user_texts + delta.tool_result_texts)),
                "delta_score": round(delta.score, 3),
                "full_score": round(full.score, 3),
                "delta": asdict(t_delta),
                "full": asdict(t_full),
            }
        )
    return rows


def growth(scorer: Scorer) -> list[dict[str, Any]]:
    """The same latest turn (the hard ask with a pasted goroutine dump) behind more history."""
    latest_text = f"{B.HARD_PROSE}\n\n{B.goroutine_dump()}"
    rows: list[dict[str, Any]] = []
    for api in APIS:
        bodies = [B.padded_transcript(api, n, [B.user(api, latest_text)]) for n in GROWTH_SIZES]
        raws = [orjson.dumps(b) for b in bodies]
        fns: list[Callable[[], object]] = []
        for body, raw in zip(bodies, raws, strict=True):
            fns += [partial(scorer.delta, body, api), partial(scorer.full, body, api)]
            fns.append(partial(orjson.loads, raw))
        timings = measure_all(fns)
        base_delta, base_full = timings[0].median_us, timings[1].median_us
        for i, (size, body, raw) in enumerate(zip(GROWTH_SIZES, bodies, raws, strict=True)):
            t_delta, t_full, t_parse = timings[3 * i : 3 * i + 3]
            delta = scorer.delta(body, api)
            rows.append(
                {
                    "api": api,
                    "history_bytes": size,
                    "body_bytes": len(raw),
                    "messages": len(body["messages"]),
                    "delta_score": round(delta.score, 3),
                    "delta_digest": delta.delta_digest[:12],
                    "delta": asdict(t_delta),
                    "full": asdict(t_full),
                    "parse": asdict(t_parse),
                    "delta_vs_smallest": round(t_delta.median_us / base_delta, 2),
                    "full_vs_smallest": round(t_full.median_us / base_full, 2),
                }
            )
        first, last = rows[-len(GROWTH_SIZES)], rows[-1]
        kb = (last["body_bytes"] - first["body_bytes"]) / 1000
        slope = (last["full"]["median_us"] - first["full"]["median_us"]) / kb
        for row in rows[-len(GROWTH_SIZES) :]:
            row["full_us_per_kb"] = round(slope, 2)
    return rows


def corpus_run(scorer: Scorer, turns: list[Turn]) -> dict[str, Any]:
    def all_delta() -> None:
        for t in turns:
            scorer.delta(t.body, t.api)

    def all_full() -> None:
        for t in turns:
            scorer.full(t.body, t.api)

    delta, full = measure_all([all_delta, all_full], repeats=5)
    archetypes: dict[str, int] = {}
    for t in turns:
        archetypes[t.archetype] = archetypes.get(t.archetype, 0) + 1
    return {
        "turns": len(turns),
        "sessions": len({t.session for t in turns}),
        "archetypes": archetypes,
        "body_bytes_total": sum(len(orjson.dumps(t.body)) for t in turns),
        "delta_ms": round(delta.median_us / 1000, 2),
        "full_ms": round(full.median_us / 1000, 2),
        "delta_us_per_turn": round(delta.median_us / len(turns), 2),
        "full_us_per_turn": round(full.median_us / len(turns), 2),
    }


def machine() -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "processor": platform.machine(),
    }


def run() -> dict[str, Any]:
    scorer = Scorer()
    turns = corpus()
    return {
        "machine": machine(),
        "method": {
            "clock": "time.perf_counter_ns",
            "repeats": REPEATS,
            "target_ms_per_run": TARGET_NS / 1e6,
            "max_loops": MAX_LOOPS,
            "statistic": "median per-call time over runs (min beside it); gc paused",
        },
        "per_call": per_call(scorer),
        "growth": growth(scorer),
        "corpus": corpus_run(scorer, turns),
    }


def _table(title: str, columns: Sequence[str], left: int) -> Table:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i < left else "right")
    return table


def _size(n: int) -> str:
    if n < 1000:
        return f"{n} B"
    if n < 999_500:
        return f"{n / 1000:,.1f} KB" if n < 99_950 else f"{n / 1000:,.0f} KB"
    return f"{n / 1e6:,.2f} MB"


def render(doc: dict[str, Any]) -> None:
    from rich.console import Console

    console = Console()
    if not console.is_terminal:  # piped: rich would wrap the tables at 80 columns
        console = Console(width=120)
    m = doc["machine"]
    console.print(
        f"[bold]orca scoring benchmark[/]  nproc {m['nproc']} · {m['implementation']} "
        f"{m['python']} · {m['platform']}\n[dim]median per call over {REPEATS} runs; the "
        "minimum is in --json[/]"
    )
    call_cols = (
        "case",
        "api",
        "body",
        "delta text",
        "delta µs",
        "full µs",
        "delta score",
        "full score",
    )
    t = _table("(a) per call", call_cols, 2)
    for r in doc["per_call"]:
        t.add_row(
            r["case"],
            r["api"],
            _size(r["body_bytes"]),
            _size(r["delta_chars"]),
            f"{r['delta']['median_us']:,.1f}",
            f"{r['full']['median_us']:,.1f}",
            f"{r['delta_score']:.3f}",
            f"{r['full_score']:.3f}",
        )
    console.print(t)
    growth_cols = ("api", "history", "body", "msgs", "delta µs", "x", "full µs", "x", "parse µs")
    g = _table("(b) one latest turn (5 KB trace) behind more history", growth_cols, 1)
    for r in doc["growth"]:
        g.add_row(
            r["api"],
            _size(r["history_bytes"]),
            _size(r["body_bytes"]),
            str(r["messages"]),
            f"{r['delta']['median_us']:,.1f}",
            f"{r['delta_vs_smallest']:.2f}",
            f"{r['full']['median_us']:,.0f}",
            f"{r['full_vs_smallest']:.2f}",
            f"{r['parse']['median_us']:,.0f}",
        )
    slopes = {r["api"]: r["full_us_per_kb"] for r in doc["growth"]}
    same = len({r["delta_digest"] for r in doc["growth"]}) == 1
    g.caption = (
        "x = against the smallest transcript · full grows "
        + ", ".join(f"{v:.1f} µs/KB ({k})" for k, v in slopes.items())
        + f" · same delta at every size: {'yes' if same else 'NO'}"
    )
    console.print(g)
    c = doc["corpus"]
    k = _table(
        f"(c) corpus: {c['turns']:,} turns, {c['sessions']} sessions, "
        f"{c['body_bytes_total'] / 1e6:,.1f} MB of bodies",
        ("scorer", "all turns", "per turn"),
        1,
    )
    k.add_row("delta", f"{c['delta_ms']:,.1f} ms", f"{c['delta_us_per_turn']:,.1f} µs")
    k.add_row("full", f"{c['full_ms']:,.1f} ms", f"{c['full_us_per_turn']:,.1f} µs")
    k.add_row(
        "both",
        f"{c['delta_ms'] + c['full_ms']:,.1f} ms",
        f"{c['delta_us_per_turn'] + c['full_us_per_turn']:,.1f} µs",
    )
    console.print(k)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=SUMMARY)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    doc = run()
    if args.json:
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        render(doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
