"""Child requests orca makes through itself (SPEC §16): the auto router's model classifier.

A child request is a request like any other — its own request id, the same routing, forwarding,
billing, counters and trace — made from inside the sidecar instead of by a client: the trace
carries its `purpose` and the parent's request id. The answer is captured instead of sent.

It counts in its parent's budgets (SPEC §17): the parent's route step, when it has one
(`parent_routed`, the parent turn's `routed`), is handed on as the child's (`Routed.for_child`), so
the child's billed cost goes into the same inbound key's, session's and route's counters, in
the child's own commit, once.

The child runs in a task of its own, and the caller's timeout (`classifier_timeout_ms`)
only stops waiting for it: the child is then told its client left, as a disconnecting
client is (its upstream call is cancelled), its trace records the timeout as its error, and
its commit is awaited before the timeout reaches the caller — a child sent upstream always
leaves its trace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import orjson

from orca_cli.errors import OrcaError, Refusal
from orca_cli.proxy.runtime import Runtime, new_request_id
from orca_cli.turn import Arrival, RequestHead, Turn, prepare
from orca_cli.turn.routes import Routed
from orca_cli.types import ClientLink, Message

__all__ = ["ChildClassifier", "ChildFailed"]

_HEAD = RequestHead(method="POST", path="/v1/chat/completions", api="openai",
                    headers=[("content-type", "application/json")], refusal=None)


class ChildFailed(OrcaError):
    """A child request that did not answer 200 (the caller falls back)."""


class _Capture:
    """An ASGI `send` that keeps the answer."""

    def __init__(self) -> None:
        self.status = 0
        self.body = bytearray()

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
        elif message["type"] == "http.response.body":
            self.body += message.get("body", b"")


class ChildClassifier:
    """`routing.auto.model_classifier.ModelClassifier` over the sidecar's own request path.
    `request_id`: the child request's id once one was made (the parent's trace names it)."""

    def __init__(self, rt: Runtime, parent_routed: Routed | None = None) -> None:
        self.rt = rt
        self.parent_routed = parent_routed
        self.request_id: str | None = None

    async def complete(self, request: Mapping[str, Any], *, parent_request_id: str,
                       purpose: str) -> str:
        from orca_cli.proxy.handler import serve_turn

        rt = self.rt
        body = dict(request)
        arrival = Arrival(new_request_id(), orjson.dumps(body), body, rt.clock.now(),
                          rt.clock.monotonic())
        parent = self.parent_routed
        routed = parent.for_child(arrival.request_id) if parent is not None else None
        prepared = prepare(rt.cfg, rt.scorer, _HEAD, arrival, routed=routed)
        if isinstance(prepared, Refusal):
            raise ChildFailed(f"the classifier request was refused: {prepared.message}")
        prepared.purpose, prepared.parent_request_id = purpose, parent_request_id
        self.request_id = arrival.request_id
        capture, link = _Capture(), ClientLink()
        child = asyncio.ensure_future(serve_turn(rt, prepared, link, capture.send))
        try:
            await asyncio.shield(child)
        except asyncio.CancelledError:
            _stop_waiting(prepared, link, rt.clock.monotonic(),
                          rt.cfg.auto.classifier_timeout_ms)
            await asyncio.wait({child})  # its trace and commit, before the caller goes on
            raise
        if capture.status != 200:
            raise ChildFailed(f"the classifier model answered {capture.status}")
        doc = orjson.loads(bytes(capture.body))
        content = doc["choices"][0]["message"]["content"]
        return str(content) if content else ""


def _stop_waiting(turn: Turn, link: ClientLink, now: float, timeout_ms: int) -> None:
    """The caller stopped waiting (its timeout, or the parent request itself ended): a child
    that has no answer yet records why as its error (and a 504 for the timeout, on the
    attempt in flight too), then its client leaves, which cancels the upstream call."""
    out = turn.outcome
    if out.status == 0 and not out.cancelled:
        waited_ms = (now - turn.started) * 1000
        if waited_ms >= timeout_ms:
            out.status = 504
            out.own_error = (f"classifier_timeout: no answer within classifier_timeout_ms "
                             f"({timeout_ms} ms); the parent request routed without it")
        else:
            out.own_error = "cancelled: the parent request ended before the classifier answered"
        for att in out.attempts:
            if att.status is None and att.error is None:
                att.error = "classifier_timeout" if out.status == 504 else "cancelled"
    link.fire()
