"""`orca demo [--config PATH] [--json]`: the sidecar on a real loopback port with simulated
upstreams, five scripted sessions over real HTTP, every turn's routing shown (the `format`
column: the client's wire format, `→` the channel's when the request went translated)."""

from __future__ import annotations

from typing import Any

import typer

from orca_cli.cli.output import fail, out_console, print_json
from orca_cli.cli.serve import checked_port


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo_cmd(
        config: str | None = typer.Option(None, "--config", help="Config to serve (default: "
                                          "the built-in example, sim channels only)."),
        as_json: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
        keep: bool = typer.Option(False, "--keep", help="Leave the demo's sidecar running "
                                  "(until Ctrl-C) so orca requests, explain and session show "
                                  "work on what it did."),
        port: int = typer.Option(0, "--port", callback=checked_port,
                                 help="The demo sidecar's port (default: a free one)."),
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


def _format(row: Any) -> str:
    """The client's wire format, and the channel's when the request went translated."""
    if row.api == row.upstream_api:
        return str(row.api)
    return f"{row.api} → {row.upstream_api}"


def _render(rows: list, kept_url: str | None = None) -> None:  # type: ignore[type-arg]
    from rich.table import Table

    console = out_console()
    if not console.is_terminal:
        console.width = max(console.width, 160)  # piped output: keep one row per request
    table = Table(title="orca demo: every request went through a real sidecar on loopback",
                  title_justify="left")
    for col in ("session", "turn", "format", "X-Orca-Session-Tier", "model", "channel",
                "prompt", "cached", "cost $"):
        table.add_column(col, justify="right" if col in ("turn", "prompt", "cached", "cost $")
                         else "left", no_wrap=True,
                         min_width=26 if col == "X-Orca-Session-Tier" else None)
    for r in rows:
        table.add_row(r.session, str(r.turn), _format(r), r.tier, r.model, r.channel,
                      str(r.prompt_tokens), str(r.cached_tokens), f"{r.cost_usd:.5f}")
    console.print(table)
    strong = sum(1 for r in rows if r.tier.startswith("strong"))
    crossed = sum(1 for r in rows if r.api != r.upstream_api)
    prompt = sum(r.prompt_tokens for r in rows) or 1
    cached = sum(r.cached_tokens for r in rows)
    summary = (f"{len(rows)} requests, {strong} served strong, {crossed} translated to the "
               f"channel's format, cache-hit tokens {cached / prompt:.0%}, total "
               f"${sum(r.cost_usd for r in rows):.4f}.")
    # soft_wrap: one line however long, so a URL or a command is never cut in two.
    if kept_url is None:
        console.print(summary + " Run `orca demo --keep` to leave its sidecar running and "
                      "look at it with `orca requests`, `orca explain last` and "
                      "`orca session show`.", soft_wrap=True)
    else:
        at = f" --url {kept_url}"  # whatever other sidecar this directory's config names
        console.print(summary + f" Its sidecar keeps running at {kept_url}: try "
                      f"`orca requests{at}`, `orca explain {rows[-1].request_id[4:12]}{at}`, "
                      f"`orca session show demo-failure-loop{at}` or `orca statusline "
                      f"--session demo-failure-loop{at}` in another terminal.", soft_wrap=True)
