"""Types shared across the package: the ASGI callables, the wire formats, tiers, headers.

One spelling each, imported everywhere (the proxy, the admin API, the codecs, the tests).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any, Final, Literal

__all__ = ["APIS", "CLIENT_EXTENSION", "MAPPING", "Api", "ClientLink", "Headers", "Message",
           "RawHeaders", "Receive", "Scope", "Send", "Tier"]

# The three inbound/upstream wire formats: OpenAI Chat Completions, Anthropic Messages and
# the OpenAI Responses API (SPEC §13).
Api = Literal["openai", "anthropic", "responses"]
APIS: tuple[Api, ...] = ("openai", "anthropic", "responses")

Tier = Literal["base", "strong"]

# `isinstance(x, MAPPING)` answers what `isinstance(x, Mapping)` does, but a dict (every
# parsed body and message) is recognised by the type check alone: `Mapping` alone runs the
# ABC's Python-level `__instancecheck__` on every call (about 1,900 instructions on CPython
# 3.11, against about 250), and the body readers make such checks per message.
MAPPING: Final = (dict, Mapping)

# Request headers as ASGI hands them over (lower-case names, latin-1 bytes) and as str pairs.
RawHeaders = list[tuple[bytes, bytes]]
Headers = list[tuple[str, str]]

# ASGI: https://asgi.readthedocs.io/ — scope and messages are plain mutable dicts.
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


# `scope["extensions"][CLIENT_EXTENSION]["link"]`: a `ClientLink`, set by orca's own server
# (`proxy.server`).
CLIENT_EXTENSION = "orca.client"


class ClientLink:
    """What orca's server tells the app about a client's connection, without a task waiting
    on `receive` and without a timer per body read.

    `body_complete`: the request being read arrived whole (headers and body), so reading its
    body cannot wait on the client. `call`, set by the request whose answer is in flight,
    runs once when the connection is lost before that answer completed; `lost` stays set for
    a request that looks later. Under another ASGI server the app feeds a link from a task
    that waits for `http.disconnect` (`proxy.handler`)."""

    __slots__ = ("body_complete", "call", "lost")

    def __init__(self, *, body_complete: bool = False) -> None:
        self.call: Callable[[], None] | None = None
        self.lost = False
        self.body_complete = body_complete

    def fire(self) -> None:
        self.lost = True
        call, self.call = self.call, None
        if call is not None:
            call()
