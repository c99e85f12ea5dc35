"""`orca demo [--config PATH] [--json]`: the sidecar on a real loopback port with simulated
upstreams, four scripted sessions over real HTTP, every turn's routing shown."""

from __future__ import annotations

import typer

from orca_cli.cli.output import fail, out_console, print_json


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo_cmd(
        config: str | None = typer.Option(None, "--config", help="Config to serve (default: "
                                          "the built-in example, sim channels only)."),
        as_json: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
        keep: bool = typer.Option(False, "--keep", help="Leave the demo's sidecar running "
                                  "(until Ctrl-C) so orca requests, explain and session show "
                                  "work on what it did."),
        port: int = typer.Option(0, "--port", help="The demo sidecar's port (default: a free "
                                 "one)."),
    ) -> None:
        """Run an offline demo over real HTTP with simulated upstreams (no API key).

        \b
        Example:
            orca demo
            orca demo --keep      # then, in another terminal: orca requests
        """
        from dataclasses import asdict

        from orca_cli.config.load import load, loads
        from orca_cli.config.template import example_text
        from orca_cli.demo import run
        from orca_cli.errors import ConfigError

        try:
            cfg = load(config) if config else loads(example_text(), source="built-in example")
        except ConfigError as exc:
            fail(str(exc))
        if not {"coding", "background"} <= set(cfg.routers):
            fail("the demo drives routers `coding` and `background`; the config has "
                 f"{sorted(cfg.routers)} — run it without --config to use the built-in example")
        if keep:
            def kept(rows: list, url: str) -> None:  # type: ignore[type-arg]
                if as_json:
                    print_json([asdict(r) for r in rows])
                else:
                    _render(rows, url)
                import sys

                sys.stderr.write(f"orca: the demo sidecar keeps running at {url}; Ctrl-C "
                                 "stops it\n")

            try:
                run(cfg, keep=kept, port=port)
            except KeyboardInterrupt:
                return
            return
        rows = run(cfg, port=port)
        if as_json:
            print_json([asdict(r) for r in rows])
            return
        _render(rows)


def _render(rows: list, kept_url: str | None = None) -> None:  # type: ignore[type-arg]
    from rich.table import Table

    console = out_console()
    if not console.is_terminal:
        console.width = max(console.width, 120)  # piped output: keep one row per request
    table = Table(title="orca demo: every request went through a real sidecar on loopback",
                  title_justify="left")
    for col in ("session", "turn", "X-Orca-Session-Tier", "model", "channel", "prompt",
                "cached", "cost $"):
        table.add_column(col, justify="right" if col in ("turn", "prompt", "cached", "cost $")
                         else "left", no_wrap=True,
                         min_width=26 if col == "X-Orca-Session-Tier" else None)
    for r in rows:
        table.add_row(r.session, str(r.turn), r.tier, r.model, r.channel, str(r.prompt_tokens),
                      str(r.cached_tokens), f"{r.cost_usd:.5f}")
    console.print(table)
    strong = sum(1 for r in rows if r.tier.startswith("strong"))
    prompt = sum(r.prompt_tokens for r in rows) or 1
    cached = sum(r.cached_tokens for r in rows)
    summary = (f"{len(rows)} requests, {strong} served strong, cache-hit tokens "
               f"{cached / prompt:.0%}, total ${sum(r.cost_usd for r in rows):.4f}.")
    if kept_url is None:
        console.print(summary + " Run `orca demo --keep` to leave its sidecar running and "
                      "look at it with `orca requests`, `orca explain last` and "
                      "`orca session show`.")
    else:
        console.print(summary + f" Its sidecar keeps running at {kept_url}: try "
                      f"`orca requests`, `orca explain {rows[-1].request_id[4:12]}`, "
                      f"`orca session show failure-loop` or `orca statusline --session "
                      "failure-loop` in another terminal.")
