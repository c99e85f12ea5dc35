"""The request log (SPEC §15): one content-free line per finished request, from its trace.

`format_line(trace)` and `format_json(trace)` are pure functions of the trace document `orca
serve` commits (and `orca requests` prints), so the live log and the listing read the same:

    12:15:03 3f2a9c0e agent-1      coding base:default      haiku@anthropic#0  200   812ms  cached 87%  $0.001234

Fields, in order: local time, the request id's first 8 hex digits (`orca explain` accepts the
full id from `orca requests --json`), the session (12 characters; `-` when sessionless), the
router (or the model asked for when no router), the tier and its reason, model@channel#key
that served, the status, the wall time, the share of prompt tokens read from cache, the cost.
A refused or failed request shows orca's own error message instead of the cache and cost.
A child request orca made itself (the auto router's model classifier, SPEC §16) ends with a
`classifier` note (JSON: `purpose`, null for a client's request).
Nothing from the prompt or the response ever appears, nor a key value.

`RequestLog` is the sink: `emit(trace)` formats the line and queues it; the lines queued
within `FLUSH_AFTER_S` are written together, in one write, by a timer on the event loop, so
the handler that finished the response never waits on the terminal and a busy sidecar makes
one write for many requests. `flush()` writes what is queued at once (`orca serve` calls it
when it stops); a process killed outright loses at most the last `FLUSH_AFTER_S` of lines,
which its traces still hold.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol, TextIO

import orjson

from orca_cli.trace.build import Trace

__all__ = ["LogFormat", "RequestLog", "Tee", "TraceSink", "format_json", "format_line",
           "log_fields", "short_id"]

LogFormat = Literal["text", "json"]

FLUSH_AFTER_S = 0.05  # the most a line waits for the write that carries it
FLUSH_LINES = 512  # a queue this long is written at once: memory stays bounded

SESSION_WIDTH = 12
_RESET = "\x1b[0m"
_DIM = "\x1b[2m"
_BOLD_MAGENTA = "\x1b[1;35m"
_GREEN = "\x1b[32m"
_YELLOW = "\x1b[33m"
_RED = "\x1b[31m"
_CYAN = "\x1b[36m"


class TraceSink(Protocol):
    """Where a finished request's trace goes besides the store: the request log, OpenTelemetry.
    `emit` runs on the event loop after the response and must neither block nor raise."""

    def emit(self, trace: Mapping[str, Any]) -> None: ...

    def close(self) -> None:
        """Write or export what is still queued (the sidecar is stopping)."""


class Tee:
    """Several sinks behind one `emit` (the request log and OpenTelemetry together)."""

    def __init__(self, *sinks: TraceSink) -> None:
        self.sinks = sinks

    def emit(self, trace: Mapping[str, Any]) -> None:
        for sink in self.sinks:
            sink.emit(trace)

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()


def short_id(request_id: Any) -> str:
    """`req_3f2a9c0e1b7d…` -> `3f2a9c0e`; another id (a client's) keeps its first 8 chars."""
    text = str(request_id or "-")
    return text[4:12] if text.startswith("req_") else text[:8]


def _clip(value: Any, width: int) -> str:
    text = "-" if value is None or value == "" else str(value)
    if not text.isprintable():  # a control character would rewrite the operator's terminal
        text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= width else text[: width - 1] + "…"


def _num(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def log_fields(trace: Mapping[str, Any]) -> dict[str, Any]:
    """The flat, content-free record both formats print (also `orca requests --json`)."""
    if type(trace) is Trace:  # a trace not built yet: its top-level fields and attempt count
        attempts = trace.attempt_count
        trace = trace.fields
    else:
        attempts = len(trace.get("attempts") or ())
    tier = trace.get("tier") or {}
    sel = trace.get("selected") or {}
    usage = trace.get("usage") or {}
    prompt = _num(usage.get("prompt_tokens")) or 0.0
    cached = _num(usage.get("cached_tokens")) or 0.0
    return {
        "ts": trace.get("ts"),
        "request_id": trace.get("request_id"),
        "client_request_id": trace.get("client_request_id"),
        "session_id": trace.get("session_id"),
        "router": trace.get("router"),
        "requested_model": trace.get("requested_model") or None,
        "inbound_api": trace.get("inbound_api"),
        "tier": tier.get("decision"),
        "reason": tier.get("reason"),
        "model": sel.get("model"),
        "channel": sel.get("channel"),
        "key_index": sel.get("key_index"),
        "status": trace.get("status"),
        "latency_ms": trace.get("latency_ms"),
        "prompt_tokens": int(prompt) if usage else None,
        "cached_tokens": int(cached) if usage else None,
        "output_tokens": usage.get("output_tokens") if usage else None,
        "cached_share": round(cached / prompt, 4) if prompt > 0 else None,
        "cost_usd": trace.get("cost_usd"),
        "attempts": attempts,
        "error": trace.get("error"),
        "purpose": trace.get("purpose"),
    }


def format_json(trace: Mapping[str, Any]) -> str:
    """One JSON object on one line (no trailing newline)."""
    return orjson.dumps(log_fields(trace), default=str).decode()


def _status_colour(status: int) -> str:
    if status < 300:
        return _GREEN
    return _YELLOW if status < 500 else _RED


def format_line(trace: Mapping[str, Any], *, colour: bool = False) -> str:
    """One aligned line (no trailing newline); ANSI colours when `colour`. Written once per
    request on the serving loop, so it reads each field once and formats in one f-string."""
    if type(trace) is Trace:  # every field the line shows is a top-level one, in a plain dict
        trace = trace.fields
    get = trace.get
    tier = get("tier") or _EMPTY
    sel = get("selected") or _EMPTY
    ts = get("ts")
    when = _clock_text(int(ts)) if isinstance(ts, (int, float)) else "--:--:--"
    decision = tier.get("decision")
    tier_text = f"{decision}:{tier.get('reason')}" if decision else "-"
    served = (f"{sel.get('model')}@{sel.get('channel')}#{sel.get('key_index')}"
              if sel else "-")
    status = get("status")
    latency = get("latency_ms")
    latency_text = f"{latency:.0f}ms" if type(latency) in (int, float) else "-"
    rid = short_id(get("request_id"))
    session = _clip(get("session_id"), SESSION_WIDTH)
    router = _clip(get("router") or get("requested_model"), 12)
    tier_cell = _clip(tier_text, 24)
    status_text = "-" if status is None else status
    if not colour:  # `ljust` where a field is text: a format spec is parsed on every call
        return (f"{when} {rid} {session.ljust(SESSION_WIDTH)} {router.ljust(12)} "
                f"{tier_cell.ljust(24)} {_clip(served, 40).ljust(28)} {status_text:>3} "
                f"{latency_text.rjust(7)} {_tail(trace)}")
    tail = _tail(trace)
    if decision == "strong":
        tier_cell = f"{_BOLD_MAGENTA}{tier_cell:<24}{_RESET}"
    status_colour = _status_colour(status if isinstance(status, int) else 0)
    if get("error"):
        tail = _RED + tail + _RESET
    return (f"{_DIM}{when}{_RESET} {_CYAN}{rid}{_RESET} {session:<{SESSION_WIDTH}} "
            f"{router:<12} {tier_cell:<24} {_clip(served, 40):<28} "
            f"{status_colour}{status_text:>3}{_RESET} {latency_text:>7} {tail}")


_EMPTY: Mapping[str, Any] = {}


_last_second: list[Any] = [None, ""]  # one-entry memo: a burst of lines shares its second


def _clock_text(second: int) -> str:
    if _last_second[0] != second:
        _last_second[:] = [second, time.strftime("%H:%M:%S", time.localtime(second))]
    return str(_last_second[1])


# A child request's `purpose` as its line's note (SPEC §16: the auto router's classifier).
_CHILD_NOTES = {"auto_routing_classifier": "classifier"}


def _tail(trace: Mapping[str, Any]) -> str:
    purpose = trace.get("purpose")
    if purpose:
        note = _CHILD_NOTES.get(str(purpose)) or _clip(purpose, 24)
        return f"{_bare_tail(trace)}  ({note} for {short_id(trace.get('parent_request_id'))})"
    return _bare_tail(trace)


def _bare_tail(trace: Mapping[str, Any]) -> str:
    error = trace.get("error")
    if error:
        return _clip(error, 100)
    usage = trace.get("usage")
    cost = trace.get("cost_usd")
    if type(cost) is not float or not cost:  # a non-zero float (as traces hold it) as it is
        cost = _num(cost) or 0.0
    if not usage:
        return f"{'no usage':<10}  ${cost:.6f}"
    prompt = _num(usage.get("prompt_tokens")) or 0.0
    if prompt > 0:
        cached = _num(usage.get("cached_tokens")) or 0.0
        return f"cached {100 * cached / prompt:>3.0f}%  ${cost:.6f}"
    return f"cached   -  ${cost:.6f}"


def wants_colour(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """A terminal, and neither NO_COLOR nor TERM=dumb."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no such method, or a closed stream
        return False


class RequestLog:
    """Writes one line per trace to `stream` (stdout by default), text or JSON lines.

    `emit` formats at once (a few microseconds; the trace is not kept) and queues the line;
    the queue is written `FLUSH_AFTER_S` after its first line, or at once when it reaches
    `FLUSH_LINES`. With no running loop (a test, a script) the line is written at once.
    """

    def __init__(self, stream: TextIO | None = None, *, fmt: LogFormat = "text",
                 colour: bool | None = None) -> None:
        self._stream = stream if stream is not None else sys.stdout
        use_colour = wants_colour(self._stream) if colour is None else colour
        self._format: Callable[[Mapping[str, Any]], str]
        if fmt == "json":
            self._format = format_json
        elif use_colour:
            self._format = _colour_line
        else:
            self._format = format_line
        self._pending: list[str] = []
        self._timer: asyncio.TimerHandle | None = None
        self.written = 0

    def emit(self, trace: Mapping[str, Any]) -> None:
        """Queue the trace's line; never raises into the request path."""
        try:
            line = self._format(trace)
        except Exception:  # noqa: BLE001 - a malformed trace costs its line, never the request
            return
        pending = self._pending
        pending.append(line)
        if self._timer is not None:
            if len(pending) >= FLUSH_LINES:
                self.flush()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        self._timer = loop.call_later(FLUSH_AFTER_S, self.flush)

    def flush(self) -> None:
        """Write the queued lines now, in one write."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        lines, self._pending = self._pending, []
        try:
            self._stream.write("\n".join(lines) + "\n")
            self._stream.flush()
        except (OSError, ValueError):  # a closed or broken pipe: the log goes quiet
            return
        self.written += len(lines)

    def close(self) -> None:
        self.flush()


def _colour_line(trace: Mapping[str, Any]) -> str:
    return format_line(trace, colour=True)
