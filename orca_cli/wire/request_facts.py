"""What a request body says about its own answer, per wire format (SPEC §1.2, §6.3, §13.1).

`request_facts(body, api)`:

* `stream`: `"stream": true` exactly (any other value, `"true"` included, is not a stream), in
  every format.
* `max_tokens`: the answer's token limit, used by the truncation strike (§6.3): Chat
  Completions `max_tokens`, else `max_completion_tokens`; Messages `max_tokens`; Responses
  `max_output_tokens`. None when absent or not an integer.
* `add_include_usage`: Chat Completions streams only report usage when asked, so orca asks
  (`stream_options.include_usage`) when the client did not (§1.2). Messages and Responses
  streams always carry usage.

The `model` swap in a raw body is format-agnostic (only the top-level `"model"` value is
replaced) and needs nothing from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orca_cli.immutable import immutable
from orca_cli.types import Api

__all__ = ["RequestFacts", "request_facts"]


@immutable
class RequestFacts:
    stream: bool
    max_tokens: int | None
    add_include_usage: bool


def request_facts(body: Mapping[str, Any], api: Api) -> RequestFacts:
    stream = body.get("stream") is True
    if api == "responses":
        limit = body.get("max_output_tokens")
    else:
        limit = body.get("max_tokens", body.get("max_completion_tokens"))
    add_usage = False
    if api == "openai" and stream:
        opts = body.get("stream_options")
        add_usage = not (isinstance(opts, Mapping) and opts.get("include_usage") is True)
    max_tokens = limit if isinstance(limit, int) and not isinstance(limit, bool) else None
    return RequestFacts(stream, max_tokens, add_usage)
