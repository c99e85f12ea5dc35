"""`orca requests [--session S] [--router R] [--since DUR] [--limit N] [--follow] [--json]`
(SPEC §15): the recent requests from the stored traces, newest first, one line each, the same
line `orca serve` logs."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Any

import typer

from orca_cli.cli.operator import (
    SINCE_HELP,
    Operator,
    config_option,
    router_option,
    token_option,
    url_option,
)

__all__ = ["FOLLOW_LOOKBACK_S", "register"]

FOLLOW_POLL_S = 1.0
# A trace is indexed by the time its request started; a long stream that finishes after
# newer ones is still caught when it started at most this long before the newest seen.
FOLLOW_LOOKBACK_S = 300.0
FOLLOW_BATCH = 200
SEEN_MAX = 5000


def register(app: typer.Typer) -> None:
    @app.command("requests")
    def requests_cmd(
        session: str | None = typer.Option(None, "--session", "-s", help="Only this session."),
        router: str | None = router_option(),
        since: str | None = typer.Option(None, "--since", metavar="DURATION", help=SINCE_HELP),
        limit: int = typer.Option(20, "--limit", "-n", min=1, max=1000,
                                  help="At most this many (newest first)."),
        follow: bool = typer.Option(False, "--follow", "-f",
                                    help="Keep printing new requests as they finish "
                                         "(Ctrl-C stops)."),
        as_json: bool = typer.Option(False, "--json", help="One JSON document (a list, full "
                                     "ids); with --follow, one JSON object per line."),
        url: str | None = url_option(),
        token: str | None = token_option(),
        config: str | None = config_option(),
    ) -> None:
        """List recent requests, newest first.

        Each: time, request id, session, router, tier and reason, model@channel#key,
        status, latency, cached share, cost.

        The short request id works with `orca explain`; `--json` carries the full ids.

        \b
        Example:
            orca requests
            orca requests --session my-agent --since 15m
            orca requests --follow
        """
        from orca_cli.trace.log import log_fields

        op = Operator(url, config, token=token)
        # With --follow, one read holds both what is shown and what the look-back window
        # already has: a request finishing after it is new, whenever the follow starts.
        batch = op.requests(session=session, router=router, since=since,
                            limit=max(limit, FOLLOW_BATCH) if follow else limit)
        traces = batch[:limit]
        if as_json and not follow:
            from orca_cli.cli.output import print_json

            print_json([log_fields(t) for t in traces])
            return
        printer = _printer(as_json)
        if not traces and not follow:
            sys.stderr.write("orca: no request matches (traces are kept "
                             "[server].trace_ttl_s; send one through the sidecar first)\n")
        for t in reversed(traces) if follow else traces:
            printer(t)
        if follow:
            _follow(op, batch, printer, session=session, router=router)


def _printer(as_json: bool) -> Any:
    from orca_cli.trace.log import format_json, format_line, wants_colour

    colour = wants_colour(sys.stdout)

    def show(trace: Mapping[str, Any]) -> None:
        line = format_json(trace) if as_json else format_line(trace, colour=colour)
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    return show


def _follow(op: Operator, first: list[Mapping[str, Any]], show: Any, *,
            session: str | None, router: str | None) -> None:
    """Poll for what is newer than the newest seen (minus the look-back), print the unseen
    ones oldest first; Ctrl-C ends with exit 0. `first` is the first read: what it holds was
    shown, or left out by --limit, so it is not new."""
    newest = max((float(t.get("ts") or 0.0) for t in first), default=time.time())
    seen: dict[str, None] = {str(t.get("request_id")): None for t in first}
    try:
        while True:
            time.sleep(FOLLOW_POLL_S)
            fresh = op.requests(session=session, router=router,
                                after=newest - FOLLOW_LOOKBACK_S, limit=FOLLOW_BATCH)
            for t in reversed(fresh):
                rid = str(t.get("request_id"))
                if rid in seen:
                    continue
                seen[rid] = None
                newest = max(newest, float(t.get("ts") or 0.0))
                show(t)
            while len(seen) > SEEN_MAX:
                del seen[next(iter(seen))]
    except KeyboardInterrupt:
        raise typer.Exit(0) from None

