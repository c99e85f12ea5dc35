"""Child requests orca makes through itself (SPEC §16): the auto router's model classifier.

A child request is a request like any other — its own request id, the same routing, forwarding,
billing, counters and trace — made from inside the sidecar instead of by a client: the trace
carries its `purpose` and the parent's request id. The answer is captured instead of sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from orca_cli.errors import OrcaError, Refusal
from orca_cli.proxy.runtime import Runtime, new_request_id
from orca_cli.turn import Arrival, RequestHead, prepare
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
    """`routing.auto.model_classifier.ModelClassifier` over the sidecar's own request path."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    async def complete(self, request: Mapping[str, Any], *, parent_request_id: str,
                       purpose: str) -> str:
        from orca_cli.proxy.handler import serve_turn

        rt = self.rt
        body = dict(request)
        arrival = Arrival(new_request_id(), orjson.dumps(body), body, rt.clock.now(),
                          rt.clock.monotonic())
        prepared = prepare(rt.cfg, rt.scorer, _HEAD, arrival)
        if isinstance(prepared, Refusal):
            raise ChildFailed(f"the classifier request was refused: {prepared.message}")
        prepared.purpose, prepared.parent_request_id = purpose, parent_request_id
        capture = _Capture()
        await serve_turn(rt, prepared, ClientLink(), capture.send)  # never leaves
        if capture.status != 200:
            raise ChildFailed(f"the classifier model answered {capture.status}")
        doc = orjson.loads(bytes(capture.body))
        content = doc["choices"][0]["message"]["content"]
        return str(content) if content else ""
