"""Translation between the three wire formats (SPEC §13.2): Chat Completions ("openai"),
Anthropic Messages ("anthropic") and the Responses API ("responses").

Design. One internal model (`model`: a `Request` of typed parts, a `Response`, stream
`Event`s) and one codec per format (`openai_chat`, `anthropic`, `responses`, each with a
`*_stream` module) that decodes into it and encodes from it: six directions from three codecs.
`policy` applies the target's rules between decoding and encoding; `api` is what the request
path calls. Pure and I/O-free: bytes and dicts in, bytes out, no clock, no randomness. A
same-format request never comes here (the raw bytes go upstream with `model` swapped), but
for `native`, which resolves orca's own reasoning tags in a body that carries one.

The fidelity rules and where each lives:
1. Deterministic, cache-stable output — every encoder builds its dict in a fixed key order
   and serialises with orjson; ids are kept; nothing reads a clock or a random source
   (`created` timestamps of answers come from the upstream or the caller).
2. Cache markers — `policy._place_cache` (towards Anthropic: end of tools+system, last block
   of the last message and of the previous user message, ≤ 4, ttl "1h" on request); the
   Chat Completions and Responses encoders never write markers.
3. Tools — ids kept; `common.safe_id` rewrites (reversibly, `restore_id` on the way back) an
   id that does not fit Anthropic's pattern; arguments are JSON text inside (Anthropic's
   objects are serialised / parsed at its codec); parallel calls are ordered parts; tool
   choice maps auto/none/required(any)/named; custom (freeform) tools become function tools
   with one string parameter `input` and their calls come back as custom calls; a Responses
   namespace's members go as function tools named `<namespace>__<member>` and their calls
   come back as namespaced `function_call`s; hosted tools are dropped and reported
   (`responses_tools`, `ResponseTranslator(tools=Translated.tools)`).
4. Reasoning provenance — `policy.keep_reasoning`: same family and model only; foreign
   reasoning dropped or turned into `<thinking>` text (`foreign_reasoning`), counted. In the
   answer direction a reasoning part crossing formats carries an `orca1.` provenance tag in
   the field the client echoes (`signature` / `encrypted_content`), so it is recognised when
   it comes back (`common.tag_reasoning` / `untag`); a signature is never sent to a model
   that did not make it — nor is a tag, on the same-format path either (`native`: a wrapped
   block in a body that goes upstream untranslated is restored or dropped there).
5. Content — images (base64, URL) and documents (PDF base64, text; URL where the target has
   it) map; what cannot (built-in/server tools, audio, file ids, `previous_response_id`,
   `n > 1`, Chat's `logprobs`, a document URL towards Chat Completions, `json_object` towards Anthropic) lands
   in `report["untranslatable"]` for the caller to exclude the candidate.
6. Usage, stop reasons, ids — `Usage` counts every prompt token (cached reads and cache
   writes included) and maps per codec; stop reasons share one vocabulary (`model`); answer
   ids are re-prefixed to the inbound shape (`common.response_id`).
7. Streams — decoders turn SSE bytes (any chunking) into events, encoders write each event at
   once; an upstream that breaks off becomes the inbound format's error event.
8. Errors — `translate_error` keeps status and message, maps the type and the codes agents
   act on (context overflow, rate limits); the caller copies `retry-after` and rate-limit
   headers.
9. The report (`Translated.report`) is the trace's `translation` block.

Developer and system messages: Codex sends `developer` messages. Towards Anthropic, system
and developer messages before the first user/assistant turn join the top-level `system`
blocks (after `instructions`); one later in the conversation becomes a user text block at its
place (moving it into `system` would change every later turn's cached prefix). Towards Chat
Completions each becomes a `system` message at its place (other providers reject the
`developer` role; OpenAI treats them alike). Towards Responses they keep their role.
"""

from __future__ import annotations

from orca_cli.translate.api import (
    ResponseTranslator,
    Translated,
    TranslationError,
    TranslationOptions,
    decode_request,
    encode_error,
    encode_request,
    translate_error,
    translate_request,
)

__all__ = [
    "ResponseTranslator",
    "Translated",
    "TranslationError",
    "TranslationOptions",
    "decode_request",
    "encode_error",
    "encode_request",
    "translate_error",
    "translate_request",
]
