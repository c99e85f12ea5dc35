"""The replay's built-in reference config (SPEC §10): a cheap pair and a frontier pair, one of
each per wire format, 3 keys per channel, list prices as published in 2026-08 ($ per 1M
tokens; cache read 0.1 × input for both providers here, cache write 1.25 × for Anthropic's
5-minute cache and 1.0 × for OpenAI). `--config` replaces it.

Like `orca.toml.example`, it has a sessionless `background` router and the example's
`[aliases]`: agents' small-model requests (Claude Code's `claude-haiku-*` calls) are
served there, and side requests (`[[housekeeping]]`, e.g. title
requests) go to it as the `[routing] side_router` default. The session router `coding` is
the first session-aware router, the one the report describes.

Each sim channel lists every format, its own first: the replay's sessions of either format are
served by the cheapest model of the tier, natively, so the published figures price routing,
not translation (a sim channel speaks exactly its `api`, SPEC §13.2)."""

from __future__ import annotations

REFERENCE_TOML = """
[state]
backend = "memory"

[[channels]]
name = "cheap-openai"
type = "sim"
api = ["openai", "anthropic", "responses"]
keys = ["ref-co-1", "ref-co-2", "ref-co-3"]
models = ["gpt-4.1-mini"]
cache_ttl_s = 300

[[channels]]
name = "cheap-anthropic"
type = "sim"
api = ["anthropic", "openai", "responses"]
keys = ["ref-ca-1", "ref-ca-2", "ref-ca-3"]
models = ["claude-haiku-4-5"]
cache_ttl_s = 300

[[channels]]
name = "frontier-openai"
type = "sim"
api = ["openai", "anthropic", "responses"]
keys = ["ref-fo-1", "ref-fo-2", "ref-fo-3"]
models = ["gpt-4.1"]
cache_ttl_s = 300

[[channels]]
name = "frontier-anthropic"
type = "sim"
api = ["anthropic", "openai", "responses"]
keys = ["ref-fa-1", "ref-fa-2", "ref-fa-3"]
models = ["claude-opus-4-1"]
cache_ttl_s = 300

[models."gpt-4.1-mini"]
input = 0.40
output = 1.60
cache_read = 0.10
cache_write = 1.0

[models."claude-haiku-4-5"]
input = 1.00
output = 5.00
cache_read = 0.10
cache_write = 1.25

[models."gpt-4.1"]
input = 2.00
output = 8.00
cache_read = 0.10
cache_write = 1.0

[models."claude-opus-4-1"]
input = 15.00
output = 75.00
cache_read = 0.10
cache_write = 1.25

[routers.coding]
strategy = "cheapest"
allowed_models = ["gpt-4.1-mini", "claude-haiku-4-5", "gpt-4.1", "claude-opus-4-1"]
strong_pool = ["gpt-4.1", "claude-opus-4-1"]

[routers.coding.escalation]
mode = "auto"
t2 = 0.55
t1 = 0.35
streak = 2
strikes = 2
max_per_session = 1
share_cap = 0.20

[routers.background]
strategy = "cheapest"
mode = "price"
session_aware = false
allowed_models = ["gpt-4.1-mini", "claude-haiku-4-5"]

[routers.background.escalation]
mode = "off"

[aliases]
"claude-sonnet-*" = "orca/coding"
"claude-opus-*" = "orca/coding"
"claude-haiku-*" = "orca/background"
"claude-3-5-haiku-*" = "orca/background"
"claude-3-5-sonnet-*" = "orca/coding"
"claude-3-7-sonnet-*" = "orca/coding"
"gpt-5*" = "orca/coding"
"gpt-4.1-20*" = "gpt-4.1"
"gpt-4.1-mini-20*" = "gpt-4.1-mini"
"o[0-9]*" = "orca/coding"
"gemini-*" = "orca/coding"
"""
