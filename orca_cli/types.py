"""Types shared across the package: the ASGI callables, the wire formats, tiers, headers.

One spelling each, imported everywhere (the proxy, the admin API, the codecs, the tests).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Literal

__all__ = ["APIS", "DISCONNECT_EXTENSION", "Api", "DisconnectHook", "Headers", "Message", "RawHeaders",
           "Receive", "Scope", "Send", "Tier"]

# The three inbound/upstream wire formats: OpenAI Chat Completions, Anthropic Messages and
# the OpenAI Responses API (SPEC §13).
Api = Literal["openai", "anthropic", "responses"]
APIS: tuple[Api, ...] = ("openai", "anthropic", "responses")

Tier = Literal["base", "strong"]

# Request headers as ASGI hands them over (lower-case names, latin-1 bytes) and as str pairs.
RawHeaders = list[tuple[bytes, bytes]]
Headers = list[tuple[str, str]]

# ASGI: https://asgi.readthedocs.io/ — scope and messages are plain mutable dicts.
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


# `scope["extensions"][DISCONNECT_EXTENSION]["hook"]`: a `DisconnectHook`, set by orca's own
# server (`proxy.server`).
DISCONNECT_EXTENSION = "orca.disconnect"


class DisconnectHook:
    """A connection's word that its client left, without a task waiting on `receive`.

    The request whose answer is in flight sets `call`; the server fires the hook once when
    the connection is lost before that answer completed, and `lost` stays set for a request
    that arms the hook later. Under another ASGI server the app feeds one from a task
    that waits for `http.disconnect` (`proxy.handler`)."""

    __slots__ = ("call", "lost")

    def __init__(self) -> None:
        self.call: Callable[[], None] | None = None
        self.lost = False

    def fire(self) -> None:
        self.lost = True
        call, self.call = self.call, None
        if call is not None:
            call()
