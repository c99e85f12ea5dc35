"""Tables and SPEC §12 verdicts for `bench_proxy.py`'s summary (rich on stdout).

`checks(summary)` compares the medians with SPEC §12's absolute targets; `render(doc)` prints
the side-by-side table (absolute figures, then ratios to direct and to LiteLLM), the
transcript-growth table and the machine facts the figures belong to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

__all__ = ["FIGURES", "RESULTS", "SPEC_TARGETS", "checks", "comparisons", "last_litellm",
           "render"]

RESULTS = Path(__file__).resolve().parent / "results"  # full runs keep their JSON here

Summary = dict[str, dict[str, dict[str, float]]]

# (label, scenario, field, higher is better)
FIGURES: tuple[tuple[str, str, str, bool], ...] = (
    ("JSON latency p50 (ms)", "json_c1", "p50_ms", False),
    ("JSON latency p99 (ms)", "json_c1", "p99_ms", False),
    ("JSON added p50 (ms)", "json_c1", "added_p50_ms", False),
    ("JSON added p99 (ms)", "json_c1", "added_p99_ms", False),
    ("stream first byte p50 (ms)", "stream_c1", "ttfb_p50_ms", False),
    ("stream added first byte p50 (ms)", "stream_c1", "added_ttfb_p50_ms", False),
    ("stream whole p50 (ms)", "stream_c1", "p50_ms", False),
    ("stream whole added p50 (ms)", "stream_c1", "added_p50_ms", False),
    ("stream whole added p99 (ms)", "stream_c1", "added_p99_ms", False),
    ("CPU/req JSON c1 (ms)", "json_c1", "cpu_ms_per_req", False),
    ("CPU/req stream c1 (ms)", "stream_c1", "cpu_ms_per_req", False),
    ("CPU/req JSON c16 (ms)", "json_c16", "cpu_ms_per_req", False),
    ("CPU/req stream c16 (ms)", "stream_c16", "cpu_ms_per_req", False),
    ("throughput JSON c16 (req/s)", "json_c16", "rps", True),
    ("throughput stream c16 (req/s)", "stream_c16", "rps", True),
    ("JSON latency p50 c16 (ms)", "json_c16", "p50_ms", False),
    ("paced CPU/event c1 (ms)", "paced_c1", "cpu_ms_per_event", False),
    ("paced CPU/event c16 (ms)", "paced_c16", "cpu_ms_per_event", False),
    ("paced CPU/event beyond a burst c1 (ms)", "paced_c1", "cpu_ms_per_event_marginal", False),
    ("paced CPU/event beyond a burst c16 (ms)", "paced_c16", "cpu_ms_per_event_marginal", False),
    ("paced stream added p50 (ms)", "paced_c1", "added_p50_ms", False),
    ("anthropic JSON added p50 (ms)", "anthropic_json_c1", "added_p50_ms", False),
    ("anthropic stream added first byte p50 (ms)", "anthropic_stream_c1", "added_ttfb_p50_ms",
     False),
    ("anthropic CPU/req JSON c1 (ms)", "anthropic_json_c1", "cpu_ms_per_req", False),
    ("anthropic CPU/req stream c1 (ms)", "anthropic_stream_c1", "cpu_ms_per_req", False),
    ("responses JSON added p50 (ms)", "responses_json_c1", "added_p50_ms", False),
    ("responses stream added first byte p50 (ms)", "responses_stream_c1", "added_ttfb_p50_ms",
     False),
    ("responses stream whole added p50 (ms)", "responses_stream_c1", "added_p50_ms", False),
    ("responses CPU/req JSON c1 (ms)", "responses_json_c1", "cpu_ms_per_req", False),
    ("responses CPU/req stream c1 (ms)", "responses_stream_c1", "cpu_ms_per_req", False),
    ("responses CPU/req JSON c16 (ms)", "responses_json_c16", "cpu_ms_per_req", False),
    ("responses CPU/req stream c16 (ms)", "responses_stream_c16", "cpu_ms_per_req", False),
    ("responses throughput JSON c16 (req/s)", "responses_json_c16", "rps", True),
    ("Messages→Chat JSON added p50 (ms)", "messages_to_chat_json_c1", "added_p50_ms", False),
    ("Messages→Chat stream added first byte p50 (ms)", "messages_to_chat_stream_c1",
     "added_ttfb_p50_ms", False),
    ("Messages→Chat stream whole added p50 (ms)", "messages_to_chat_stream_c1",
     "added_p50_ms", False),
    ("Messages→Chat CPU/req JSON c1 (ms)", "messages_to_chat_json_c1", "cpu_ms_per_req", False),
    ("Messages→Chat CPU/req stream c1 (ms)", "messages_to_chat_stream_c1", "cpu_ms_per_req",
     False),
    ("Chat→Messages JSON added p50 (ms)", "chat_to_messages_json_c1", "added_p50_ms", False),
    ("Chat→Messages stream added first byte p50 (ms)", "chat_to_messages_stream_c1",
     "added_ttfb_p50_ms", False),
    ("Chat→Messages stream whole added p50 (ms)", "chat_to_messages_stream_c1",
     "added_p50_ms", False),
    ("Chat→Messages CPU/req JSON c1 (ms)", "chat_to_messages_json_c1", "cpu_ms_per_req", False),
    ("Chat→Messages CPU/req stream c1 (ms)", "chat_to_messages_stream_c1", "cpu_ms_per_req",
     False),
)

# The Responses API rows against the Chat Completions rows of the same run: (label, responses
# scenario, chat scenario, field). The target: within 10 % (added latency, CPU per request).
RESPONSES_PAIRS: tuple[tuple[str, str, str, str], ...] = (
    ("JSON added p50 (ms), c1", "responses_json_c1", "json_c1", "added_p50_ms"),
    ("stream added first byte p50 (ms), c1", "responses_stream_c1", "stream_c1",
     "added_ttfb_p50_ms"),
    ("stream whole added p50 (ms), c1", "responses_stream_c1", "stream_c1", "added_p50_ms"),
    ("CPU/req JSON c1 (ms)", "responses_json_c1", "json_c1", "cpu_ms_per_req_sched"),
    ("CPU/req stream c1 (ms)", "responses_stream_c1", "stream_c1", "cpu_ms_per_req_sched"),
    ("CPU/req JSON c16 (ms)", "responses_json_c16", "json_c16", "cpu_ms_per_req_sched"),
    ("CPU/req stream c16 (ms)", "responses_stream_c16", "stream_c16", "cpu_ms_per_req_sched"),
)
RESPONSES_TOLERANCE = 0.10
# The request log: orca-memory (`orca serve`, log on) minus orca-quiet (`--quiet`), same run.
LOG_SCENARIOS = ("json_c1", "stream_c1", "json_c16", "stream_c16", "responses_json_c1",
                 "responses_stream_c1", "responses_json_c16", "responses_stream_c16")
LOG_TARGET_MS = 0.02
# A revision measured beside the current tree (`--what-if at:<rev>`): these figures.
BEFORE_AFTER: tuple[tuple[str, str, str], ...] = (
    ("JSON added p50 (ms), c1", "json_c1", "added_p50_ms"),
    ("stream added first byte p50 (ms), c1", "stream_c1", "added_ttfb_p50_ms"),
    ("CPU/req JSON c1 (ms)", "json_c1", "cpu_ms_per_req_sched"),
    ("CPU/req stream c1 (ms)", "stream_c1", "cpu_ms_per_req_sched"),
    ("CPU/req JSON c16 (ms)", "json_c16", "cpu_ms_per_req_sched"),
    ("CPU/req stream c16 (ms)", "stream_c16", "cpu_ms_per_req_sched"),
    ("throughput JSON c16 (req/s)", "json_c16", "rps"),
    ("anthropic JSON added p50 (ms)", "anthropic_json_c1", "added_p50_ms"),
    ("anthropic CPU/req JSON c1 (ms)", "anthropic_json_c1", "cpu_ms_per_req_sched"),
)

# (target, scenario, field, "<=" or ">=", limit, what SPEC §12 says). None is orca-redis-2w's:
# SPEC §12's throughput targets are one worker's.
SPEC_TARGETS: tuple[tuple[str, str, str, str, float, str], ...] = (
    ("orca-memory", "json_c1", "added_p50_ms", "<=", 0.8, "added p50 ≤ 0.8 ms (stretch 0.6)"),
    ("orca-memory", "json_c1", "added_p99_ms", "<=", 2.0, "added p99 ≤ 2 ms"),
    ("orca-redis", "json_c1", "added_p50_ms", "<=", 1.0, "added p50 with Redis ≤ 1.0 ms"),
    ("orca-memory", "stream_c1", "added_ttfb_p50_ms", "<=", 0.8, "stream first byte ≤ 0.8 ms added"),
    ("orca-memory", "stream_c1", "added_p50_ms", "<=", 1.5, "whole stream ≤ 1.5 ms added"),
    ("orca-memory", "paced_c1", "cpu_ms_per_event", "<=", 0.1, "paced ≤ 0.1 ms CPU/event at c1"),
    ("orca-memory", "paced_c16", "cpu_ms_per_event", "<=", 0.03, "paced ≤ 0.03 ms CPU/event at c16"),
    ("orca-memory", "json_c1", "cpu_ms_per_req", "<=", 0.7, "CPU/req JSON c1 ≤ 0.7 ms"),
    ("orca-memory", "stream_c1", "cpu_ms_per_req", "<=", 1.0, "CPU/req stream c1 ≤ 1.0 ms"),
    ("orca-memory", "json_c16", "cpu_ms_per_req", "<=", 0.45, "CPU/req JSON c16 ≤ 0.45 ms"),
    ("orca-memory", "stream_c16", "cpu_ms_per_req", "<=", 0.6, "CPU/req stream c16 ≤ 0.6 ms"),
    ("orca-memory", "json_c16", "rps", ">=", 2500, "≥ 2,500 JSON req/s, one worker, c16"),
    ("orca-memory", "stream_c16", "rps", ">=", 1500, "≥ 1,500 streamed req/s, one worker, c16"),
)


def _get(summary: Summary, target: str, scenario: str, field: str) -> float | None:
    v = summary.get(target, {}).get(scenario, {}).get(field)
    return None if v is None else float(v)


def checks(summary: Summary) -> list[dict[str, Any]]:
    out = []
    for target, scenario, field, op, limit, text in SPEC_TARGETS:
        v = _get(summary, target, scenario, field)
        met = None if v is None else (v <= limit if op == "<=" else v >= limit)
        out.append({"target": target, "scenario": scenario, "field": field, "op": op,
                    "limit": limit, "spec": text, "measured": v, "met": met})
    return out


def _rel(a: float | None, b: float | None) -> float | None:
    """(a − b) / b, or None."""
    return None if a is None or b is None or b <= 0 else round((a - b) / b, 4)


def comparisons(summary: Summary) -> dict[str, Any]:
    """The differences within one run that the figures exist for: the Responses API against
    Chat Completions (per target), the request log (orca-memory − orca-quiet, per scenario;
    CPU from schedstat, ns resolution), and each `at:<rev>` target against the current tree.
    CPU differences use the schedstat run time: at 100 clock ticks a second, `utime + stime`
    over a few hundred requests resolves only ~0.03 ms a request."""
    out: dict[str, Any] = {"responses_vs_chat": {}, "request_log": {}, "before_after": {}}
    for target in ("floor", "orca-memory", "orca-quiet", "orca-redis"):
        rows = []
        for label, resp, chat, field in RESPONSES_PAIRS:
            r, c = _get(summary, target, resp, field), _get(summary, target, chat, field)
            if r is None or c is None:
                continue
            rel = _rel(r, c)
            rows.append({"figure": label, "responses": r, "chat": c, "relative": rel,
                         "within_10pct": None if rel is None else rel <= RESPONSES_TOLERANCE})
        if rows:
            out["responses_vs_chat"][target] = rows
    for sc in LOG_SCENARIOS:
        on = summary.get("orca-memory", {}).get(sc)
        off = summary.get("orca-quiet", {}).get(sc)
        if not on or not off:
            continue
        cpu = on["cpu_ms_per_req_sched"] - off["cpu_ms_per_req_sched"]
        out["request_log"][sc] = {
            "cpu_ms_per_req_log": round(on["cpu_ms_per_req_sched"], 4),
            "cpu_ms_per_req_quiet": round(off["cpu_ms_per_req_sched"], 4),
            "cpu_ms_per_req_diff": round(cpu, 4),
            "ticks_cpu_ms_per_req_diff": round(on["cpu_ms_per_req"] - off["cpu_ms_per_req"], 4),
            "added_p50_ms_diff": round(on.get("added_p50_ms", 0.0) - off.get("added_p50_ms", 0.0),
                                       4),
            "within_target": cpu <= LOG_TARGET_MS}
    for old in sorted(t for t in summary if t.startswith("orca-memory[at:")):
        rows = []
        for label, sc, field in BEFORE_AFTER:
            before = _get(summary, old, sc, field)
            if before is None:
                continue
            now, quiet = _get(summary, "orca-memory", sc, field), _get(summary, "orca-quiet", sc,
                                                                       field)
            rows.append({"figure": label, "before": before, "now": now, "now_quiet": quiet,
                         "now_vs_before": _rel(now, before),
                         "now_quiet_vs_before": _rel(quiet, before)})
        out["before_after"][old] = rows
    return out


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:+.1%}"


def _render_comparisons(console: Any, doc: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    cmp = doc.get("comparisons") or comparisons(doc["summary"])
    for target, rows in cmp["responses_vs_chat"].items():
        t = Table(title=f"Responses API against Chat Completions, {target} (same run; "
                        f"target: within {RESPONSES_TOLERANCE:.0%})")
        for col in ("figure", "responses", "chat", "difference"):
            t.add_column(col, justify="left" if col == "figure" else "right")
        for r in rows:
            t.add_row(r["figure"], _fmt(r["responses"], "ms"), _fmt(r["chat"], "ms"),
                      _pct(r["relative"]))
        console.print(t)
    if cmp["request_log"]:
        t = Table(title=f"The request log: orca serve − orca serve --quiet (same run; "
                        f"target ≤ {LOG_TARGET_MS} ms CPU a request)")
        for col in ("scenario", "CPU/req, log on", "CPU/req, --quiet", "log CPU/req",
                    "(clock ticks)", "added p50 diff"):
            t.add_column(col, justify="left" if col == "scenario" else "right")
        for sc, r in cmp["request_log"].items():
            t.add_row(sc, f"{r['cpu_ms_per_req_log']:.3f}", f"{r['cpu_ms_per_req_quiet']:.3f}",
                      f"{r['cpu_ms_per_req_diff']:+.3f}", f"{r['ticks_cpu_ms_per_req_diff']:+.3f}",
                      f"{r['added_p50_ms_diff']:+.3f}")
        console.print(t)
    for old, rows in cmp["before_after"].items():
        t = Table(title=escape(f"{old} (before) against the current tree (same run)"))
        for col in ("figure", "before", "now (log on)", "now (--quiet)", "now ÷ before − 1",
                    "quiet ÷ before − 1"):
            t.add_column(col, justify="left" if col == "figure" else "right")
        for r in rows:
            field = "rps" if "req/s" in r["figure"] else "ms"
            t.add_row(r["figure"], _fmt(r["before"], field), _fmt(r["now"], field),
                      _fmt(r["now_quiet"], field), _pct(r["now_vs_before"]),
                      _pct(r["now_quiet_vs_before"]))
        console.print(t)
    console.print("  CPU differences above are schedstat run time (ns resolution), "
                  "not utime + stime ticks.")


def _fmt(v: float | None, field: str) -> str:
    if v is None:
        return "—"
    if field == "rps":
        return f"{v:,.0f}"
    if field.startswith("cpu_ms_per_event"):
        return f"{v:.4f}"
    return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"


def _ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b <= 0 or a <= 0:
        return "—"
    r = a / b
    return f"{r:,.0f}×" if r >= 100 else f"{r:.1f}×" if r >= 10 else f"{r:.2f}×"


def _run_order(path: Path) -> tuple[str, str, str]:
    """A saved run's place in time from its name, `proxy-<date>[-<HHMM>][-<tag>].json`: a name
    without a time (an earlier naming) counts as the start of its day, not after its timed runs."""
    parts = path.stem.split("-", 4)  # proxy, yyyy, mm, dd, rest
    date = "-".join(parts[1:4])
    rest = parts[4] if len(parts) > 4 else ""
    hhmm, _, tag = rest.partition("-")
    if not (len(hhmm) == 4 and hhmm.isdigit()):
        hhmm, tag = "0000", rest
    return date, hhmm, tag


def last_litellm(results: Path = RESULTS) -> tuple[dict[str, dict[str, float]], str, str] | None:
    """LiteLLM's figures from the newest saved full run that measured it: (its summary,
    the run's date, the file), or None when no saved run has them."""
    for path in sorted(results.glob("proxy-*.json"), key=_run_order, reverse=True):
        try:
            saved = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        if saved.get("settings", {}).get("quick"):
            continue  # a smoke run's figures are not quoted
        lit = saved.get("summary", {}).get("litellm")
        if lit:
            return lit, str(saved.get("machine", {}).get("date", "?")), path.name
    return None


def render(doc: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(width=None if Console().is_terminal else 170)
    s: Summary = doc["summary"]
    quoted = None
    if "litellm" not in s:
        quoted = last_litellm()
        if quoted is not None:  # not measured in this run: its last figures, dated
            s = {**s, "litellm": quoted[0]}
    m = doc["machine"]
    st = doc["settings"]
    verdicts = {(c["target"], c["scenario"], c["field"]): c for c in doc["spec"]}
    what_ifs = sorted(t for t in s if t.startswith("orca-memory["))
    present = [t for t in ("direct", "floor", "orca-memory", "orca-quiet", *what_ifs,
                           "orca-redis", "orca-redis-2w", "litellm")
               if t in s]
    quick = "QUICK RUN (smoke figures, not a full run): " if st.get("quick") else ""
    table = Table(title=f"{quick}Proxy overhead, 10 KB agent body (medians of {st['rounds']} "
                        f"round(s), {st['requests']} requests a figure)")
    table.add_column("figure")
    for t in present:
        name = f"litellm (last, {quoted[1][:10]})" if t == "litellm" and quoted else t
        table.add_column(escape(name), justify="right")
    table.add_column("LiteLLM ÷ orca", justify="right")
    table.add_column("orca ÷ direct", justify="right")
    if "floor" in present:
        table.add_column("orca − floor", justify="right")
    table.add_column("SPEC §12", justify="left")
    for label, scenario, field, higher in FIGURES:
        vals = {t: _get(s, t, scenario, field) for t in present}
        if all(v is None for v in vals.values()):
            continue
        cells = []
        for t in present:
            v = vals[t]
            if t == "direct" and field.startswith(("cpu", "added")):
                v = None  # no proxy: nothing to add, no proxy CPU
            cells.append(_fmt(v, field))
        orca, lit, direct = vals.get("orca-memory"), vals.get("litellm"), vals.get("direct")
        vs_lit = _ratio(orca, lit) if higher else _ratio(lit, orca)
        vs_direct = ("—" if field.startswith(("cpu", "added")) else _ratio(orca, direct))
        spec = ""
        for tgt in ("orca-memory", "orca-redis"):
            c = verdicts.get((tgt, scenario, field))
            if c is not None and c["met"] is not None:
                mark = "[green]met[/]" if c["met"] else "[red]missed[/]"
                spec += f"{mark} {c['op']} {c['limit']:g}" + (" (redis)" if tgt == "orca-redis" else "") + " "
        extra = []
        if "floor" in present:
            floor = vals.get("floor")
            own = (orca - floor if orca is not None and floor is not None and not higher
                   and field.startswith(("cpu", "added")) else None)
            extra.append(_fmt(own, field) if own is not None else "—")
        table.add_row(label, *cells, vs_lit, vs_direct, *extra, spec.strip())
    console.print(table)
    _render_comparisons(console, doc)

    g = Table(title="The same latest turn behind a longer transcript (orca, memory store, c1)")
    for col in ("transcript", "body bytes", "direct p50", "orca p50", "added p50", "added p99",
                "CPU/req", "× 10 KB", "CPU − parse", "parse µs*", "delta µs*"):
        g.add_column(col, justify="right")
    inproc = {r["size"]: r for r in doc["in_process"]}
    base = _get(s, "orca-memory", "growth_10KB", "cpu_ms_per_req")
    for size in ("10KB", "200KB", "1MB"):
        sc = f"growth_{size}"
        cpu = _get(s, "orca-memory", sc, "cpu_ms_per_req")
        if cpu is None:
            continue
        ip = inproc.get(size, {})
        parse = ip.get("parse_us", 0.0) / 1000.0
        g.add_row(size, f"{int(_get(s, 'orca-memory', sc, 'body_bytes') or 0):,}",
                  _fmt(_get(s, "direct", sc, "p50_ms"), "ms"),
                  _fmt(_get(s, "orca-memory", sc, "p50_ms"), "ms"),
                  _fmt(_get(s, "orca-memory", sc, "added_p50_ms"), "ms"),
                  _fmt(_get(s, "orca-memory", sc, "added_p99_ms"), "ms"),
                  _fmt(cpu, "ms"), _ratio(cpu, base), _fmt(cpu - parse, "ms"),
                  f"{ip.get('parse_us', 0):.0f}", f"{ip.get('delta_us', 0):.0f}")
    console.print(g)
    console.print("  * timed in the benchmark process: orjson.loads of the body, and "
                  "Scorer.delta on it (the latest turn only).")
    spreads = {t: max((v.get("p50_spread", 0.0) for v in s[t].values()), default=0.0)
               for t in present if not (t == "litellm" and quoted)}
    console.print(f"machine: nproc {m['nproc']}, Python {m['python']}, {m['platform']}; "
                  f"{m['pinning']}; load {m['loadavg_at_start']} → {m['loadavg_at_end']}, "
                  f"steal {m['steal_pct']} %; {m['date']}")
    foreign = [r.get("foreign_cores", 0.0) for r in doc["rows"]]
    if foreign:
        ordered = sorted(foreign)
        console.print(f"other processes during the figures: median {ordered[len(ordered) // 2]:.2f}"
                      f" cores, max {ordered[-1]:.2f} (of {m['nproc']})")
    if st["rounds"] > 1:
        console.print("noise: largest spread of a p50 across rounds, (max − min) / median: "
                      + escape(", ".join(f"{t} {v:.0%}" for t, v in spreads.items())))
    for name, why in doc["skipped"].items():
        console.print(f"[yellow]skipped {escape(name)}[/]: {escape(why)}")
    if quoted is not None:
        console.print(escape(f"litellm: not measured in this run; its column and ratios are its "
                             f"last measured figures, {quoted[1]}, from bench/results/{quoted[2]}"))
    for name, note in doc["notes"].items():
        console.print(escape(f"{name}: {note}"))
    missed = [c for c in doc["spec"] if c["met"] is False]
    console.print(f"SPEC §12: {sum(1 for c in doc['spec'] if c['met'])} targets met, "
                  f"{len(missed)} missed" + (": " + "; ".join(
                      f"{c['spec']} (measured {c['measured']:.4g})" for c in missed)
                      if missed else ""))
