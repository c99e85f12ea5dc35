"""A scripted upstream `Transport` for end-to-end stories.

It stands where a provider would (the upstream edge): it answers from a script, one reply per
attempt, and records every `UpstreamRequest` so a test can see which channel and key each
attempt used. Everything between the client and that edge — uvicorn, the guard, the handler,
routing, fallbacks, the relay, the store — is the real code (`orca_cli.testing.sidecar`).
A test that needs the bytes on a real socket uses `orca_cli.testing.fake_upstream` instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import orjson

from orca_cli.errors import UpstreamError
from orca_cli.proxy.transport import (
    Headers,
    Timeouts,
    UpstreamRequest,
    UpstreamStreamError,
    header_value,
)
from orca_cli.testing import anthropic_json, anthropic_sse, openai_json, openai_sse

__all__ = ["Reply", "ScriptedResponse", "ScriptedTransport", "Step", "ok_reply"]




@dataclass(frozen=True)
class Reply:
    """One scripted upstream answer. `chunks` is the streamed body (else `body`, whole);
    `break_after` raises a mid-body `UpstreamStreamError` after that many chunks;
    `error` is raised by `send` itself (a connect failure, a first-byte timeout)."""

    status: int = 200
    body: bytes = b""
    chunks: tuple[bytes, ...] = ()
    headers: Headers = (("content-type", "application/json"),)
    break_after: int | None = None
    error: UpstreamError | None = None


def _api_of(req: UpstreamRequest) -> str:
    return "anthropic" if req.url.endswith("/messages") else "openai"


def ok_reply(req: UpstreamRequest, text: str = "done") -> Reply:
    """A clean 2xx in the request's own wire format, streamed when it asked to stream."""
    model = str(orjson.loads(req.body).get("model", "m"))
    if _api_of(req) == "anthropic":
        if req.stream:
            return Reply(chunks=tuple(anthropic_sse((text,), model)),
                         headers=(("content-type", "text/event-stream"),))
        return Reply(body=anthropic_json(text, model))
    if req.stream:
        return Reply(chunks=tuple(openai_sse((text,), model)),
                     headers=(("content-type", "text/event-stream"),))
    return Reply(body=openai_json(text, model))


Step = Reply | Callable[[UpstreamRequest], Reply]


class ScriptedResponse:
    def __init__(self, reply: Reply) -> None:
        self.status = reply.status
        self.headers: Headers = tuple((k.lower(), v) for k, v in reply.headers)
        self._reply = reply
        self.closed = False

    async def chunks(self) -> AsyncIterator[bytes]:
        parts = self._reply.chunks or ((self._reply.body,) if self._reply.body else ())
        for i, part in enumerate(parts):
            if self._reply.break_after is not None and i >= self._reply.break_after:
                raise UpstreamStreamError("upstream connection broke mid-body: reset",
                                          retryable=i == 0)
            yield part
        if self._reply.break_after is not None:
            raise UpstreamStreamError("upstream connection broke mid-body: reset")

    async def read(self) -> bytes:
        return self._reply.body or b"".join(self._reply.chunks)

    async def aclose(self) -> None:
        self.closed = True


@dataclass
class ScriptedTransport:
    """Answers attempt N with `script[N]` (a Reply or a function of the request); after
    the script runs out, `then` (default: a clean answer in the request's format)."""

    script: list[Step] = field(default_factory=list)
    then: Step | None = None
    requests: list[UpstreamRequest] = field(default_factory=list)
    responses: list[ScriptedResponse] = field(default_factory=list)

    async def send(self, req: UpstreamRequest, timeouts: Timeouts) -> ScriptedResponse:
        self.requests.append(req)
        step = self.script.pop(0) if self.script else (self.then or ok_reply)
        reply = step(req) if callable(step) else step
        if reply.error is not None:
            raise reply.error
        resp = ScriptedResponse(reply)
        self.responses.append(resp)
        return resp

    async def aclose(self) -> None:
        return None

    def credentials(self) -> list[str]:
        """The upstream credential each attempt carried, in order."""
        return [header_value(r.headers, "authorization") or header_value(r.headers, "x-api-key")
                or "" for r in self.requests]
