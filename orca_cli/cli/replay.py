"""`orca replay [--sessions N] [--seed S] [--agent-loop] [--state memory|redis] [--sweep]
[--adversarial] [--plots DIR] [--http] [--config PATH] [--json]` (SPEC §10)."""

from __future__ import annotations

from enum import Enum
from typing import Any

import typer

from orca_cli.cli.output import EXIT_USAGE, err_console, fail, out_console, print_json

DEFAULT_SESSIONS = 400  # the built-in corpus's size when --sessions is not given


class StateChoice(str, Enum):
    memory = "memory"
    redis = "redis"


def register(app: typer.Typer) -> None:
    @app.command("replay")
    def replay_cmd(
        sessions: int | None = typer.Option(None, "--sessions", min=1, max=20000,
                                            show_default=False, help="Sessions of the "
                                            f"built-in corpus (default {DEFAULT_SESSIONS})."),
        seed: int = typer.Option(20260814, "--seed"),
        agent_loop: bool = typer.Option(False, "--agent-loop", help="Follow each user turn "
                                        "with 1-3 tool-result continuations."),
        state: StateChoice = typer.Option(StateChoice.memory, "--state"),
        redis_url: str = typer.Option("redis://127.0.0.1:6379/15", "--redis-url"),
        sweep: bool = typer.Option(False, "--sweep", help="T2 from 0.35 to 0.75."),
        adversarial: bool = typer.Option(False, "--adversarial", help="Every request asks "
                                         "for strong; share caps on."),
        config: str | None = typer.Option(None, "--config", help="Replay with this config "
                                          "(default: the built-in reference config)."),
        plots: str | None = typer.Option(None, "--plots", metavar="DIR", help="Write PNG "
                                         "figures into DIR (implies --sweep --adversarial; "
                                         "needs the plots extra)."),
        http: bool = typer.Option(False, "--http", help="Also run the corpus through a real "
                                  "`orca serve` on loopback with sim channels (wall clock)."),
        http_concurrency: int = typer.Option(8, "--http-concurrency", min=1, max=256,
                                             help="Sessions in flight at once with --http."),
        corpus: str | None = typer.Option(None, "--corpus", metavar="FILE", help="Replay "
                                          "the sessions of a JSON-lines file (one request "
                                          "a line: session, body, optional api, "
                                          "needs_strong, archetype) instead of the "
                                          "built-in corpus, as recorded: --sessions, "
                                          "--agent-loop and --agent-shaped shape the "
                                          "built-in corpus and are refused with it."),
        agent_shaped: bool = typer.Option(False, "--agent-shaped", help="Give every session "
                                          "a real agent's prefix in its wire format "
                                          "(Claude-Code-sized 20 KB and 17 tools, Messages; "
                                          "Codex-sized 10 KB and 8 tools, Responses) and its "
                                          "tool-result loop."),
        as_json: bool = typer.Option(False, "--json", help="Print every figure as JSON."),
    ) -> None:
        """Replay the seeded corpus through the real decision code and a real store.

        \b
        Example:
            orca replay
            orca replay --sweep --adversarial --json
            orca replay --plots figures/
            orca replay --http --sessions 100
            orca replay --corpus my-sessions.jsonl --json
            orca replay --agent-shaped
        """
        from orca_cli.config.load import load, loads
        from orca_cli.errors import ConfigError
        from orca_cli.replay.reference import REFERENCE_TOML
        from orca_cli.replay.run import ReplayOptions

        try:
            cfg = load(config) if config else loads(REFERENCE_TOML,
                                                    source="built-in reference config")
        except ConfigError as exc:
            fail(str(exc))
        if not any(r.session_aware and r.escalation_pool for r in cfg.routers.values()):
            fail("the replay needs a session-aware router with a strong pool")
        if plots is not None:
            from orca_cli.replay.plots import PlotsUnavailable, require

            try:
                require()
            except PlotsUnavailable as exc:
                fail(str(exc))
        if corpus is not None:
            from orca_cli.replay.corpus_file import CorpusError, load_corpus

            shaping = [flag for flag, on in (("--sessions", sessions is not None),
                                             ("--agent-loop", agent_loop),
                                             ("--agent-shaped", agent_shaped)) if on]
            if shaping:
                fail(f"--corpus replays the file's sessions and turns as recorded, so "
                     f"{' and '.join(shaping)} cannot apply to it; drop "
                     f"{'it' if len(shaping) == 1 else 'them'} or the --corpus", EXIT_USAGE)
            try:
                load_corpus(corpus)  # one-sentence errors before any progress bar
            except CorpusError as exc:
                fail(str(exc))
        opts = ReplayOptions(sessions=sessions or DEFAULT_SESSIONS, seed=seed, agent_loop=agent_loop, corpus=corpus,
                             agent_shaped=agent_shaped,
                             state=state.value, redis_url=redis_url,
                             sweep=sweep or plots is not None,
                             adversarial=adversarial or plots is not None,
                             http=http, http_concurrency=http_concurrency)
        doc = _run_with_progress(cfg, opts, quiet=as_json)
        if plots is not None:
            from orca_cli.replay.plots import write_plots

            doc["plots"] = [str(p) for p in write_plots(doc, plots)]
            if not as_json:
                err_console().print(f"wrote {len(doc['plots'])} figures to {plots}")
        if as_json:
            print_json(doc)
        else:
            _render(doc)


def _run_with_progress(cfg: Any, opts: Any, *, quiet: bool) -> dict[str, Any]:
    from rich.progress import Progress

    from orca_cli.replay.run import replay

    with Progress(console=err_console(), transient=True, disable=quiet) as bar:
        tasks: dict[str, Any] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        return replay(cfg, opts, progress)


def _render(doc: dict[str, Any]) -> None:
    from rich.table import Table

    console = out_console()
    if not console.is_terminal:
        console.width = max(console.width, 110)
    c = doc["config"]
    console.print(f"replay: {c['sessions']} sessions ({c.get('corpus', 'built-in')} corpus), "
                  f"{c['turns']} requests, seed {c['seed']}, "
                  f"{c['source']}; share caps off for these figures")
    t = Table(title="outcomes by archetype", title_justify="left")
    for col in ("archetype", "sessions", "escalated", "by trigger", "first turn",
                "false positives"):
        t.add_column(col)
    for name, a in doc["archetypes"].items():
        t.add_row(name, str(a["sessions"]), str(a["escalated"]),
                  ", ".join(f"{k} {v}" for k, v in a["by_trigger"].items()) or "-",
                  str(a["first_turn"] or "-"), str(a["false_positives"]))
    console.print(t)
    p = Table(title="policies", title_justify="left")
    for col in ("policy", "$ per 1,000 sessions", "served strong", "hard-turn coverage"):
        p.add_column(col)
    for name, v in doc["policies"].items():
        p.add_row(name, f"{v['cost_per_1k']:.2f}", f"{v['strong_share']:.1%}",
                  f"{v['coverage']:.1%}")
    if doc.get("oracle"):
        p.add_section()
        for name, v in doc["oracle"].items():
            p.add_row(f"oracle_{name}", f"{v['cost_per_1k']:.2f}", f"{v['strong_share']:.1%}",
                      f"{v['coverage']:.1%}")
    console.print(p)
    if doc.get("oracle"):
        console.print("oracle_*: every request labelled needs-strong served strong, nothing "
                      "else; per_request pays a cold cache write at each switch, sticky keeps "
                      "a conversation strong once it needed it")
    bands = doc.get("bands")
    if bands:
        b = Table(title=f"base-tier turns by band (banding score, t1={bands['t1']:g}, "
                        f"t2={bands['t2']:g})", title_justify="left")
        for col in ("archetype", "base turns", "weak", "mid", "strong"):
            b.add_column(col)
        for name, v in [*bands["archetypes"].items(), ("all", bands["all"])]:
            b.add_row(name, str(v["base_turns"]), f"{v['weak']:.1%}", f"{v['mid']:.1%}",
                      f"{v['strong']:.1%}")
        console.print(b)
    console.print(_latency_line(doc))
    if doc["prevalence"]:
        pv = Table(title="prevalence sensitivity ($ per 1,000 sessions)", title_justify="left")
        for col in ("hard share", "escalation", "cheap only", "frontier only"):
            pv.add_column(col)
        for row in doc["prevalence"]:
            pv.add_row(f"{row['hard_share']:.0%}", f"{row['escalation']:.2f}",
                       f"{row['cheap_only']:.2f}", f"{row['frontier_only']:.2f}")
        console.print(pv)
    if "sweep" in doc:
        sw = Table(title="T2 sweep", title_justify="left")
        for col in ("t2", "$ per 1,000", "served strong", "coverage", "false positives"):
            sw.add_column(col)
        for row in doc["sweep"]:
            sw.add_row(f"{row['t2']:.2f}", f"{row['cost_per_1k']:.2f}",
                       f"{row['strong_share']:.1%}", f"{row['coverage']:.1%}",
                       str(row["false_positives"]))
        console.print(sw)
    if "adversarial" in doc:
        a = doc["adversarial"]
        console.print(f"adversarial (caps on, every request asks strong): served-strong share "
                      f"{a['final_share']:.1%} against a cap of {a['cap']:.0%}; {a['denied']} "
                      f"denials, {a['audited']} audited")
    if "http" in doc:
        _render_http(console, doc)


def _latency_line(doc: dict[str, Any]) -> str:
    """The escalation latency, said as what happened: with no session escalated there was
    no ratchet firing to wait for, only hard turns served cheap throughout."""
    lat = doc["latency"]
    if not lat["sessions"]:
        return "escalation latency: no session needed strong"
    if not sum(a["escalated"] for a in doc["archetypes"].values()):
        return (f"escalation latency: no session escalated; the {lat['sessions']} sessions that "
                f"needed strong were served cheap throughout "
                f"({lat['mean_hard_turns_served_cheap']} hard turns on average, max {lat['max']})")
    return (f"escalation latency: {lat['mean_hard_turns_served_cheap']} hard turns served "
            f"cheap on average before the ratchet fired (max {lat['max']}, "
            f"{lat['sessions']} sessions that needed strong)")


def _render_http(console: Any, doc: dict[str, Any]) -> None:
    h = doc["http"]
    console.print(f"http: the same corpus through a real orca serve on 127.0.0.1 (sim channels, "
                  f"{h['store']} store, share caps {h['share_caps']}): {h['requests']} requests "
                  f"in {h['elapsed_s']:.1f} s, {h['requests_per_s']:.0f} requests/s with "
                  f"{h['concurrency']} sessions in flight")
    console.print(f"  {h['clock']}; served strong {h['escalation']['strong_share']:.1%}, "
                  f"hard-turn coverage {h['escalation']['coverage']:.1%}")
    if h["matches_in_process"]:
        console.print("  outcomes by archetype from the response headers match the in-process "
                      "run")
        return
    console.print("  outcomes by archetype from the response headers DIFFER from the "
                  "in-process run:")
    for name, a in h["archetypes"].items():
        ref = doc["archetypes"].get(name)
        if a != ref:
            console.print(f"    {name}: http {a} vs in-process {ref}")
