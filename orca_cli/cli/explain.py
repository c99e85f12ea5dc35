"""`orca explain REQUEST_ID|last [--session S] [--json]` (SPEC §1.1, §8, §15): the stored
trace as a tree. `last` (or no id) explains the newest client request, of `--session` when
given: real agents never show the response headers that carry the request id. A child
request orca made itself (the auto router's model classifier: its trace has a `purpose`) is
skipped there; it is explained by its own id, which its parent's trace names.

The trace is rendered as stored, never recomputed: the tier decision and why, each trigger's
evaluation, the per-feature difficulty contributions, the cap state, the pin reads, the
candidates with scores and exclusions, the attempts, usage and cost, and the intents with
whether they were committed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer

from orca_cli.cli.operator import (
    Operator,
    config_option,
    json_option,
    router_option,
    token_option,
    url_option,
)
from orca_cli.cli.output import out_console, print_json

__all__ = ["LAST_LOOKBACK", "register", "render_trace"]

LAST_LOOKBACK = 50  # the newest traces `explain last` looks through for a client request


def register(app: typer.Typer) -> None:
    @app.command("explain")
    def explain_cmd(
        request_id: str | None = typer.Argument(
            None, metavar="[REQUEST_ID|last]",
            help="orca's X-Orca-Request-Id (or its first 8 hex digits, as `orca requests` "
                 "prints it), the client's X-Request-Id, or last (the default)."),
        session: str | None = typer.Option(None, "--session", "-s",
                                           help="Explain this session's newest request."),
        router: str | None = router_option(),
        as_json: bool = json_option(),
        url: str | None = url_option(),
        token: str | None = token_option(),
        config: str | None = config_option(),
    ) -> None:
        """Explain one routing decision: the newest request, or one by id.

        \b
        Example:
            orca explain last
            orca explain --session my-agent
            orca explain req_3f2a9c0e1b7d4a6f8e2c1d0b
            orca explain 3f2a9c0e --json
        """
        op = Operator(url, config, token=token)
        trace = _find(op, request_id, session, router)
        if as_json:
            print_json(trace)
        else:
            out_console().print(render_trace(trace))


def _find(op: Operator, request_id: str | None, session: str | None,
          router: str | None) -> Any:
    from orca_cli.cli.output import fail

    if request_id in (None, "last") or session is not None:
        if request_id not in (None, "last"):
            fail("pass a REQUEST_ID or --session, not both", 2)
        found = op.requests(session=session, router=router, limit=1)
        if found and found[0].get("purpose"):
            # A child request (each client request makes at most one): look a little further
            # back, past the children of concurrent requests too.
            found = [t for t in op.requests(session=session, router=router,
                                            limit=LAST_LOOKBACK) if not t.get("purpose")]
        if not found:
            whose = f" for session {session!r}" if session else ""
            fail(f"no request found{whose}: send one through the sidecar first (traces are "
                 "kept [server].trace_ttl_s)")
        return found[0]
    return op.explain(request_id)


def _e(value: Any) -> str:
    """Stored data as plain text for the tree: never markup, and `-` for a missing value."""
    from rich.markup import escape

    return "-" if value is None else escape(str(value))


def _short(value: Any, limit: int = 20) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _num(value: Any, digits: int = 3) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:.{digits}f}"
    return "-"


def render_trace(t: Mapping[str, Any]) -> Any:
    """A rich Tree of one stored trace."""
    from rich.tree import Tree

    client = f" (client id {_e(t['client_request_id'])})" if t.get("client_request_id") else ""
    session = (f"session {_e(t.get('session_id'))} ({_e(t.get('session_source') or '?')})"
               if t.get("session_id") else "no session")
    root = Tree(f"[bold]{_e(t.get('request_id'))}[/]{client} · router "
                f"{_e(t.get('router') or '-')} · {session} · {_e(t.get('inbound_api'))} · "
                f"model {_e(t.get('requested_model') or None)} · status {_e(t.get('status'))} · "
                f"{_num(t.get('latency_ms'), 1)} ms")
    if t.get("error"):
        root.add(f"[red]error[/]: {_e(t['error'])}")
    if t.get("purpose"):
        root.add(f"child request: {_e(t['purpose'])} for {_e(t.get('parent_request_id'))}")
    if t.get("route"):
        _route(root, t["route"])
    _tier(root, t.get("tier") or {})
    _difficulty(root, t.get("difficulty") or {})
    _caps(root, t.get("caps") or {})
    _pins(root, t.get("pins") or [])
    auto = t.get("auto")
    if isinstance(auto, Mapping):
        _auto(root, auto)
    # The auto section says all the note says (the note names only the first workload).
    _candidates(root, t.get("candidates") or [],
                None if isinstance(auto, Mapping) else t.get("strategy_note"))
    sel = t.get("selected")
    root.add("selected: " + (f"{_e(sel['model'])} @ {_e(sel['channel'])} key "
                             f"#{_e(sel['key_index'])} (fp {_e(sel.get('key_fp') or '-')})"
                             if sel else "nothing"))
    attempts = root.add(f"attempts ({len(t.get('attempts') or [])})")
    for i, a in enumerate(t.get("attempts") or [], 1):
        err = f" · {_e(a['error'])}" if a.get("error") else ""
        attempts.add(f"{i}. {_e(a.get('model'))} @ {_e(a.get('channel'))} key "
                     f"#{_e(a.get('key_index'))} → {_e(a.get('status'))} in "
                     f"{_num(a.get('latency_ms'), 1)} ms{err}")
    tr = t.get("translation")
    if tr:
        hosted = tr.get("dropped_tools") or []
        dropped = f" · hosted tools dropped: {_e(', '.join(map(str, hosted)))}" if hosted else ""
        if tr.get("thinking_off"):
            dropped += " · extended thinking off (the tool loop's turn has no thinking block)"
        if tr.get("thinking_form"):
            dropped += f" · thinking written in the {_e(tr['thinking_form'])} form the model takes"
        if tr.get("sampling_dropped"):
            dropped += (" · sampling dropped (the model refuses it): "
                        f"{_e(', '.join(map(str, tr['sampling_dropped'])))}")
        if tr.get("params_dropped"):
            dropped += (" · parameters the target does not take dropped: "
                        f"{_e(', '.join(map(str, tr['params_dropped'])))}")
        for old, new in (tr.get("params_renamed") or {}).items():
            dropped += f" · {_e(old)} sent as {_e(new)}"
        root.add(f"translation: {_e(tr.get('from'))} → {_e(tr.get('to'))} · cache breakpoints "
                 f"added {_e(tr.get('cache_breakpoints_added'))} · reasoning dropped "
                 f"{_e(tr.get('dropped_reasoning'))} · ids rewritten {_e(tr.get('rewritten_ids'))}"
                 f"{dropped}")
    u = t.get("usage")
    usage = (f"prompt {_e(u.get('prompt_tokens'))} (cached {_e(u.get('cached_tokens'))}, cache write "
             f"{_e(u.get('cache_write_tokens'))}) · output {_e(u.get('output_tokens'))}"
             + (" · fast mode" if u.get("speed") == "fast" else "")
             if u else "no usage reported")
    root.add(f"usage: {usage} · cost ${_num(t.get('cost_usd'), 6)} · cache "
             f"{_e(t.get('cache') or '-')}")
    committed = "committed" if t.get("committed") else "[yellow]not committed[/]"
    intents = root.add(f"intents ({committed})")
    for i in t.get("intents") or []:
        fields = ", ".join(f"{k}={_e(_short(v))}" for k, v in i.items()
                           if k != "type" and v not in (None, "", [], False))
        intents.add(f"{_e(i.get('type'))}" + (f" ({fields})" if fields else ""))
    degraded = "[red]degraded store[/]" if t.get("degraded") else "store healthy"
    root.add(f"{degraded} · algorithm {_e(t.get('algorithm_version'))}")
    return root


def _route(root: Any, r: Mapping[str, Any]) -> None:
    """SPEC §17: the route walked, its version, node path and split buckets, the outcome."""
    version = f"version {_e(r.get('version'))}" if r.get("version") else "config routes"
    key = f"key {_e(r.get('key'))}" if r.get("key") else "no inbound key"
    if not r.get("route"):
        node = root.add(f"route: none matched ({version}; {key})")
    else:
        outcome = (f"target {_e(r.get('target'))}" if r.get("decision") == "target"
                   else f"deny {_e((r.get('deny') or {}).get('status'))}")
        node = root.add(f"route: {_e(r.get('route'))} ({version}; {key}) · path "
                        f"{_e(' → '.join(r.get('path') or []))} · {outcome}")
        if r.get("bucket"):
            node.add(f"split bucket: {_e(r['bucket'])}")
    b = r.get("budget")
    if b:
        node.add(f"budget {_e(b.get('name'))}: {_e(b.get('verdict'))} · spent "
                 f"{_usd(b.get('spent_usd'))} of {_usd(b.get('limit_usd'))} "
                 f"({_e(b.get('counter'))})")


def _usd(value: Any) -> str:
    """A budget amount as the 429 and `orca budget` write it (`format_usd`), `-` if absent."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    from orca_cli.routing.routes.budget import format_usd

    return format_usd(float(value))


def _tier(root: Any, tier: Mapping[str, Any]) -> None:
    trigger = f" (trigger {_e(tier['trigger'])})" if tier.get("trigger") else ""
    if tier.get("decision") is None:
        root.add("[bold]tier: none[/] (refused before routing)")
        return
    node = root.add(f"[bold]tier: {_e(tier.get('decision'))}; reason={_e(tier.get('reason'))}"
                    f"[/]{trigger}")
    ev = tier.get("evaluations") or {}
    a = ev.get("A")
    if a:
        ask = (f"ask {_e(a.get('ask'))} by {_e(a.get('actor'))}" if a.get("ask")
               else "no header, no pending ask")
        if a.get("note"):  # the operator's `--reason` of the pending ask it resolved
            ask += f" ({_e(repr(str(a['note'])))})"
        node.add(f"A explicit: {ask}" + (" → fires" if a.get("fires") else ""))
    b = ev.get("B")
    if b:
        turn = "user turn" if b.get("user_turn") else "not a user turn: neutral"
        node.add(f"B difficulty: delta {_num(b.get('delta'))} vs t2 {_num(b.get('t2'))} "
                 f"({turn}) · streak {_e(b.get('streak'))}/{_e(b.get('needed'))}"
                 + (" · a repeated turn: no step" if b.get("repeat") else "")
                 + (" → fires" if b.get("fires") else ""))
    c = ev.get("C")
    if c:
        node.add(f"C strikes: {_e(c.get('strikes'))}/{_e(c.get('needed'))} in the last "
                 f"{_e(c.get('window_turns'))} turns"
                 + (" · this turn strikes" if c.get("request_strike") else "")
                 + (f" (again: {_e(', '.join(map(str, c['repeated'])))})"
                    if isinstance(c.get("repeated"), list) and c["repeated"] else "")
                 + (" · a repeated turn: no strike" if c.get("repeat") else "")
                 + (" → fires" if c.get("fires") else ""))
    d = ev.get("deescalation")
    if d:
        node.add(f"de-escalation: cache {'cold' if d.get('cold') else 'warm'} · clean turns "
                 f"{_e(d.get('clean_turns'))}/{_e(d.get('needed'))} · delta {_num(d.get('delta'))} "
                 f"vs t1 {_num(d.get('t1'))}")
    sub = ev.get("sub_agent")
    if sub:
        why = ("a conversation already served from base" if sub.get("known") else
               f"a new conversation opening with delta {_num(sub.get('delta'))} "
               f"< t1 {_num(sub.get('t1'))}")
        node.add(f"sub-agent: {why} (opening {_e(sub.get('conversation'))}) → base")
    caps = ev.get("caps")
    if caps:
        node.add(f"caps at resolve: {_e(caps.get('session_count'))}/{_e(caps.get('max_per_session'))} "
                 f"escalations used · denied {_e(caps.get('denied') or 'no')}")
    if tier.get("shadow"):
        sh = tier["shadow"]
        node.add(f"shadow: would escalate {'yes' if sh.get('would') else 'no'}"
                 + (f" ({_e(sh.get('trigger'))})" if sh.get("trigger") else ""))


def _features(node: Any, label: str, d: Mapping[str, Any] | None) -> None:
    if not d:
        return
    sub = node.add(f"{label} {_num(d.get('score'))}")
    for name, f in (d.get("features") or {}).items():
        sub.add(f"{_e(name)}: {_num(f.get('value'))} → {_num(f.get('contribution'))}")


def _difficulty(root: Any, d: Mapping[str, Any]) -> None:
    node = root.add("difficulty" + (" (the turn after an agent's compaction summary)"
                                     if d.get("compacted") else ""))
    _features(node, "delta", d.get("delta"))
    if d.get("full"):
        _features(node, "full", d.get("full"))
    else:
        node.add(f"full: not computed ({_e(d.get('full_skipped') or 'n/a')})")


def _share(label: str, s: Any) -> str:
    if not isinstance(s, Mapping):
        return f"{label} -"
    return (f"{label} {_num(s.get('ratio'))} ({_num(s.get('strong'), 0)}/"
            f"{_num(s.get('total'), 0)}, cap {_num(s.get('cap'), 2)})")


def _caps(root: Any, caps: Mapping[str, Any]) -> None:
    warm = caps.get("warmup") or {}
    inverted = " inverted after state loss" if warm.get("inverted") else ""
    if not caps or all(caps.get(k) is None for k in ("session_count", "share", "warmup")):
        root.add("caps: not evaluated")
        return
    root.add(f"caps: session count {_e(caps.get('session_count'))} · "
             f"{_share('share', caps.get('share'))} · "
             f"{_share('workspace', caps.get('workspace_share'))} · warm-up "
             f"{_e(warm.get('requests', '-'))}{inverted}")


def _pins(root: Any, pins: list[Mapping[str, Any]]) -> None:
    node = root.add(f"pins ({len(pins)})")
    for p in pins:
        value = p.get("value")
        if isinstance(value, Mapping):
            value = f"{value.get('channel')} key #{value.get('key_index')}"
        shown = f" {_e(value)}" if value is not None else ""
        node.add(f"{_e(p.get('kind'))} {_e(p.get('tier'))}: {_e(p.get('status'))}{shown} "
                 f"({_e(p.get('reason'))})")


def _candidates(root: Any, cands: list[Mapping[str, Any]], note: Any) -> None:
    head = f"candidates ({len(cands)})" + (f" · {_e(note)}" if note else "")
    node = root.add(head)
    for c in cands:
        if c.get("excluded"):
            why = f" ({_e(c['reason'])})" if c.get("reason") else ""
            node.add(f"[dim]{_e(c.get('model'))} excluded: {_e(c['excluded'])}{why}[/]")
        else:
            node.add(f"{_e(c.get('model'))} @ {_e(c.get('channel'))} score "
                     f"{_num(c.get('score'))}")


def _auto(root: Any, a: Mapping[str, Any]) -> None:
    """SPEC §16 Explain: the auto router's decision as stored — workloads, complexity and
    confidence, which classifier answered and why a fallback, the objective and profile,
    each candidate's score and factors, exclusions, the fallback order. No content."""
    workloads = ", ".join(str(w) for w in a.get("workloads") or ()) or "general"
    node = root.add(f"auto: {_e(workloads)} · complexity {_num(a.get('complexity'), 2)} · "
                    f"confidence {_num(a.get('confidence'), 2)} · objective "
                    f"{_e(a.get('objective'))} / {_e(a.get('spend_profile'))} · algorithm "
                    f"{_e(a.get('algorithm'))}")
    classifier = f"classifier: {_e(a.get('classifier'))}"
    if a.get("fallback_reason"):
        classifier += f" (fallback: {_e(a['fallback_reason'])})"
    if a.get("classifier_request_id"):
        classifier += f" · child request {_e(a['classifier_request_id'])}"
    node.add(classifier)
    caps = a.get("caps") or {}
    if caps.get("input") is not None or caps.get("output") is not None:
        node.add(f"price caps $/1M: input {_e(caps.get('input'))} · output "
                 f"{_e(caps.get('output'))}")
    ranked = a.get("candidates") or []
    scored = node.add(f"scored ({len(ranked)})")
    for c in ranked:
        factors = ", ".join(f"{_e(k)} {_num(v)}" for k, v in (c.get("factors") or {}).items())
        scored.add(f"{_e(c.get('model'))} {_num(c.get('score'))}"
                   + (f" ({factors})" if factors else ""))
    excluded = a.get("excluded") or []
    if excluded:
        ex = node.add(f"excluded ({len(excluded)})")
        for x in excluded:
            ex.add(f"[dim]{_e(x.get('model'))}: {_e(x.get('reason'))}[/]")
    order = [str(m) for m in a.get("fallback_order") or ()]
    node.add("fallback order: " + (_e(" → ".join(order)) if order else "none"))
    if a.get("capability_relaxed"):
        node.add("capability relaxed: no model met complexity + margin; the best remaining "
                 "were kept")
