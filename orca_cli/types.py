"""Types shared across the package: the ASGI callables, the wire formats, tiers, headers.

One spelling each, imported everywhere (the proxy, the admin API, the codecs, the tests).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Literal

__all__ = ["APIS", "Api", "Headers", "Message", "RawHeaders", "Receive", "Scope", "Send", "Tier"]

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
