"""The effective config as JSON-able data with no secret in it (SPEC §11)."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from orca_cli.config.routes import InboundKey
from orca_cli.config.schema import ChannelConfig, Config, Secret

__all__ = ["redact_url", "redacted", "scrub_secrets"]


def redacted(cfg: Config) -> dict[str, Any]:
    """The whole effective config as plain JSON-able data with every secret replaced by its
    fingerprint (SPEC §11): channel keys, `server.inbound_token`, `[[inbound_keys]]` tokens
    (emptied at load, so theirs comes from the kept hash), URL passwords. It reads as
    the TOML that would give it: a channel's `api` is its list of formats when it has several,
    and the effective `[[housekeeping]]` rules (the shipped defaults when none is written)
    are listed."""
    out = _plain(cfg, "")
    assert isinstance(out, dict)
    return out


def _fingerprint(value: str) -> dict[str, Any]:
    return {"fp": hashlib.sha256(value.encode()).hexdigest()[:8], "redacted": True}


def _plain(value: Any, name: str) -> Any:
    if isinstance(value, Secret):
        return {"fp": value.fp, "redacted": True}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: _plain(getattr(value, f.name), f.name) for f in dataclasses.fields(value)
               if f.metadata.get("shown", True)}
        if isinstance(value, ChannelConfig) and len(value.apis) > 1:
            out["api"] = list(value.apis)  # as written: every format, the target first
        if isinstance(value, InboundKey) and value.token_sha256:
            # the same fingerprint as `_fingerprint(token)`: sha256 hex, first 8
            out["token"] = {"fp": value.token_sha256[:8], "redacted": True}
        return out
    if isinstance(value, tuple | list):
        return [_plain(v, name) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v, name) for k, v in value.items()}
    if name == "inbound_token" and value:
        return _fingerprint(str(value))
    if name in ("redis_url", "base_url", "otlp_endpoint") and isinstance(value, str):
        return redact_url(value)
    return value


def redact_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def scrub_secrets(data: bytes, secrets: tuple[Secret, ...]) -> bytes:
    """`data` with each secret's value replaced by its fingerprint: an upstream's error body
    that echoes the key it was sent (`Incorrect API key provided: sk-…`) reaches the client
    as `Incorrect API key provided: [key fp 3a2580aa]` (SPEC §11: no key in an error)."""
    for secret in secrets:
        value = secret.reveal().encode()
        if value and value in data:
            data = data.replace(value, f"[key fp {secret.fp}]".encode())
    return data
