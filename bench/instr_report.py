"""The differences `bench_proxy.py --instructions` exists for, and its tables.

`comparisons(doc)` derives, from instructions per request of each target and scenario:

* the request log: orca-memory (`orca serve`) − orca-quiet (`--quiet`), per scenario, also in
  µs at the run's measured instructions per µs, with the syscalls' difference beside it;
* the Responses API against Chat Completions, per target (%);
* translated against same-format: a Messages client served by the Chat Completions channel
  against one served by the Anthropic channel, and a Chat Completions client served by the
  Anthropic channel against one served by its own (per request, and per event the client
  receives for streams);
* every `--what-if` target against the current tree (orca-memory and orca-quiet);
* orca − floor: what orca's own work adds to the serving stack.

`render(doc)` prints them (rich).
"""

from __future__ import annotations

from typing import Any

__all__ = ["comparisons", "render"]

RESPONSES_PAIRS = (("JSON c1", "responses_json_c1", "json_c1"),
                   ("stream c1", "responses_stream_c1", "stream_c1"),
                   ("JSON c16", "responses_json_c16", "json_c16"),
                   ("stream c16", "responses_stream_c16", "stream_c16"))
TRANSLATED_PAIRS = (
    ("Messages client, JSON: Chat Completions channel vs Anthropic channel",
     "messages_to_chat_json_c1", "anthropic_json_c1"),
    ("Messages client, stream: Chat Completions channel vs Anthropic channel",
     "messages_to_chat_stream_c1", "anthropic_stream_c1"),
    ("Chat Completions client, JSON: Anthropic channel vs Chat Completions channel",
     "chat_to_messages_json_c1", "json_c1"),
    ("Chat Completions client, stream: Anthropic channel vs Chat Completions channel",
     "chat_to_messages_stream_c1", "stream_c1"),
)
ORCA_TARGETS = ("orca-memory", "orca-quiet", "orca-redis")


def _rel(a: float, b: float) -> float | None:
    return None if not b else round((a - b) / b, 5)


def _us(instr: float, rate: float | None) -> float | None:
    return None if not rate else round(instr / rate, 2)


def _noise(*figs: dict[str, Any]) -> int:
    """The larger process-to-process spread of the figures, in instructions."""
    return round(max(float(f["spread"]) * float(f["per_request"]) for f in figs))


def comparisons(doc: dict[str, Any]) -> dict[str, Any]:
    inst: dict[str, dict[str, Any]] = doc["instructions"]
    sysc: dict[str, dict[str, Any]] = doc.get("syscalls", {})
    rate = doc.get("rate", {}).get("instructions_per_us")
    order = doc["settings"]["scenarios"]

    def fig(t: str, sc: str) -> dict[str, Any] | None:
        return inst.get(t, {}).get(sc)

    out: dict[str, Any] = {"instructions_per_us": rate, "request_log": [],
                           "responses_vs_chat": {}, "translated_vs_same": {}, "what_if": {},
                           "orca_minus_floor": []}
    for sc in order:
        on, off = fig("orca-memory", sc), fig("orca-quiet", sc)
        if on is None or off is None:
            continue
        diff = on["per_request"] - off["per_request"]
        row: dict[str, Any] = {"scenario": sc, "log_on": on["per_request"],
                               "quiet": off["per_request"], "diff": diff,
                               "relative": _rel(on["per_request"], off["per_request"]),
                               "diff_us": _us(diff, rate), "noise": _noise(on, off)}
        s_on, s_off = sysc.get("orca-memory", {}).get(sc), sysc.get("orca-quiet", {}).get(sc)
        if s_on and s_off:
            row["syscalls_diff"] = round(s_on["per_request"] - s_off["per_request"], 2)
            names = set(s_on["by_name"]) | set(s_off["by_name"])
            by = {n: round(s_on["by_name"].get(n, 0) - s_off["by_name"].get(n, 0), 2)
                  for n in names}
            row["syscalls_diff_by_name"] = {n: v for n, v in sorted(by.items()) if abs(v) >= 0.1}
        out["request_log"].append(row)
    for t in inst:
        rows = []
        for label, resp, chat in RESPONSES_PAIRS:
            r, c = fig(t, resp), fig(t, chat)
            if r and c:
                rows.append({"figure": label, "responses": r["per_request"],
                             "chat": c["per_request"], "diff": r["per_request"] - c["per_request"],
                             "relative": _rel(r["per_request"], c["per_request"]),
                             "noise": _noise(r, c)})
        if rows:
            out["responses_vs_chat"][t] = rows
        rows = []
        for label, tr, same in TRANSLATED_PAIRS:
            a, b = fig(t, tr), fig(t, same)
            if not a or not b:
                continue
            row = {"figure": label, "translated": a["per_request"], "same": b["per_request"],
                   "diff": a["per_request"] - b["per_request"],
                   "relative": _rel(a["per_request"], b["per_request"]), "noise": _noise(a, b),
                   "events_translated": a["events"], "events_same": b["events"]}
            if "per_event" in a and "per_event" in b:
                row.update(per_event_translated=a["per_event"], per_event_same=b["per_event"],
                           per_event_relative=_rel(a["per_event"], b["per_event"]))
            rows.append(row)
        if rows:
            out["translated_vs_same"][t] = rows
    for w in sorted(t for t in inst if "[" in t):
        rows = []
        for sc in order:
            f, now, quiet = fig(w, sc), fig("orca-memory", sc), fig("orca-quiet", sc)
            if f is None:
                continue
            rows.append({"scenario": sc, "what_if": f["per_request"],
                         "now": now and now["per_request"], "now_quiet": quiet and quiet["per_request"],
                         "now_vs_what_if": now and _rel(now["per_request"], f["per_request"]),
                         "quiet_vs_what_if": quiet and _rel(quiet["per_request"], f["per_request"])})
        out["what_if"][w] = rows
    for sc in order:
        floor = fig("floor", sc)
        if floor is None:
            continue
        row = {"scenario": sc, "floor": floor["per_request"]}
        for t in ORCA_TARGETS:
            f = fig(t, sc)
            if f is not None:
                row[t] = f["per_request"]
                row[f"{t}_minus_floor"] = f["per_request"] - floor["per_request"]
        out["orca_minus_floor"].append(row)
    return out


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:+.2%}"


def _n(v: float | None) -> str:
    return "—" if v is None else f"{v:,.0f}"


def _targets(doc: dict[str, Any]) -> list[str]:
    inst = doc["instructions"]
    first = [t for t in ("floor", "orca-memory", "orca-quiet") if t in inst]
    return first + sorted(t for t in inst if "[" in t) + [t for t in ("orca-redis",) if t in inst]


def render(doc: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(width=None if Console().is_terminal else 180)
    inst, st = doc["instructions"], doc["settings"]
    n1, n2 = st["counts"]
    targets = _targets(doc)
    t = Table(title=escape(f"Instructions a request, proxy process only (callgrind; ({n2} − {n1} "
                           f"requests) after {st['warmup']} warm-up; mean of {st['runs']} "
                           "processes [spread: (max − min) / mean])"))
    t.add_column("scenario")
    for name in targets:
        t.add_column(escape(name), justify="right")
    for sc in st["scenarios"]:
        cells = []
        for name in targets:
            f = inst.get(name, {}).get(sc)
            cells.append("—" if f is None else escape(f"{f['per_request']:,} [{f['spread']:.2%}]"))
        if any(c != "—" for c in cells):
            t.add_row(sc, *cells)
    console.print(t)
    _render_syscalls(console, doc, targets)
    _render_comparisons(console, doc)
    _render_facts(console, doc)


def _render_syscalls(console: Any, doc: dict[str, Any], targets: list[str]) -> None:
    from rich.markup import escape
    from rich.table import Table

    sysc = doc.get("syscalls") or {}
    if not sysc:
        why = doc.get("skipped", {}).get("syscalls", "none measured")
        console.print(f"syscalls: not measured ({escape(why)})")
        return
    t = Table(title="Syscalls a request, proxy process (native, strace -f -c, the same two "
                    "batches): total, the largest by name")
    t.add_column("scenario")
    present = [n for n in targets if n in sysc]
    for name in present:
        t.add_column(escape(name), justify="right")
    for sc in doc["settings"]["scenarios"]:
        cells = []
        for name in present:
            f = sysc[name].get(sc)
            top = "" if f is None else ", ".join(f"{k} {v:g}" for k, v in
                                                 list(f["by_name"].items())[:3])
            cells.append("—" if f is None else f"{f['per_request']:g} ({top})")
        if any(c != "—" for c in cells):
            t.add_row(sc, *cells)
    console.print(t)


def _render_comparisons(console: Any, doc: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    cmp = doc["comparisons"]
    rate = cmp.get("instructions_per_us")
    if cmp["request_log"]:
        t = Table(title=f"The request log: orca serve − orca serve --quiet (µs at "
                        f"{_n(rate)} instructions/µs)")
        for col in ("scenario", "log on", "--quiet", "difference", "%", "µs", "noise",
                    "syscalls diff"):
            t.add_column(col, justify="left" if col == "scenario" else "right")
        for r in cmp["request_log"]:
            by = ", ".join(f"{k} {v:+g}" for k, v in r.get("syscalls_diff_by_name", {}).items())
            sd = r.get("syscalls_diff")
            t.add_row(r["scenario"], _n(r["log_on"]), _n(r["quiet"]), f"{r['diff']:+,}",
                      _pct(r["relative"]), "—" if r["diff_us"] is None else f"{r['diff_us']:+.1f}",
                      _n(r["noise"]), "—" if sd is None else f"{sd:+g}" + (f" ({by})" if by else ""))
        console.print(t)
    for target, rows in cmp["responses_vs_chat"].items():
        t = Table(title=escape(f"Responses API against Chat Completions, {target}"))
        for col in ("figure", "responses", "chat", "difference", "%", "noise"):
            t.add_column(col, justify="left" if col == "figure" else "right")
        for r in rows:
            t.add_row(r["figure"], _n(r["responses"]), _n(r["chat"]), f"{r['diff']:+,}",
                      _pct(r["relative"]), _n(r["noise"]))
        console.print(t)
    for target, rows in cmp["translated_vs_same"].items():
        t = Table(title=escape(f"Translated against same-format, {target} (per request; "
                               "streams also per event the client receives)"))
        for col in ("figure", "translated", "same format", "difference", "%", "events",
                    "per event", "per event %"):
            t.add_column(col, justify="left" if col == "figure" else "right")
        for r in rows:
            pe = (f"{_n(r['per_event_translated'])} / {_n(r['per_event_same'])}"
                  if "per_event_translated" in r else "—")
            t.add_row(r["figure"], _n(r["translated"]), _n(r["same"]), f"{r['diff']:+,}",
                      _pct(r["relative"]), f"{r['events_translated']} / {r['events_same']}", pe,
                      _pct(r.get("per_event_relative")))
        console.print(t)
    for w, rows in cmp["what_if"].items():
        t = Table(title=escape(f"{w} against the current tree"))
        for col in ("scenario", "what-if", "now (log on)", "now (--quiet)", "now ÷ what-if − 1",
                    "quiet ÷ what-if − 1"):
            t.add_column(col, justify="left" if col == "scenario" else "right")
        for r in rows:
            t.add_row(r["scenario"], _n(r["what_if"]), _n(r["now"]), _n(r["now_quiet"]),
                      _pct(r["now_vs_what_if"]), _pct(r["quiet_vs_what_if"]))
        console.print(t)
    if cmp["orca_minus_floor"]:
        t = Table(title="orca − floor: orca's own work on top of the serving stack")
        cols = [c for c in ORCA_TARGETS if any(c in r for r in cmp["orca_minus_floor"])]
        t.add_column("scenario")
        t.add_column("floor", justify="right")
        for c in cols:
            t.add_column(f"{c} − floor", justify="right")
        for r in cmp["orca_minus_floor"]:
            t.add_row(r["scenario"], _n(r["floor"]),
                      *(_n(r.get(f"{c}_minus_floor")) for c in cols))
        console.print(t)


def _render_facts(console: Any, doc: dict[str, Any]) -> None:
    from rich.markup import escape

    m, st, rate = doc["machine"], doc["settings"], doc["rate"]
    wk = doc.get("wakeups") or {}
    if wk.get("idle_rate"):
        lo, hi = wk["idle_rate"]
        line = (f"loop wake-ups (uvicorn's 10 Hz tick): {lo:,}–{hi:,} instructions a second "
                "while idle")
        if "load_rate" in wk:
            line += (f"; while serving, {wk['load_rate']:,} a second of wall time (fit over "
                     f"{wk['pairs']} pairs of processes), about {wk['share_mean']:.2%} of a "
                     f"figure (at most {wk['share_max']:.2%}); not subtracted. Spread between "
                     f"processes: median {wk['spread_median']:.2%}, max {wk['spread_max']:.2%}; "
                     f"with the wake-ups subtracted {wk['spread_fitted_median']:.2%} and "
                     f"{wk['spread_fitted_max']:.2%}")
        console.print(line)
    if "instructions_per_us" in rate:
        nat = rate["native"]
        console.print(f"rate: bench/instr_rate.py counts {rate['instructions_per_iteration']:,} "
                      f"instructions an iteration, natively {nat['best_us']:.3f} µs (best of "
                      f"{nat['runs']}; median {nat['median_us']:.3f}): "
                      f"{rate['instructions_per_us']:,} instructions/µs "
                      f"({rate['instructions_per_us_median']:,} at the median)")
    src = doc.get("source", {})
    console.print(f"machine: nproc {m['nproc']}, Python {m['python']}, {m['platform']}; "
                  f"load {m['loadavg_at_start']} → {m['loadavg_at_end']}; {m['date']}; "
                  f"orca_cli at {src.get('commit')}"
                  + (" (uncommitted changes)" if src.get("orca_cli_dirty") else "")
                  + f"; {st['valgrind']}, setarch -R {'on' if st['setarch_R'] else 'off'}")
    for name, why in {**doc.get("skipped", {}), **doc.get("failed", {})}.items():
        console.print(f"[yellow]skipped {escape(name)}[/]: {escape(why)}")
    for target, scs in doc.get("unserved", {}).items():
        console.print(escape(f"{target} does not run: " + "; ".join(
            f"{sc} ({why[:80]})" for sc, why in scs.items())))
    for who, errs in doc.get("errors", {}).items():
        console.print(f"[red]{escape(who)}[/]: " + escape("; ".join(
            f"{sc}: {e}" for sc, e in errs.items())))
    for name, note in doc.get("notes", {}).items():
        console.print(escape(f"{name}: {note}"))
