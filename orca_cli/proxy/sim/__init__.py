"""The `sim` channel: a simulated provider behind the Transport protocol (SPEC §2).

In-process, no sockets. It speaks the formats in the channel's `api` (default `"openai"`),
like a real provider, chosen by the URL path (`/v1/chat/completions`, `/v1/messages`,
`/v1/messages/count_tokens`, `/v1/responses`), streaming and not, with SSE bytes shaped like
the real APIs'. A request in a format the channel does not list raises `SimFormatError`:
orca should have translated it, so that is a bug to surface, not an answer to simulate.
Everything it says is labelled simulated: the `x-orca-sim: 1` header, ids with `sim`, and
answer text starting with `[sim]`.

Rules (documented here because `orca demo`, replay and tests build on them):
- Answers are deterministic: derived from a hash of the request body.
- Prompt cache per (key fingerprint, model, exact prefix), with the channel's `cache_ttl_s`
  (default 300 s) measured on the given clock. A prefix is system + tools + messages[0..k]
  (for the Responses API: `instructions` + tools + `input` items[0..k]), its Anthropic
  `cache_control` markers left out (moving the marker forward still reads the prefix);
  cached tokens are the estimated tokens (bytes/4 of each part's JSON) of the longest prefix
  seen before and still live. Every prefix of a request is then recorded. Reads work for both
  formats; Anthropic `cache_creation_input_tokens` reports the uncached rest only when the body
  carries a `cache_control` marker (else 0). The map is bounded (LRU, `_CACHE_MAX` entries).
- Tool calls: when the request defines tools and its last message is a user text message
  containing `[tool]`, the answer is a call of the first tool (OpenAI `tool_calls`, Anthropic
  `tool_use` with `input_json_delta` deltas, Responses `function_call` with
  `response.function_call_arguments.delta` events), its required arguments filled by JSON
  type. A Responses request calls its first function or custom tool (built-ins such as
  `web_search` are skipped); a custom tool gets a `custom_tool_call` with an empty patch.
- Limits: `max_tokens` / `max_completion_tokens` (Responses: `max_output_tokens`) below the
  answer's length cut it, finishing with `length` (Anthropic `max_tokens`, Responses
  `status: "incomplete"` with `incomplete_details.reason: "max_output_tokens"`).
- `latency_ms` and `faults.stall_s` sleep before the first byte, bounded by the first-byte
  timeout and the deadline (then `UpstreamTimeout`). `faults.status` answers that status on a
  `faults.rate` fraction of attempts: the draw hashes the body with the number of times this
  instance saw that body, so retries of one body draw afresh yet the sequence is reproducible.
  `faults.after_bytes` breaks a stream after that many bytes (`UpstreamStreamError`);
  `faults.finish_reason` ends a 200 answer with that reason (Anthropic maps `length` to
  `max_tokens`; an Anthropic stream with `error` ends with an `event: error` instead, a
  Responses answer with `error` is `status: "failed"` / a `response.failed` event).
- Observations for tests: `calls` (every attempt) and `cancelled` (streams closed before end).

Modules: `transport` (the Transport, cache, faults), `request` (what is read from a request),
`answer` / `render` / `responses` (the answer and its rendering per format).
"""

from __future__ import annotations

from orca_cli.proxy.sim.answer import Answer
from orca_cli.proxy.sim.render import render_body, render_stream
from orca_cli.proxy.sim.request import TOOL_MARKER
from orca_cli.proxy.sim.transport import SimCall, SimFormatError, SimResponse, SimTransport

__all__ = [
    "TOOL_MARKER",
    "Answer",
    "SimCall",
    "SimFormatError",
    "SimResponse",
    "SimTransport",
    "render_body",
    "render_stream",
]
